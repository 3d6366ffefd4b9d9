import Testing

@testable import NearbyBlueZ

/// The adapter state machine: selection by name or default, power, removal, and bluetoothd leaving/returning.
@Suite(.timeLimit(.minutes(5))) struct BlueZAdapterTrackerTests {
    private func adapter(_ powered: Bool, _ address: String = "00:00:00:00:00:01") -> [String: [String: DBusValue]] {
        [BlueZ.adapterInterface: ["Address": .string(address), "Powered": .boolean(powered)]]
    }

    @Test func defaultAdapterIsTheLowestIndex() {
        var tracker = BlueZAdapterTracker(wantedName: nil)
        let events = tracker.snapshot(["/org/bluez/hci1": adapter(true, "B"), "/org/bluez/hci0": adapter(false, "A"),
                                       "/org/bluez/hci0/dev_X": [BlueZ.deviceInterface: [:]]])
        #expect(events == [.available(BlueZAdapterState(path: "/org/bluez/hci0", address: "A", powered: false))])
    }

    @Test func namedAdapterComesGoesAndPowers() {
        var tracker = BlueZAdapterTracker(wantedName: "hci1")
        #expect(tracker.snapshot(["/org/bluez/hci0": adapter(true)]) == [])
        #expect(tracker.interfacesAdded(path: "/org/bluez/hci1", interfaces: adapter(false)) ==
                [.available(BlueZAdapterState(path: "/org/bluez/hci1", address: "00:00:00:00:00:01", powered: false))])
        #expect(tracker.propertiesChanged(path: "/org/bluez/hci1", changed: ["Powered": .boolean(true)]) == [.powered(true)])
        #expect(tracker.propertiesChanged(path: "/org/bluez/hci1", changed: ["Powered": .boolean(true)]) == [])
        #expect(tracker.propertiesChanged(path: "/org/bluez/hci0", changed: ["Powered": .boolean(false)]) == [])
        #expect(tracker.interfacesAdded(path: "/org/bluez/hci1", interfaces: [BlueZ.advertisingManagerInterface: [:]]) ==
                [.interfacesAdded([BlueZ.advertisingManagerInterface])])
        #expect(tracker.interfacesRemoved(path: "/org/bluez/hci1", interfaces: [BlueZ.adapterInterface]) == [.removed])
        #expect(tracker.adapter == nil)
    }

    @Test func daemonGoneAndBack() {
        var tracker = BlueZAdapterTracker(wantedName: nil)
        _ = tracker.snapshot(["/org/bluez/hci0": adapter(true)])
        #expect(tracker.daemonOwnerChanged(hasOwner: false) == [.daemonGone])
        #expect(tracker.adapter == nil)
        #expect(tracker.daemonOwnerChanged(hasOwner: false) == [])
        #expect(tracker.daemonOwnerChanged(hasOwner: true) == [.daemonBack])
        #expect(tracker.interfacesAdded(path: "/org/bluez/hci0", interfaces: adapter(true)) ==
                [.available(BlueZAdapterState(path: "/org/bluez/hci0", address: "00:00:00:00:00:01", powered: true))])
    }

    @Test func deviceReportsNeedFreshDataAndTheWantedServiceData() {
        var table = BlueZDeviceReports(adapterPath: "/org/bluez/hci0", serviceDataUUIDs: [BlueZ.uuid(0xFEF3).uppercased()])
        let old = "/org/bluez/hci0/dev_AA"
        table.known([old: [BlueZ.deviceInterface: ["Address": .string("AA"), "ServiceData": .properties([BlueZ.uuid(0xFEF3): .bytes([1])])]]])
        // Known before discovery: reported only once something changes.
        #expect(table.propertiesChanged(path: old, changed: ["Name": .string("x")]) == nil)
        #expect(table.propertiesChanged(path: old, changed: ["RSSI": .int16(-60)])?.rssi == -60)
        // Another adapter's device, or one without 0xFEF3 data: not reported.
        #expect(table.interfacesAdded(path: "/org/bluez/hci1/dev_BB", interfaces: [BlueZ.deviceInterface: ["Address": .string("BB")]]) == nil)
        #expect(table.interfacesAdded(path: "/org/bluez/hci0/dev_CC", interfaces: [BlueZ.deviceInterface: [
            "Address": .string("CC"), "ServiceData": .properties([BlueZ.uuid(0x180F): .bytes([2])])]]) == nil)
        table.interfacesRemoved(path: old, interfaces: [BlueZ.deviceInterface])
        #expect(table.propertiesChanged(path: old, changed: ["RSSI": .int16(-50)]) == nil)
    }
}
