import ArgumentParser
import Foundation
import Logging
import NearbyBLE
import NearbyCore
import NearbyWire

/// `nearby-bench ble-sockets`: one-way throughput of the two Android BLE data paths, each next to the same bytes
/// over a bare L2CAP channel in the same run, between two of our hosts on two linked controllers:
///
/// * **bare L2CAP**: `--bytes` in 1024-byte SDUs over an L2CAP LE credit-based channel (no framing at all);
/// * **framed L2CAP**: the same bytes as Nearby frames of 1024 bytes through the BLE socket layer with Android's
///   L2CAP framing and acknowledgements (``BLESocketChannel`` over ``L2CAPMessageLink``);
/// * **Weave**: the same frames through the socket layer over the Weave GATT socket (writes with response of at
///   most the ATT MTU − 3 bytes).
///
/// Prints each rate and the ratios framed/bare and Weave/bare. `Benchmarks/ble-sockets.sh` starts the controllers.
struct BLESocketPathsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ble-sockets", abstract: "Throughput over Weave and framed L2CAP, each against bare L2CAP.")

    @Option(help: "A controller (give two): tcp:HOST:PORT, uart:/dev/ttyX[@BAUD] or hci:N.")
    var hci: [String]

    @Option(help: "Bytes per measurement.")
    var bytes = 300_000

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard hci.count == 2 else { throw ValidationError("give --hci twice") }
    }

    func run() async throws {
        var logger = Logger(label: "bench") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let serverRadio = UserSpaceHostRadio(transport: try HCITransportSpec(parsing: hci[0]), logger: logger)
        let clientRadio = UserSpaceHostRadio(transport: try HCITransportSpec(parsing: hci[1]), logger: logger)
        let serverHost = try await serverRadio.host()
        let serviceID = "com.example.bench"
        let hashes: Set<[UInt8]> = [BleSocketPacket.serviceIDHash(serviceID)]
        let chunk = (0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let total = bytes

        // The server side: a bare-channel counter, socket servers for both paths.
        let (incoming, incomingContinuation) = AsyncStream.makeStream(of: (any L2CAPSDUChannel).self)
        let (sockets, socketContinuation) = AsyncStream.makeStream(of: BLESocketChannel.self)
        let bare = try await serverRadio.listen(psm: nil) { incomingContinuation.yield($0) }
        let framed = try await serverRadio.listen(psm: nil) { channel in
            socketContinuation.yield(BLESocketChannel.server(link: L2CAPMessageLink(channel: channel), serviceIDHashes: hashes))
        }
        let gatt = try await serverRadio.publishGATT(WeaveGATTService.services())
        let weaveService = WeaveGATTService(server: gatt, serviceIDHashes: hashes, logger: logger) { socketContinuation.yield($0) }
        // Owner: this command; it ends when the GATT server stops (below) and is awaited.
        let serving = Task { await weaveService.run() }
        try await serverHost.startAdvertising(
            data: AdvertisingData.build(serviceUUID: 0xFFF0, serviceData: [1]), extended: false, intervalMillis: 20)
        let serverAddress = serverHost.address
        var incomingIterator = incoming.makeAsyncIterator()
        var socketIterator = sockets.makeAsyncIterator()

        // 1. Bare L2CAP.
        let bareClient = try await clientRadio.connect(to: serverAddress, psm: bare.psm)
        let bareServer = try await incomingIterator.next()!
        let bareSeconds = try await Self.measure(total: total) {
            var sent = 0
            while sent < total {
                try await bareClient.send(chunk)
                sent += chunk.count
            }
        } receive: {
            var received = 0
            while received < total, let sdu = try await bareServer.receive() { received += sdu.count }
        }
        await bareClient.close()

        // 2. Framed L2CAP with the socket layer. The server's handshake runs on its first read, so it reads a
        // warm-up frame while the client connects.
        let framedPSM = framed.psm
        async let framedConnect = BLESocketChannel.connect(
            link: L2CAPMessageLink(channel: try await clientRadio.connect(to: serverAddress, psm: framedPSM)),
            serviceID: serviceID)
        let framedServer = try await socketIterator.next()!
        async let framedWarm = framedServer.readFrame()
        let framedClient = try await framedConnect
        try await framedClient.writeFrame([0])
        _ = try await framedWarm
        let framedSeconds = try await Self.measureFrames(total: total, chunk: chunk, from: framedClient, to: framedServer)
        await framedClient.close()

        // 3. Weave.
        async let weaveConnect = BLESocketChannel.connect(
            link: try await WeaveClientLink.connect(try await clientRadio.connectGATT(to: serverAddress)), serviceID: serviceID)
        let weaveServer = try await socketIterator.next()!
        async let weaveWarm = weaveServer.readFrame()
        let weaveClient = try await weaveConnect
        try await weaveClient.writeFrame([0])
        _ = try await weaveWarm
        let weaveSeconds = try await Self.measureFrames(total: total, chunk: chunk, from: weaveClient, to: weaveServer)
        await weaveClient.close()

        await weaveService.stop()
        await serving.value
        await bare.stop()
        await framed.stop()
        await clientRadio.shutdown()
        await serverRadio.shutdown()

        let bareRate = Double(total) / bareSeconds
        let framedRate = Double(total) / framedSeconds
        let weaveRate = Double(total) / weaveSeconds
        if json {
            print(
                "{\"benchmark\":\"ble_socket_paths\",\"bytes\":\(total),\"bare_l2cap_bytes_per_second\":\(Int(bareRate)),"
                    + "\"framed_l2cap_bytes_per_second\":\(Int(framedRate)),\"weave_bytes_per_second\":\(Int(weaveRate)),"
                    + "\"framed_to_bare\":\(String(format: "%.3f", framedRate / bareRate)),"
                    + "\"weave_to_bare\":\(String(format: "%.3f", weaveRate / bareRate))}")
        } else {
            print("bare L2CAP:   \(Int(bareRate)) B/s")
            print("framed L2CAP: \(Int(framedRate)) B/s (\(String(format: "%.3f", framedRate / bareRate)) of bare)")
            print("Weave:        \(Int(weaveRate)) B/s (\(String(format: "%.3f", weaveRate / bareRate)) of bare)")
        }
    }

    private static func measureFrames(
        total: Int, chunk: [UInt8], from client: BLESocketChannel, to server: BLESocketChannel
    ) async throws -> Double {
        // The client reads as well, as an engine always does. The server acknowledges every data packet (on L2CAP),
        // and acknowledgements that nobody reads use up the client's credits until the server can no longer send
        // and stops reading: without this reader, a run of 300,000 bytes stalled for good.
        // Owner: this function; `close()` below ends its read, and it is awaited.
        let drain = Task { while (try? await client.readFrame()) != nil {} }
        let seconds = try await measure(total: total) {
            var sent = 0
            while sent < total {
                try await client.writeFrame(chunk)
                sent += chunk.count
            }
        } receive: {
            var received = 0
            while received < total, let frame = try await server.readFrame() { received += frame.count }
        }
        await client.close()
        await drain.value
        return seconds
    }

    /// Seconds from the first send until the receiver has everything.
    private static func measure(
        total: Int, send: @escaping @Sendable () async throws -> Void, receive: @escaping @Sendable () async throws -> Void
    ) async throws -> Double {
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask(operation: send)
            group.addTask(operation: receive)
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
