import Logging
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBLE
@testable import NearbyConnections

/// One L2CAP channel end of ``FakeRadio``: SDUs go to the other end's inbox.
final class FakeSDUChannel: L2CAPSDUChannel {
    let peer: BLEAddress
    let peerMTU = 64
    var channelDescription: String { "fake \(peer)" }
    let inbox: AsyncStream<[UInt8]>
    private let inboxSink: AsyncStream<[UInt8]>.Continuation
    let other = LockedValue<FakeSDUChannel?>(nil)
    let inboxIterator: LockedValue<AsyncStream<[UInt8]>.Iterator>

    init(peer: BLEAddress) {
        self.peer = peer
        (inbox, inboxSink) = AsyncStream.makeStream(of: [UInt8].self)
        inboxIterator = LockedValue(inbox.makeAsyncIterator())
    }

    static func pair(_ a: BLEAddress, _ b: BLEAddress) -> (FakeSDUChannel, FakeSDUChannel) {
        let one = FakeSDUChannel(peer: b)
        let two = FakeSDUChannel(peer: a)
        one.other.withLock { $0 = two }
        two.other.withLock { $0 = one }
        return (one, two)
    }

    func send(_ sdu: [UInt8]) async throws {
        guard sdu.count <= peerMTU else { throw NearbyError(.invalidArgument, "SDU above the MTU") }
        other.withLock { $0 }?.inboxSink.yield(sdu)
    }

    func receive() async throws -> [UInt8]? {
        var iterator = inboxIterator.withLock { $0 }
        let next = await iterator.next()
        return next
    }

    func close() async {
        other.withLock { $0 }?.inboxSink.finish()
        inboxSink.finish()
    }
}

/// A ``BLERadio`` without Bluetooth: records advertisements, yields the scan reports a test feeds, and connects to
/// its own servers.
final class FakeRadio: BLERadio {
    let description = "fake radio"
    let address = BLEAddress(string: "C0:11:22:33:44:55")!
    let advertisements = LockedValue<[BLEAdvertisement]>([])
    let servers = LockedValue<[UInt16: @Sendable (any L2CAPSDUChannel) -> Void]>([:])
    let reports: AsyncThrowingStream<AdvertisingReport, any Error>
    let reportSink: AsyncThrowingStream<AdvertisingReport, any Error>.Continuation

    init() {
        (reports, reportSink) = AsyncThrowingStream.makeStream(of: AdvertisingReport.self, throwing: (any Error).self)
    }

    func open() async throws {}
    func supportsExtendedAdvertising() async throws -> Bool { true }

    func startAdvertising(_ advertisement: BLEAdvertisement) async throws -> BLERadioHandle {
        advertisements.withLock { $0.append(advertisement) }
        return BLERadioHandle { [advertisements] in advertisements.withLock { $0.removeAll() } }
    }

    func scan(preset: ScanPreset) -> AsyncThrowingStream<AdvertisingReport, any Error> { reports }

    func listen(psm: UInt16?, onChannel: @escaping @Sendable (any L2CAPSDUChannel) -> Void) async throws -> BLEL2CAPServer {
        let chosen = psm ?? 0x81
        servers.withLock { $0[chosen] = onChannel }
        return BLEL2CAPServer(psm: chosen) { [servers] in servers.withLock { $0[chosen] = nil } }
    }

    func connect(to address: BLEAddress, psm: UInt16) async throws -> any L2CAPSDUChannel {
        guard let server = servers.withLock({ $0[psm] }) else {
            throw NearbyError(.l2capChannelFailed, "nothing listens on \(psm)")
        }
        let (client, accepted) = FakeSDUChannel.pair(self.address, address)
        server(accepted)
        return client
    }

    func states() -> AsyncStream<BLERadioState> { AsyncStream { $0.yield(.powered); $0.finish() } }
    func shutdown() async {}
}

@Suite("BLE radio abstraction", .timeLimit(.minutes(5)))
struct BLERadioTests {
    @Test("BLEMedium advertises, discovers and connects through any BLERadio")
    func mediumOnAFakeRadio() async throws {
        let radio = FakeRadio()
        let medium = BLEMedium(radio: radio)
        let incoming = LockedValue<[any EndpointChannel]>([])
        let session = try await medium.startAdvertising(
            AdvertisingRequest(serviceID: "com.example.radio", endpointID: "ABCD", endpointInfo: [1, 2, 3], pcp: .p2pCluster)
        ) { channel in incoming.withLock { $0.append(channel) } }
        let advertisement = try #require(radio.advertisements.withLock { $0.first })
        #expect(advertisement.serviceUUID == 0xFEF3)
        #expect(!advertisement.extended)
        #expect(advertisement.psm == 0x80)

        let events = medium.discover(serviceID: "com.example.radio", pcp: .p2pCluster)
        radio.reportSink.yield(AdvertisingReport(
            eventType: 0, isExtended: false, address: BLEAddress(string: "C0:00:00:00:00:AB")!,
            data: advertisement.advertisingData, rssi: -40))
        var iterator = events.makeAsyncIterator()
        let event = try #require(try await iterator.next())
        let found: DiscoveredEndpoint? = if case .found(let endpoint) = event { endpoint } else { nil }
        let endpoint = try #require(found, "expected found, got \(event)")
        #expect(endpoint.endpointID == "ABCD")
        #expect(endpoint.endpointInfo == [1, 2, 3])

        // The fast form has no PSM, so a connection asks for GATT first, which the fake radio lacks; it falls back to
        // L2CAP on the PSM the fast form implies. With a PSM: L2CAP at once. Both carry Android's framing; the
        // server's handshake runs on its first read.
        for (index, psm) in [nil, UInt16(0x80)].enumerated() {
            async let connecting = medium.connect(to: .ble(address: "C0:00:00:00:00:AB", psm: psm))
            let server = try await eventually(within: 10, "incoming channel \(index)") {
                incoming.withLock { $0.count > index ? $0[index] : nil }
            }
            async let firstFrame = server.readFrame()
            let channel = try await connecting
            let body = Array(repeating: UInt8(7 + index), count: 200)
            try await channel.writeFrame(body)
            #expect(try await firstFrame == body)
            await channel.close()
        }
        await session.stop()
        #expect(radio.advertisements.withLock { $0.isEmpty })
        #expect(radio.servers.withLock { $0.isEmpty })
    }

    @Test("--hci parses bluez, bluez:hciN and the transports, and rejects other adapters")
    func radioSpecParsing() throws {
        #expect(try BLERadioSpec(parsing: "bluez") == .bluez(adapter: "hci0"))
        #expect(try BLERadioSpec(parsing: "bluez:hci2") == .bluez(adapter: "hci2"))
        #expect(try BLERadioSpec(parsing: "tcp:127.0.0.1:9") == .userSpace(.tcp(host: "127.0.0.1", port: 9)))
        #expect(try BluetoothController("bluez:hci1").description == "bluez:hci1")
        #expect(try BluetoothController("bluez:hci1").transport == nil)
        let error = try #require(throws: NearbyError.self) { try BLERadioSpec(parsing: "bluez:wlan0") }
        #expect(error.code == .invalidArgument)
        #expect(try #require(throws: NearbyError.self) { try BLERadioSpec(parsing: "bogus") }.message.contains("bluez"))
    }

    @Test("BlueZ without bluetoothd (the test network's private system bus): advertising and scanning fail with a clear bluetoothUnavailable error")
    func bluezWithoutDaemon() async throws {
        let medium = try MediumFactory(bluetoothController: BluetoothController("bluez"), logger: Logger(label: "test"))
            .driver(for: .ble)
        let error = await #expect(throws: NearbyError.self) {
            _ = try await medium.startAdvertising(
                AdvertisingRequest(serviceID: "s", endpointID: "ABCD", endpointInfo: [1], pcp: .p2pCluster)) { _ in }
        }
        #expect(error?.code == .bluetoothUnavailable)
        #expect(error?.message.contains("BlueZ") == true)
        var events = medium.discover(serviceID: "s", pcp: .p2pCluster).makeAsyncIterator()
        let scanError = await #expect(throws: NearbyError.self) { _ = try await events.next() }
        #expect(scanError?.code == .bluetoothUnavailable)
        #expect(scanError?.message.contains("BlueZ") == true)
        // Without the D-Bus layer (BlueZRadio alone), the error says so.
        let bare = BLEMedium(radio: BlueZRadio(adapter: "hci0"), logger: Logger(label: "test"))
        let bareError = await #expect(throws: NearbyError.self) {
            _ = try await bare.startAdvertising(
                AdvertisingRequest(serviceID: "s", endpointID: "ABCD", endpointInfo: [1], pcp: .p2pCluster)) { _ in }
        }
        #expect(bareError?.message.contains("BlueZ advertising needs") == true)
    }

    @Test("sockaddr_l2 carries the PSM little-endian, the address in HCI order and the LE address type")
    func socketAddressLayout() throws {
        let peer = try #require(BLEAddress(string: "F0:F1:F2:F3:F4:00/public"))
        let bytes = KernelL2CAPSocket.socketAddress(peer, psm: 0x0181)
        #expect(bytes == [31, 0, 0x81, 0x01, 0x00, 0xF4, 0xF3, 0xF2, 0xF1, 0xF0, 0, 0, 0x01, 0])
        let random = try #require(BLEAddress(string: "C0:00:00:00:00:EC"))
        #expect(KernelL2CAPSocket.socketAddress(random, psm: 0x80)[12] == 0x02)
        let decoded = KernelL2CAPSocket.decode(bytes)
        #expect(decoded.address == peer)
        #expect(decoded.psm == 0x0181)
    }

    @Test(
        "without kernel Bluetooth, kernel L2CAP sockets fail with mediumUnavailable naming the cause",
        .enabled(if: !KernelBluetoothProbe.available))
    func kernelWithoutBluetooth() async throws {
        let error = await #expect(throws: NearbyError.self) {
            _ = try await KernelL2CAP.connect(to: BLEAddress(string: "C0:00:00:00:00:01")!, psm: 0x80)
        }
        #expect(error?.code == .mediumUnavailable)
        #expect(error?.message.contains("no Bluetooth L2CAP sockets") == true)
    }
}

enum KernelBluetoothProbe {
    /// Whether this kernel opens `AF_BLUETOOTH` L2CAP sockets.
    static let available: Bool = {
        guard let fd = try? KernelL2CAPSocket.open(security: .low) else { return false }
        _ = KernelDescriptor(fd: fd)
        return true
    }()
}
