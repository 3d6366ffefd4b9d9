import NearbyBLE
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// `BlueZGAP`, the glue between NearbyBLE's `BlueZRadio` and NearbyBlueZ: AD structures rebuilt from BlueZ's
/// reports, the adapter's state as radio states, and the whole provider against `FakeBlueZ` on a private bus.
@Suite struct BlueZGAPTests {
    @Test func scanReportsBecomeAdvertisingDataNearbyDiscoveryReads() throws {
        let report = BlueZScanReport(
            address: "C0:00:00:00:00:AD", addressType: "random",
            serviceData: [BlueZ.uuid(0xFEF3): [0xCA, 0xFE], "12345678-1234-5678-9abc-def012345678": [7]], rssi: -40)
        let converted = try #require(BlueZRadioMapping.advertisingReport(report))
        #expect(converted.address == BLEAddress(string: "C0:00:00:00:00:AD/random"))
        #expect(converted.rssi == -40)
        #expect(AdvertisingData.serviceData(converted.data, uuid: 0xFEF3) == [0xCA, 0xFE])
        let structures = try AdvertisingData.structures(converted.data)
        #expect(structures.map(\.type) == [0x01, 0x16, 0x21])
        #expect(structures[2].value.first == 0x78 && structures[2].value.count == 17)
        let publicReport = BlueZScanReport(address: "F0:F1:F2:F3:F4:00", addressType: "public", serviceData: [:], rssi: nil)
        let converted2 = try #require(BlueZRadioMapping.advertisingReport(publicReport))
        #expect(converted2.address.kind == .public)
        #expect(converted2.rssi == 127)
        #expect(BlueZRadioMapping.advertisingReport(
            BlueZScanReport(address: "nonsense", addressType: "random", serviceData: [:], rssi: nil)) == nil)
    }

    @Test func adapterStatesMapToRadioStates() {
        let on = BlueZAdapterState(path: "/org/bluez/hci0", address: "F0:F1:F2:F3:F4:00", powered: true)
        var off = on
        off.powered = false
        #expect(isPowered(BlueZRadioMapping.radioState(adapter: on, daemonPresent: true, name: "hci0")))
        #expect(message(BlueZRadioMapping.radioState(adapter: off, daemonPresent: true, name: "hci0"))?.contains("powered off") == true)
        #expect(message(BlueZRadioMapping.radioState(adapter: nil, daemonPresent: true, name: "hci1"))?.contains("no adapter hci1") == true)
        #expect(message(BlueZRadioMapping.radioState(adapter: nil, daemonPresent: false, name: "hci0"))?.contains("bluetoothd") == true)
    }

    @Test func providerAdvertisesScansAndFollowsTheDaemon() async throws {
        try await withPrivateBus { bus in
            let first = try await FakeBlueZ(bus: bus)
            let gap = BlueZGAP(connect: { try await bus.connect() })
            let radio = BlueZRadio(adapter: "hci0", gap: gap)
            try await radio.open()
            #expect(try await radio.supportsExtendedAdvertising())
            let states = await StreamRecorder.start(AsyncThrowingStream { continuation in
                let task = Task {
                    for await state in radio.states() { continuation.yield(message(state) ?? "powered") }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
            })
            _ = try await states.waitFor("powered") { $0 == "powered" ? true : nil }

            let handle = try await radio.startAdvertising(
                BLEAdvertisement(serviceUUID: 0xFEF3, serviceData: [1, 2, 3], extended: false, psm: 0x80))
            let registered = try await eventually(within: 10, "the advertisement registered") {
                first.registrations.withLock { $0.first }
            }
            #expect(registered["ServiceData"]?.propertyMap?[BlueZ.uuid(0xFEF3)]?.bytes == [1, 2, 3])
            #expect(registered["SecondaryChannel"] == nil)

            let scan = await StreamRecorder.start(radio.scan(preset: .lowLatency))
            _ = try await eventually(within: 10, "discovery started") {
                first.adapterCalls.withLock { $0.map(\.0) }.contains("StartDiscovery") ? true : nil
            }
            try await first.addDevice("dev_C0_00_00_00_00_AD", properties: [
                "Address": .string("C0:00:00:00:00:AD"), "AddressType": .string("random"), "RSSI": .int16(-50),
                "ServiceData": .properties([BlueZ.uuid(0xFEF3): .bytes([0xCA, 0xFE])]),
            ])
            let report = try await scan.waitFor("a report") { $0 }
            #expect(AdvertisingData.serviceData(report.data, uuid: 0xFEF3) == [0xCA, 0xFE])
            #expect(report.rssi == -50)

            await first.connection.close()
            _ = try await states.waitFor("bluetoothd gone") { $0.contains("bluetoothd") ? true : nil }
            let second = try await FakeBlueZ(bus: bus)
            _ = try await eventually(within: 10, "powered again") {
                await states.events.filter { $0 == "powered" }.count == 2 ? true : nil
            }
            _ = try await eventually(within: 10, "discovery and advertising resumed") {
                let calls = second.adapterCalls.withLock { $0.map(\.0) }
                let registrations = second.registrations.withLock { $0.count }
                return calls.contains("StartDiscovery") && registrations == 1 ? true : nil
            }
            await handle.stop()
            await scan.stop()
            await states.stop()
            await radio.shutdown()
            await second.connection.close()
        }
    }
}

private func isPowered(_ state: BLERadioState) -> Bool {
    if case .powered = state { return true }
    return false
}

private func message(_ state: BLERadioState) -> String? {
    if case .unavailable(let error) = state { return error.message }
    return nil
}
