import Foundation
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBLE
@testable import NearbyBlueZ

/// The default radio (no `--hci`): BlueZ is probed on a private bus with and without a fake `bluetoothd`, and
/// `bluez:hciN` binds the kernel's sockets to that adapter's address (issue 12, items 1 and 2).
@Suite(.timeLimit(.minutes(5))) struct BlueZDefaultRadioTests {
    @Test func bluezPresentMakesTheDefaultWiFiLANPlusBLEThroughBlueZ() async throws {
        try await withPrivateBus { bus in
            let daemon = try await FakeAdapters(bus: bus, adapters: FakeAdapters.two)
            let result = await BlueZSystemProbe.run(timeout: .seconds(5)) { _ in try await bus.connect() }
            #expect(result == .available([
                BlueZAdapterState(path: "/org/bluez/hci0", address: "F0:F1:F2:F3:F4:00", addressType: "public", powered: true),
                BlueZAdapterState(path: "/org/bluez/hci1", address: "C1:C2:C3:C4:C5:01", addressType: "random", powered: true),
            ]))
            #expect(BluetoothController.systemDefault(from: result)?.description == "bluez:hci0")

            let choice = try await MediumFactory.choose(given: nil, named: []) { result }
            #expect(choice.mediums == [.wifiLAN, .ble])
            #expect(choice.controller?.description == "bluez:hci0")
            #expect(choice.reason.contains("BlueZ found"))
            let explicit = try await MediumFactory.choose(given: nil, named: [.ble]) { result }
            #expect(explicit.mediums == [.ble])
            #expect(explicit.controller?.description == "bluez:hci0")
            await daemon.connection.close()
        }
    }

    @Test func bluezAbsentMakesTheDefaultWiFiLANOnlyAndExplicitBLEFails() async throws {
        try await withPrivateBus { bus in
            let result = await BlueZSystemProbe.run(timeout: .seconds(5)) { _ in try await bus.connect() }
            #expect(result == .unavailable("bluetoothd is not on the system bus"))
            let choice = try await MediumFactory.choose(given: nil, named: []) { result }
            #expect(choice.mediums == [.wifiLAN])
            #expect(choice.controller == nil)
            let error = await #expect(throws: NearbyError.self) {
                try await MediumFactory.choose(given: nil, named: [.ble]) { result }
            }
            #expect(error?.code == .bluetoothUnavailable)
            #expect(error?.message.contains("bluetoothd is not on the system bus") == true)
            #expect(error?.message.contains("--hci") == true)
        }
        let unreachable = await BlueZSystemProbe.run(timeout: .seconds(5)) { _ in
            try await DBusClient.connect(address: "unix:path=/nonexistent/nearby-no-bus", timeout: .seconds(5))
        }
        #expect(unreachable.defaultAdapter == nil)
    }

    @Test func bluezWithoutAdaptersIsNotADefault() async throws {
        try await withPrivateBus { bus in
            let daemon = try await FakeAdapters(bus: bus, adapters: [:])
            let result = await BlueZSystemProbe.run(timeout: .seconds(5)) { _ in try await bus.connect() }
            #expect(result == .unavailable("bluetoothd has no Bluetooth adapter"))
            await daemon.connection.close()
        }
    }

    @Test func aGivenRadioOrWiFiLANOnlyDoesNotProbe() async throws {
        let probes = LockedValue(0)
        let probe: @Sendable () async -> BlueZSystemProbe.Result = {
            probes.withLock { $0 += 1 }
            return .unavailable("not asked")
        }
        let given = try await MediumFactory.choose(
            given: try BluetoothController("tcp:127.0.0.1:1"), named: [], probe: probe)
        #expect(given.mediums == [.wifiLAN, .ble])
        #expect(given.controller?.description == "tcp:127.0.0.1:1")
        let wifi = try await MediumFactory.choose(given: nil, named: [.wifiLAN], probe: probe)
        #expect(wifi.mediums == [.wifiLAN])
        #expect(probes.withLock { $0 } == 0)
        #expect(try BluetoothController.bluez(adapter: "hci1").description == "bluez:hci1")
        #expect(throws: NearbyError.self) { try BluetoothController.bluez(adapter: "usb0") }
    }

    @Test func bluezHciNBindsTheKernelSocketsToThatAdaptersAddress() async throws {
        try await withPrivateBus { bus in
            let daemon = try await FakeAdapters(bus: bus, adapters: FakeAdapters.two)
            let gap = BlueZGAP(connect: { try await bus.connect() })
            #expect(try await gap.adapterAddress(adapter: "hci0") == BLEAddress(string: "F0:F1:F2:F3:F4:00/public"))
            #expect(try await gap.adapterAddress(adapter: "hci1") == BLEAddress(string: "C1:C2:C3:C4:C5:01/random"))

            let second = BlueZRadio(adapter: "hci1", gap: gap)
            let options = try await second.resolvedSocketOptions()
            let local = try #require(options.localAddress)
            #expect(local == BLEAddress(string: "C1:C2:C3:C4:C5:01/random"))
            // sockaddr_l2: family 31, PSM 0 (dynamic), hci1's address least significant byte first, LE random.
            #expect(KernelL2CAPSocket.socketAddress(local, psm: 0)
                == [31, 0, 0, 0, 0x01, 0xC5, 0xC4, 0xC3, 0xC2, 0xC1, 0, 0, KernelL2CAPSocket.leAddressRandom, 0])
            let first = try await BlueZRadio(adapter: "hci0", gap: gap).resolvedSocketOptions().localAddress
            #expect(first.map { KernelL2CAPSocket.socketAddress($0, psm: 0x80) }
                == [31, 0, 0x80, 0, 0x00, 0xF4, 0xF3, 0xF2, 0xF1, 0xF0, 0, 0, KernelL2CAPSocket.leAddressPublic, 0])

            let missing = await #expect(throws: NearbyError.self) {
                try await BlueZRadio(adapter: "hci7", gap: gap).resolvedSocketOptions()
            }
            #expect(missing?.code.rawValue == "bluetoothUnavailable")
            #expect(missing?.message.contains("hci7") == true)
            // An address given explicitly wins; without the D-Bus layer the sockets stay on BDADDR_ANY.
            var fixed = KernelL2CAP.Options()
            fixed.localAddress = BLEAddress(string: "11:22:33:44:55:66/public")
            #expect(try await BlueZRadio(adapter: "hci1", gap: gap, socketOptions: fixed).resolvedSocketOptions() == fixed)
            #expect(try await BlueZRadio(adapter: "hci1").resolvedSocketOptions().localAddress == nil)
            await gap.shutdown()
            await daemon.connection.close()
        }
    }
}

/// A stand-in `bluetoothd` with any number of adapters: owns `org.bluez` and answers `GetManagedObjects` with one
/// `Adapter1` per entry (name → properties).
final class FakeAdapters: Sendable {
    let connection: DBusClient

    /// hci0 with a public address, hci1 with a static random one.
    static let two: [String: [String: DBusValue]] = [
        "hci1": ["Address": .string("C1:C2:C3:C4:C5:01"), "AddressType": .string("random"), "Powered": .boolean(true)],
        "hci0": ["Address": .string("F0:F1:F2:F3:F4:00"), "AddressType": .string("public"), "Powered": .boolean(true)],
    ]

    init(bus: PrivateBus, adapters: [String: [String: DBusValue]]) async throws {
        connection = try await bus.connect()
        var objects: [String: [String: [String: DBusValue]]] = [:]
        for (name, properties) in adapters { objects["/org/bluez/\(name)"] = [BlueZ.adapterInterface: properties] }
        let tree = objects
        try await connection.export(path: "/", interfaces: [
            DBusExportedInterface(name: BlueZ.objectManagerInterface, methods: [
                "GetManagedObjects": { _ in [.managedObjects(tree)] }
            ])
        ])
        for (name, properties) in adapters {
            try await connection.export(path: "/org/bluez/\(name)", interfaces: [
                DBusExportedInterface(name: BlueZ.adapterInterface, properties: { properties }, methods: [:])
            ])
        }
        _ = try await connection.requestName(BlueZ.service)
    }
}
