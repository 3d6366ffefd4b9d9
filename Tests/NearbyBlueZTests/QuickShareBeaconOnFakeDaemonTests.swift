import NearbyQuickShare
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// The Quick Share wake-up beacon (0xFE2C) through BlueZ, against `FakeBlueZ` on a private bus: what bluetoothd is
/// asked to advertise, and the line saying why the beacon is off when there is no bluetoothd.
@Suite(.timeLimit(.minutes(1)))
struct QuickShareBeaconOnFakeDaemonTests {
    @Test func theBeaconIsBroadcastServiceDataOfFE2C() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            var random = SeededGenerator(seed: 44)
            let beacon = QuickShareFastInitBeacon.sharing(type: .notify, using: &random)
            let (running, status) = await QuickShareWakeUpBeacon.start(beacon, connect: { try await bus.connect() })
            #expect(status == .on(adapter: "hci0"))
            let properties = try await eventually(within: 10, "the registration") { fake.registrations.withLock { $0.first } }
            #expect(properties["Type"]?.string == "broadcast")
            #expect(properties["ServiceUUIDs"] == nil, "no room for a UUID list in 31 bytes")
            let data = properties["ServiceData"]?.propertyMap?[BlueZ.uuid(0xFE2C)]?.bytes
            #expect(data == beacon.bytes)
            #expect(data?.count == 24 && data?.prefix(4) == [0xFC, 0x12, 0x8E, 0x00])
            await running?.stop()
            await fake.connection.close()
        }
    }

    @Test func withoutBluetoothdTheBeaconIsOffAndSaysWhy() async throws {
        try await withPrivateBus { bus in
            let (running, status) = await QuickShareWakeUpBeacon.start(
                .sharing(type: .silent), connect: { try await bus.connect() })
            #expect(running == nil)
            guard case .off(let reason) = status else {
                Issue.record("\(status)")
                return
            }
            #expect(reason.contains("bluetoothd"))
            #expect(status.description.hasPrefix("Bluetooth wake-up beacon off: "))
        }
    }
}
