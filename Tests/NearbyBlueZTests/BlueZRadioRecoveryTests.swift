import NearbyBLE
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// The BlueZ radio's state reaching apps: a BLE medium on `BlueZRadio` over `FakeBlueZ` on a private bus, watched by
/// a Connections manager's `bluetoothStatusHandler`. Powered off is a power problem and powered on clears it;
/// `bluetoothd` gone is "unavailable" and its return clears it, with discovery and the advertisement registered
/// again; a registration refused with `org.bluez.Error.Blocked` (rfkill) reads as a power problem.
@Suite(.timeLimit(.minutes(5))) struct BlueZRadioRecoveryTests {
    @Test func powerAndDaemonOutagesAreReportedAndCleared() async throws {
        try await withPrivateBus { bus in
            let first = try await FakeBlueZ(bus: bus)
            let radio = BlueZRadio(adapter: "hci0", gap: BlueZGAP(connect: { try await bus.connect() }))
            let medium = BLEMedium(radio: radio)
            let manager = ConnectionManager(
                serviceID: "svc", strategy: .pointToPoint, options: ConnectionOptions(drivers: [medium]))
            let statuses = LockedValue<[BluetoothStatus]>([])
            manager.bluetoothStatusHandler = { status in statuses.withLock { $0.append(status) } }
            func waitForStatuses(_ count: Int, _ what: String) async throws -> [BluetoothStatus] {
                try await eventually(within: 10, what) { statuses.withLock { $0.count >= count ? $0 : nil } }
            }

            // Discovery goes through the medium (which starts following the radio); advertising through the radio
            // (the medium's own advertising also needs the kernel's L2CAP sockets, which this kernel lacks).
            let discovery = Task { for try await _ in medium.discover(serviceID: "svc", pcp: .p2pPointToPoint) {} }
            defer { discovery.cancel() }
            _ = try await eventually(within: 10, "discovery started") {
                first.adapterCalls.withLock { $0.map(\.0) }.contains("StartDiscovery") ? true : nil
            }
            let handle = try await radio.startAdvertising(
                BLEAdvertisement(serviceUUID: 0xFEF3, serviceData: [1, 2, 3], extended: false, psm: 0x80))

            try await first.setPowered(false)
            #expect(try await waitForStatuses(1, "powered off reported")
                == [BluetoothStatus(hasError: true, problem: .poweredOff)])
            try await first.setPowered(true)
            #expect(try await waitForStatuses(2, "power back reported").last == BluetoothStatus(hasError: false))

            await first.connection.close()
            let gone = try await waitForStatuses(3, "bluetoothd gone reported")[2]
            #expect(gone == BluetoothStatus(hasError: true, problem: .unavailable))
            #expect(gone.error?.message.contains("bluetoothd") == true)
            let second = try await FakeBlueZ(bus: bus)
            #expect(try await waitForStatuses(4, "bluetoothd back reported").last == BluetoothStatus(hasError: false))
            _ = try await eventually(within: 10, "discovery and advertising resumed on the new bluetoothd") {
                let calls = second.adapterCalls.withLock { $0.map(\.0) }
                let registrations = second.registrations.withLock { $0.count }
                return calls.contains("StartDiscovery") && registrations >= 1 ? true : nil
            }
            #expect(statuses.withLock { $0.count } == 4)

            // rfkill: bluetoothd refuses with org.bluez.Error.Blocked.
            second.registrationError.withLock {
                $0 = DBusRemoteError(name: "org.bluez.Error.Blocked", message: "Operation not possible due to RF-kill")
            }
            await handle.stop()
            let refusal = await #expect(throws: NearbyError.self) {
                _ = try await radio.startAdvertising(
                    BLEAdvertisement(serviceUUID: 0xFEF3, serviceData: [4, 5, 6], extended: false, psm: 0x80))
            }
            #expect(refusal.map { BLERadioProblem(classifying: $0) } == .poweredOff)

            discovery.cancel()
            await medium.shutdown()
            await second.connection.close()
        }
    }

    /// A released radio (its advertising stopped, its scan ended) lets go of its bus connection: nothing it
    /// started keeps the `DBusClient`, its queue and its signal matches alive.
    @Test func aReleasedRadioLetsGoOfItsBusConnection() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            let opened = LockedValue<[WeakDBusClient]>([])
            var radio: BlueZRadio? = BlueZRadio(adapter: "hci0", gap: BlueZGAP(connect: {
                let client = try await bus.connect()
                opened.withLock { $0.append(WeakDBusClient(client)) }
                return client
            }))
            do {
                let handle = try await radio!.startAdvertising(
                    BLEAdvertisement(serviceUUID: 0xFEF3, serviceData: [1, 2, 3], extended: false, psm: 0x80))
                let reports = radio!.scan(preset: .lowLatency)
                let scanning = Task { for try await _ in reports {} }
                _ = try await eventually(within: 10, "advertising and discovery started") {
                    let discovering = fake.adapterCalls.withLock { $0.map(\.0) }.contains("StartDiscovery")
                    return discovering && fake.registrations.withLock { $0.count } >= 1 ? true : nil
                }
                #expect(opened.withLock { $0.count } == 1)
                await handle.stop()
                scanning.cancel()
                _ = await scanning.result
            }
            radio = nil
            _ = try await eventually(within: 10, "the released radio's bus connection gone") {
                opened.withLock { $0.allSatisfy { $0.value == nil } } ? true : nil
            }
            await fake.connection.close()
        }
    }

    /// The same one level up: a released BLE medium on a BlueZ radio, whose discovery ended, lets go of the bus.
    @Test func aReleasedMediumLetsGoOfItsBusConnection() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            let opened = LockedValue<[WeakDBusClient]>([])
            var medium: BLEMedium? = BLEMedium(radio: BlueZRadio(adapter: "hci0", gap: BlueZGAP(connect: {
                let client = try await bus.connect()
                opened.withLock { $0.append(WeakDBusClient(client)) }
                return client
            })))
            do {
                let found = medium!.discover(serviceID: "svc", pcp: .p2pPointToPoint)
                let discovery = Task { for try await _ in found {} }
                _ = try await eventually(within: 10, "discovery started") {
                    fake.adapterCalls.withLock { $0.map(\.0) }.contains("StartDiscovery") ? true : nil
                }
                discovery.cancel()
                _ = await discovery.result
            }
            #expect(opened.withLock { $0.count } >= 1)
            medium = nil
            _ = try await eventually(within: 10, "the released medium's bus connection gone") {
                opened.withLock { $0.allSatisfy { $0.value == nil } } ? true : nil
            }
            await fake.connection.close()
        }
    }
}

/// A bus connection that the test does not keep alive.
private final class WeakDBusClient: Sendable {
    weak let value: DBusClient?
    init(_ value: DBusClient) { self.value = value }
}
