import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

/// The app-facing medium choice (`ConnectionOptions.mediums`, `BluetoothController`), the one factory that turns it
/// into drivers, and the ordered fire-and-forget stops.
@Suite("Medium choice and ordered stops", .timeLimit(.minutes(5)))
struct MediumChoiceTests {
    private func quietOptions() -> ConnectionOptions {
        var options = ConnectionOptions(receiveDirectory: FileManager.default.temporaryDirectory)
        options.logger.logLevel = .critical
        return options
    }

    @Test("BLE without a Bluetooth controller: advertising and discovery on BLE fail with bluetoothUnavailable")
    func bleWithoutController() async throws {
        var options = quietOptions()
        options.mediums = [.ble]
        let manager = ConnectionManager(serviceID: "choice", strategy: .pointToPoint, options: options)
        let advertising = await #expect(throws: NearbyError.self) {
            try await Advertiser(connectionManager: manager).startAdvertising(using: Data("a".utf8))
        }
        #expect(advertising?.code == .bluetoothUnavailable)
        let discovery = await #expect(throws: NearbyError.self) {
            try await Discoverer(connectionManager: manager).startDiscovery(mediums: [.ble])
        }
        #expect(discovery?.code == .bluetoothUnavailable)
        #expect(discovery?.message.contains("HCI transport") == true)
        await manager.shutdown()
    }

    @Test("a controller spec that does not parse is refused when it is made, naming the forms")
    func badControllerSpec() throws {
        let error = #expect(throws: NearbyError.self) { try BluetoothController("bluetooth0") }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("tcp:HOST:PORT") == true)
        #expect(try BluetoothController("tcp:127.0.0.1:1234").description == "tcp:127.0.0.1:1234")
    }

    @Test("the factory makes one driver per implemented medium, in order, and reports BLE without a controller")
    func factoryDrivers() throws {
        let factory = MediumFactory(bluetoothController: nil, logger: Logger(label: "test"))
        let (drivers, problems) = factory.drivers(for: [.awdl, .wifiLAN, .ble, .wifiLAN, .webRTC])
        #expect(drivers.map(\.kind) == [.wifiLAN])
        #expect(problems[.ble]?.code == .bluetoothUnavailable)
        let withController = MediumFactory(
            bluetoothController: try BluetoothController("tcp:127.0.0.1:1"), logger: Logger(label: "test"))
        #expect(withController.drivers(for: [.ble, .wifiLAN]).drivers.map(\.kind) == [.ble, .wifiLAN])
    }

    @Test("the command-line selection: named mediums, else Wi-Fi LAN plus BLE when a controller is given")
    func selection() {
        #expect(MediumFactory.selection(named: [], hasBluetoothController: false) == [.wifiLAN])
        #expect(MediumFactory.selection(named: [], hasBluetoothController: true) == [.wifiLAN, .ble])
        #expect(MediumFactory.selection(named: [.ble], hasBluetoothController: true) == [.ble])
        #expect(MediumFactory.selection(named: [.ble, .wifiLAN], hasBluetoothController: true) == [.wifiLAN, .ble])
    }

    @Test("stopAdvertising() returns at once and is done before a later startAdvertising begins")
    func stopThenStartAdvertising() async throws {
        let air = InMemoryMedium.Air()
        var options = quietOptions()
        options.useInMemoryMediums([InMemoryMedium(air: air)])
        let manager = ConnectionManager(serviceID: "ordered", strategy: .pointToPoint, options: options)
        let advertiser = Advertiser(connectionManager: manager)
        let stopped = LockedValue(0)
        for round in 0..<20 {
            try await advertiser.startAdvertising(using: Data("round \(round)".utf8))
            advertiser.stopAdvertising { _ in stopped.withLock { $0 += 1 } }
        }
        try await advertiser.startAdvertising(using: Data("last".utf8))
        #expect(stopped.withLock { $0 } == 20)
        #expect(air.advertisementCount == 1)
        await manager.shutdown()
    }

    @Test("stopAdvertising() while a startAdvertising is still under way stops that advertisement")
    func stopDuringStart() async throws {
        let air = InMemoryMedium.Air()
        let medium = HeldAdvertisingMedium(InMemoryMedium(air: air))
        var options = ConnectionOptions(drivers: [medium], receiveDirectory: FileManager.default.temporaryDirectory)
        options.logger.logLevel = .critical
        let manager = ConnectionManager(serviceID: "ordered", strategy: .pointToPoint, options: options)
        let advertiser = Advertiser(connectionManager: manager)
        let (stopped, stoppedContinuation) = AsyncStream<Void>.makeStream()
        advertiser.startAdvertising(using: Data("held".utf8), completionHandler: { _ in })
        try await withTestTimeout(30, "the medium's startAdvertising") {
            for await _ in medium.entered { return }
        }
        advertiser.stopAdvertising { _ in stoppedContinuation.yield() }
        medium.release()
        try await withTestTimeout(30, "the stop's completion") {
            for await _ in stopped { return }
        }
        #expect(air.advertisementCount == 0)
        await manager.shutdown()
    }

    @Test("stopDiscovery() returns at once and is done before a later startDiscovery begins")
    func stopThenStartDiscovery() async throws {
        var options = quietOptions()
        options.useInMemoryMediums([InMemoryMedium(air: InMemoryMedium.Air())])
        let manager = ConnectionManager(serviceID: "ordered", strategy: .pointToPoint, options: options)
        let discoverer = Discoverer(connectionManager: manager)
        for _ in 0..<20 {
            try await discoverer.startDiscovery()
            discoverer.stopDiscovery()
        }
        try await discoverer.startDiscovery()
        await manager.shutdown()
    }
}

/// An in-memory medium whose advertising start waits, once inside the medium, until the test releases it.
final class HeldAdvertisingMedium: MediumDriver {
    let inner: InMemoryMedium
    /// Yields when a start has entered the medium.
    let entered: AsyncStream<Void>
    private let enteredContinuation: AsyncStream<Void>.Continuation
    private let gate: AsyncStream<Void>
    private let gateContinuation: AsyncStream<Void>.Continuation

    init(_ inner: InMemoryMedium) {
        self.inner = inner
        (entered, enteredContinuation) = AsyncStream<Void>.makeStream()
        (gate, gateContinuation) = AsyncStream<Void>.makeStream()
    }

    var kind: MediumKind { inner.kind }

    /// Lets the held start go on.
    func release() { gateContinuation.yield() }

    func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        enteredContinuation.yield()
        for await _ in gate { break }
        return try await inner.startAdvertising(request, onIncoming: onIncoming)
    }

    func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        inner.discover(serviceID: serviceID, pcp: pcp)
    }

    func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        try await inner.connect(to: route)
    }
}
