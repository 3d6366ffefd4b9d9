import NearbyBLE
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// `BlueZGAP`, the glue between NearbyBLE's `BlueZRadio` and NearbyBlueZ: AD structures rebuilt from BlueZ's
/// reports, the adapter's state as radio states, and the whole provider against `FakeBlueZ` on a private bus.
@Suite(.timeLimit(.minutes(5))) struct BlueZGAPTests {
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

    @Test func manufacturerDataBecomesManufacturerSpecificADStructures() throws {
        // An iBeacon as BlueZ reports it: ManufacturerData {0x004C: 02 15 <uuid> <major> <minor> <power>}.
        let iBeacon: [UInt8] = [0x02, 0x15] + Array(repeating: 0xAB, count: 16) + [0x00, 0x01, 0x00, 0x02, 0xC5]
        let report = BlueZScanReport(
            address: "C0:00:00:00:00:1B", addressType: "random", serviceData: [BlueZ.uuid(0xFEAA): [0x00, 0xEE]],
            rssi: -60, manufacturerData: [0x004C: iBeacon, 0x0118: [1, 2]])
        let converted = try #require(BlueZRadioMapping.advertisingReport(report))
        let structures = try AdvertisingData.structures(converted.data)
        #expect(structures.map(\.type) == [0x01, 0x16, 0xFF, 0xFF])
        // Sorted by company identifier: Apple (0x004C) first.
        #expect(structures[2].value == [0x4C, 0x00] + iBeacon)
        #expect(structures[3].value == [0x18, 0x01, 1, 2])
        #expect(AdvertisingData.serviceData(converted.data, uuid: 0xFEAA) == [0x00, 0xEE])
    }

    @Test func deviceReportsReadManufacturerDataAndReportItsChanges() throws {
        var table = BlueZDeviceReports(adapterPath: "/org/bluez/hci0")
        let path = "/org/bluez/hci0/dev_C0_00_00_00_00_1B"
        let addedReport = table.interfacesAdded(path: path, interfaces: [BlueZ.deviceInterface: [
            "Address": .string("C0:00:00:00:00:1B"), "AddressType": .string("random"),
            "ManufacturerData": manufacturerData([0x004C: [0x02, 0x15, 1]]),
        ]])
        let added = try #require(addedReport)
        #expect(added.manufacturerData == [0x004C: [0x02, 0x15, 1]])
        // BlueZ signals ManufacturerData alone for every advertisement under a filter with DuplicateData.
        let changedReport = table.propertiesChanged(
            path: path, changed: ["ManufacturerData": manufacturerData([0x004C: [0x02, 0x15, 2]])])
        let changed = try #require(changedReport)
        #expect(changed.manufacturerData == [0x004C: [0x02, 0x15, 2]])
        let nameOnly = table.propertiesChanged(path: path, changed: ["Name": .string("x")])
        #expect(nameOnly == nil)
        // A malformed value (not a{qv} of ay) leaves the last good data.
        let malformedReport = table.propertiesChanged(
            path: path, changed: ["ManufacturerData": .properties(["76": .bytes([9])]), "RSSI": .int16(-70)])
        let malformed = try #require(malformedReport)
        #expect(malformed.manufacturerData == [0x004C: [0x02, 0x15, 2]])
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
            try await first.addDevice("dev_C0_00_00_00_00_1B", properties: [
                "Address": .string("C0:00:00:00:00:1B"), "AddressType": .string("random"),
                "ManufacturerData": manufacturerData([0x004C: [0x02, 0x15, 0x07]]),
            ])
            let beacon = try await scan.waitFor("the manufacturer data report") { report in
                report.address == BLEAddress(string: "C0:00:00:00:00:1B/random") ? report : nil
            }
            #expect(try AdvertisingData.structures(beacon.data).last?.value == [0x4C, 0x00, 0x02, 0x15, 0x07])

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

/// `a{qv}` as BlueZ sends `Device1.ManufacturerData`: company identifier → variant of `ay`.
private func manufacturerData(_ map: [UInt16: [UInt8]]) -> DBusValue {
    .dictionary(keySignature: "q", valueSignature: "v", map.sorted { $0.key < $1.key }.map {
        DBusDictionaryEntry(key: .uint16($0.key), value: .variant(.bytes($0.value)))
    })
}
