// nearby-l2cap-probe: L2CAP LE credit-based channels through a BLERadio, for the BlueZ VM rig
// (scripts/test-bluez-vm.sh) and by hand. Usage:
//
//   nearby-l2cap-probe serve RADIO [PSM|dynamic] [COUNT]
//       Listens (a dynamic PSM by default), prints "READY ADDRESS PSM", echoes every SDU of each accepted channel
//       back until the peer closes it, and exits 0 after COUNT channels (default 1).
//   nearby-l2cap-probe send RADIO ADDRESS[/public] PSM BYTES SDU
//       Connects, sends BYTES bytes in SDUs of at most SDU bytes while reading the echo, checks that the echo is the
//       same byte stream, prints "ok ..." and exits 0 (1 on a mismatch or failure).
//
// RADIO is a --hci string: tcp:HOST:PORT, uart:..., hci:N for the user-space host, or bluez[:hciN] for the
// kernel's L2CAP sockets (the address printed is then "-").
import Logging
import NearbyBLE
import NearbyCore
import NearbyWire

#if canImport(Glibc)
import Glibc
#endif

@main
struct L2CAPProbe {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        var logger = Logger(label: "nearby-l2cap-probe") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = Glibc.getenv("NEARBY_PROBE_DEBUG") != nil ? .debug : .warning
        do {
            guard arguments.count >= 2 else { throw usage() }
            let radio = try BLERadioSpec(parsing: arguments[1]).makeRadio(logger: logger)
            switch arguments[0] {
            case "serve":
                let psm = arguments.count > 2 && arguments[2] != "dynamic" ? try number(arguments[2]) : nil
                let count = arguments.count > 3 ? try number(arguments[3]) : 1
                try await serve(radio, psm: psm.map(UInt16.init), count: count)
            case "send":
                guard arguments.count == 6, let address = BLEAddress(string: arguments[2]) else { throw usage() }
                try await send(
                    radio, to: address, psm: UInt16(try number(arguments[3])), bytes: try number(arguments[4]),
                    sdu: try number(arguments[5]))
            default:
                throw usage()
            }
            await radio.shutdown()
            exit(0)
        } catch {
            say("FAIL \(error)")
            exit(1)
        }
    }

    /// Writes one line to stdout at once (the rig's scripts wait for these lines).
    static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
    }

    static func usage() -> NearbyError {
        NearbyError(.invalidArgument, "usage: nearby-l2cap-probe serve RADIO [PSM|dynamic] [COUNT] | send RADIO ADDRESS PSM BYTES SDU")
    }

    static func number(_ text: String) throws -> Int {
        let value = text.hasPrefix("0x") ? Int(text.dropFirst(2), radix: 16) : Int(text)
        guard let value, value >= 0 else { throw NearbyError(.invalidArgument, "not a number: \(text)") }
        return value
    }

    static func serve(_ radio: any BLERadio, psm: UInt16?, count: Int) async throws {
        let (channels, sink) = AsyncStream.makeStream(of: (any L2CAPSDUChannel).self)
        let server = try await radio.listen(psm: psm) { sink.yield($0) }
        let address = (try? await (radio as? UserSpaceHostRadio)?.host().address.description) ?? "-"
        // Connectable advertising (a test UUID, not Nearby's 0xFEF3), so that a central can connect; BlueZ without
        // its D-Bus layer cannot advertise here (the rig's guest turns advertising on with btmgmt instead).
        let advertising = try? await radio.startAdvertising(BLEAdvertisement(
            serviceUUID: 0xFFF0, serviceData: Array("l2cap-probe".utf8), extended: false, psm: server.psm))
        say("READY \(address) \(server.psm)")
        var served = 0
        for await channel in channels {
            var echoed = 0
            var sdus = 0
            while let sdu = try await channel.receive() {
                try await channel.send(sdu)
                echoed += sdu.count
                sdus += 1
            }
            await channel.close()
            served += 1
            say("served \(channel.channelDescription): echoed \(echoed) bytes in \(sdus) SDUs")
            if served >= count { break }
        }
        await advertising?.stop()
        await server.stop()
    }

    static func send(_ radio: any BLERadio, to address: BLEAddress, psm: UInt16, bytes: Int, sdu: Int) async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let channel = try await radio.connect(to: address, psm: psm)
        let connected = clock.now - started
        let size = max(1, min(sdu, channel.peerMTU))
        let payload = (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let reader = Task { () throws -> [UInt8] in
            var received: [UInt8] = []
            while received.count < bytes, let piece = try await channel.receive() {
                received += piece
            }
            return received
        }
        var offset = 0
        while offset < bytes {
            let end = min(bytes, offset + size)
            try await channel.send(Array(payload[offset..<end]))
            offset = end
        }
        let echo = try await reader.value
        let elapsed = clock.now - started - connected
        await channel.close()
        guard echo == payload else {
            throw NearbyError(.invalidFraming, "the echo differs: \(echo.count) of \(bytes) bytes came back")
        }
        say("ok \(bytes) bytes in SDUs of \(size) (peer MTU \(channel.peerMTU)) echoed by \(address) psm \(psm); connect \(connected), echo \(elapsed)")
    }
}
