import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// BlueZAdapter, BlueZAdvertiser and BlueZScanner against `FakeBlueZ` on a private bus: the D-Bus conversation
/// bluetoothd has, including bluetoothd going away and coming back.
@Suite(.timeLimit(.minutes(5))) struct BlueZOnFakeDaemonTests {
    @Test func advertisementIsRegisteredAndRegisteredAgainAfterTheDaemonRestarts() async throws {
        try await withPrivateBus { bus in
            let first = try await FakeBlueZ(bus: bus)
            let client = try await bus.connect()
            let adapter = try await BlueZAdapter.find(on: client, name: "hci0")
            #expect(await adapter.state == BlueZAdapterState(path: "/org/bluez/hci0", address: "F0:F1:F2:F3:F4:00", powered: true))
            let advertiser = BlueZAdvertiser(adapter: adapter)
            #expect(try await advertiser.capabilities().supportsExtendedAdvertising)
            let events = await record(advertiser.events)
            try await advertiser.start(.nearby([1, 2, 3], extended: true))
            _ = try await events.waitFor("registered") { $0 == .registered(adapterPath: "/org/bluez/hci0", count: 1) ? true : nil }
            let properties = try #require(first.registrations.withLock { $0.first })
            #expect(properties["Type"]?.string == "peripheral")
            #expect(properties["SecondaryChannel"]?.string == "1M")
            #expect(properties["ServiceData"]?.propertyMap?[BlueZ.uuid(0xFEF3)]?.bytes == [1, 2, 3])

            await first.connection.close()
            _ = try await events.waitFor("unregistered") { $0 == .unregistered(reason: "bluetoothd went away") ? true : nil }
            try await advertiser.update(.nearby([4, 5, 6]))

            let second = try await FakeBlueZ(bus: bus)
            _ = try await events.waitFor("registered again") { $0 == .registered(adapterPath: "/org/bluez/hci0", count: 2) ? true : nil }
            #expect(await events.events.count == 3)
            #expect(second.registrations.withLock { $0.first?["ServiceData"]?.propertyMap?[BlueZ.uuid(0xFEF3)]?.bytes } == [4, 5, 6])
            await events.stop()
            await advertiser.stop()
            await adapter.stop()
            await second.connection.close()
            await client.close()
        }
    }

    @Test func advertisementIsRegisteredAgainAfterThePowerCycleOfRfkill() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            let client = try await bus.connect()
            let adapter = try await BlueZAdapter.find(on: client, name: "hci0")
            let advertiser = BlueZAdvertiser(adapter: adapter)
            let events = await record(advertiser.events)
            try await advertiser.start(.nearby([1, 2, 3], extended: false))
            _ = try await events.waitFor("registered") { $0 == .registered(adapterPath: "/org/bluez/hci0", count: 1) ? true : nil }
            // rfkill block: bluetoothd powers the adapter off and drops the instance without calling Release.
            try await fake.connection.emitPropertiesChanged(
                path: FakeBlueZ.adapterPath, interface: BlueZ.adapterInterface, changed: ["Powered": .boolean(false)])
            _ = try await events.waitFor("unregistered") { $0 == .unregistered(reason: "adapter powered off") ? true : nil }
            try await fake.connection.emitPropertiesChanged(
                path: FakeBlueZ.adapterPath, interface: BlueZ.adapterInterface, changed: ["Powered": .boolean(true)])
            _ = try await events.waitFor("registered again") { $0 == .registered(adapterPath: "/org/bluez/hci0", count: 2) ? true : nil }
            #expect(fake.registrations.withLock { $0.count } == 2)
            await events.stop()
            await advertiser.stop()
            await adapter.stop()
            await fake.connection.close()
            await client.close()
        }
    }

    @Test func findFailsWithoutTheDaemon() async throws {
        try await withPrivateBus { bus in
            let client = try await bus.connect()
            let error = try await #require(throws: NearbyError.self) { try await BlueZAdapter.find(on: client) }
            #expect(error.code == .mediumUnavailable)
            #expect(await BlueZ.isReachable(on: client) == false)
            await client.close()
        }
    }

    @Test func scannerSetsTheFilterAndReportsServiceDataAndRSSI() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            let client = try await bus.connect()
            let adapter = try await BlueZAdapter.find(on: client)
            let scanner = BlueZScanner(adapter: adapter)
            let reports = try await scanner.start(serviceDataUUIDs: [BlueZ.uuid(0xFEF3)])
            let calls = fake.adapterCalls.withLock { $0.map(\.0) }
            #expect(calls == ["SetDiscoveryFilter", "StartDiscovery"])
            let filter = fake.adapterCalls.withLock { $0.first?.1.first?.propertyMap }
            #expect(filter?["Transport"]?.string == "le")
            #expect(filter?["DuplicateData"]?.bool == true)

            try await fake.addDevice("dev_C0_00_00_00_00_01", properties: [
                "Address": .string("C0:00:00:00:00:01"), "AddressType": .string("random"), "RSSI": .int16(-70),
            ])
            try await fake.addDevice("dev_C0_00_00_00_00_AD", properties: [
                "Address": .string("C0:00:00:00:00:AD"), "AddressType": .string("random"), "RSSI": .int16(-50),
                "ServiceData": .properties([BlueZ.uuid(0xFEF3): .bytes([0xCA, 0xFE])]),
            ])
            try await fake.changeDevice("dev_C0_00_00_00_00_AD", [
                "RSSI": .int16(-40), "ServiceData": .properties([BlueZ.uuid(0xFEF3): .bytes([0xCA, 0xFF])]),
            ])
            let seen = try await withTestTimeout(10, "two reports") {
                var seen: [BlueZScanReport] = []
                for await report in reports {
                    seen.append(report)
                    if seen.count == 2 { break }
                }
                return seen
            }
            #expect(seen == [
                BlueZScanReport(address: "C0:00:00:00:00:AD", addressType: "random",
                                serviceData: [BlueZ.uuid(0xFEF3): [0xCA, 0xFE]], rssi: -50),
                BlueZScanReport(address: "C0:00:00:00:00:AD", addressType: "random",
                                serviceData: [BlueZ.uuid(0xFEF3): [0xCA, 0xFF]], rssi: -40),
            ])
            await scanner.stop()
            #expect(fake.adapterCalls.withLock { $0.last?.0 } == "StopDiscovery")
            await adapter.stop()
            await fake.connection.close()
            await client.close()
        }
    }
}

/// Records a non-throwing stream.
func record<T: Sendable>(_ stream: AsyncStream<T>) async -> StreamRecorder<T> {
    await StreamRecorder.start(AsyncThrowingStream { continuation in
        let task = Task {
            for await element in stream { continuation.yield(element) }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
    })
}
