import NearbyBLE
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// `BlueZGATTClient` against a stand-in for `bluetoothd` on a private bus that knows one device with the Weave
/// service: the D-Bus conversation of a GATT client (Connect, ServicesResolved, the object tree, ReadValue,
/// WriteValue with type request, StartNotify and values from PropertiesChanged, Disconnect).
@Suite(.timeLimit(.minutes(3))) struct BlueZGATTClientOnFakeDaemonTests {
    static let adapterPath = "/org/bluez/hci0"
    static let devicePath = "/org/bluez/hci0/dev_C0_00_00_00_00_0A"
    static let servicePath = devicePath + "/service000a"
    static let writePath = servicePath + "/char000b"
    static let indicatePath = servicePath + "/char000d"
    static let otherServicePath = devicePath + "/service0001"

    /// What the fake daemon saw.
    final class Calls: Sendable {
        let members = LockedValue<[String]>([])
        let writes = LockedValue<[(value: [UInt8], options: [String: DBusValue])]>([])
        let resolved = LockedValue(false)
    }

    static func objects(resolved: Bool) -> [String: [String: [String: DBusValue]]] {
        var tree: [String: [String: [String: DBusValue]]] = [
            adapterPath: [BlueZ.adapterInterface: ["Address": .string("F0:F1:F2:F3:F4:00"), "Powered": .boolean(true)]],
            devicePath: [BlueZ.deviceInterface: ["Address": .string("C0:00:00:00:00:0A"), "ServicesResolved": .boolean(resolved)]],
        ]
        guard resolved else { return tree }
        tree[servicePath] = [BlueZ.gattServiceInterface: [
            "UUID": .string("0000fef3-0000-1000-8000-00805f9b34fb"), "Primary": .boolean(true),
            "Device": .objectPath(devicePath),
        ]]
        tree[otherServicePath] = [BlueZ.gattServiceInterface: [
            "UUID": .string("00001801-0000-1000-8000-00805f9b34fb"), "Primary": .boolean(true),
            "Device": .objectPath(devicePath),
        ]]
        tree[writePath] = [BlueZ.gattCharacteristicInterface: [
            "UUID": .string("00000100-0004-1000-8000-001a11000101"), "Service": .objectPath(servicePath),
            "Flags": .strings(["write"]), "MTU": .uint16(247),
        ]]
        tree[indicatePath] = [BlueZ.gattCharacteristicInterface: [
            "UUID": .string("00000100-0004-1000-8000-001a11000102"), "Service": .objectPath(servicePath),
            "Flags": .strings(["read", "indicate"]), "MTU": .uint16(247),
        ]]
        tree[otherServicePath + "/char0002"] = [BlueZ.gattCharacteristicInterface: [
            "UUID": .string("00002a05-0000-1000-8000-00805f9b34fb"), "Service": .objectPath(otherServicePath),
            "Flags": .strings(["indicate"]),
        ]]
        return tree
    }

    /// Exports the fake daemon on `connection` and takes `org.bluez`. Connect answers first, then resolves the
    /// services with a PropertiesChanged signal, as bluetoothd does.
    static func serveFake(_ connection: DBusClient, calls: Calls) async throws {
        let record: @Sendable (String) -> Void = { member in calls.members.withLock { $0.append(member) } }
        try await connection.export(path: "/", interfaces: [
            DBusExportedInterface(name: BlueZ.objectManagerInterface, methods: [
                "GetManagedObjects": { _ in [.managedObjects(objects(resolved: calls.resolved.withLock { $0 }))] },
            ])
        ])
        try await connection.export(path: adapterPath, interfaces: [
            DBusExportedInterface(
                name: BlueZ.adapterInterface,
                properties: { ["Address": .string("F0:F1:F2:F3:F4:00"), "Powered": .boolean(true)] }, methods: [:]),
        ])
        try await connection.export(path: devicePath, interfaces: [
            DBusExportedInterface(
                name: BlueZ.deviceInterface, properties: { ["ServicesResolved": .boolean(calls.resolved.withLock { $0 })] },
                methods: [
                    "Connect": { _ in
                        record("Connect")
                        // Owner: the test; it ends after the one signal.
                        Task {
                            calls.resolved.withLock { $0 = true }
                            try? await connection.emitPropertiesChanged(
                                path: devicePath, interface: BlueZ.deviceInterface,
                                changed: ["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
                        }
                        return []
                    },
                    "Disconnect": { _ in
                        record("Disconnect")
                        try? await connection.emitPropertiesChanged(
                            path: devicePath, interface: BlueZ.deviceInterface, changed: ["Connected": .boolean(false)])
                        return []
                    },
                ]),
        ])
        try await connection.export(path: writePath, interfaces: [
            DBusExportedInterface(name: BlueZ.gattCharacteristicInterface, properties: { [:] }, methods: [
                "WriteValue": { call in
                    record("WriteValue")
                    calls.writes.withLock {
                        $0.append((call.arguments.first?.bytes ?? [], call.arguments.dropFirst().first?.propertyMap ?? [:]))
                    }
                    return []
                },
            ])
        ])
        try await connection.export(path: indicatePath, interfaces: [
            DBusExportedInterface(name: BlueZ.gattCharacteristicInterface, properties: { [:] }, methods: [
                "ReadValue": { _ in
                    record("ReadValue")
                    return [.bytes([0xCA, 0xFE])]
                },
                "StartNotify": { _ in
                    record("StartNotify")
                    return []
                },
            ])
        ])
        _ = try await connection.requestName(BlueZ.service)
    }

    @Test func connectsDiscoversReadsWritesAndReceivesIndications() async throws {
        try await withPrivateBus { bus in
            let daemon = try await bus.connect()
            let calls = Calls()
            try await Self.serveFake(daemon, calls: calls)
            let client = try await bus.connect()
            let adapter = try await BlueZAdapter.find(on: client, name: "hci0")
            let peer = try #require(BLEAddress(string: "C0:00:00:00:00:0A"))
            #expect(BlueZGATTClient.devicePath(adapterPath: Self.adapterPath, address: peer) == Self.devicePath)

            let gatt = try await BlueZGATTClient.connect(adapter: adapter, address: peer, logger: .init(label: "test"))
            #expect(try await gatt.exchangeMTU() == 247)
            let found = try await gatt.discoverCharacteristics(service: BLEUUID(0xFEF3))
            #expect(found.map(\.uuid) == [NearbyGATTUUIDs.weaveClientToServer, NearbyGATTUUIDs.weaveServerToClient])
            #expect(found.first?.properties == .write)
            #expect(found.last?.properties == [.read, .indicate])
            #expect(try await gatt.discoverCharacteristics(service: BLEUUID(0x180A)).isEmpty)
            let write = try #require(found.first)
            let indicate = try #require(found.last)

            #expect(try await gatt.read(indicate) == [0xCA, 0xFE])
            try await gatt.write([1, 2, 3], to: write)
            #expect(calls.writes.withLock { $0.first?.value } == [1, 2, 3])
            #expect(calls.writes.withLock { $0.first?.options["type"]?.string } == "request")

            var values = try await gatt.subscribeToIndications(indicate).makeAsyncIterator()
            for value in [[UInt8]([0x80, 1]), [0x80, 1], [0x11, 9]] {
                try await daemon.emitPropertiesChanged(
                    path: Self.indicatePath, interface: BlueZ.gattCharacteristicInterface, changed: ["Value": .bytes(value)])
            }
            // Another characteristic's values are not this stream's.
            try await daemon.emitPropertiesChanged(
                path: Self.writePath, interface: BlueZ.gattCharacteristicInterface, changed: ["Value": .bytes([7])])
            #expect(await values.next() == [0x80, 1])
            #expect(await values.next() == [0x80, 1])
            #expect(await values.next() == [0x11, 9])

            await gatt.disconnect()
            #expect(await values.next() == nil)
            #expect(calls.members.withLock { $0 } == ["Connect", "ReadValue", "WriteValue", "StartNotify", "Disconnect"])
            await adapter.stop()
            await client.close()
            await daemon.close()
        }
    }

    @Test func aDeviceBlueZDoesNotKnowIsMediumUnavailable() async throws {
        try await withPrivateBus { bus in
            let daemon = try await bus.connect()
            try await Self.serveFake(daemon, calls: Calls())
            let client = try await bus.connect()
            let adapter = try await BlueZAdapter.find(on: client, name: "hci0")
            let stranger = try #require(BLEAddress(string: "C0:00:00:00:00:0B"))
            let error = await #expect(throws: NearbyError.self) {
                _ = try await BlueZGATTClient.connect(adapter: adapter, address: stranger, logger: .init(label: "test"))
            }
            #expect(error?.code == .mediumUnavailable)
            await adapter.stop()
            await client.close()
            await daemon.close()
        }
    }

    @Test func flagsMapToProperties() {
        #expect(BlueZGATTClient.properties(["read", "write-without-response", "notify"]) == [.read, .writeWithoutResponse, .notify])
        #expect(BlueZGATTClient.properties(["write", "indicate", "extended-properties"]) == [.write, .indicate])
    }
}
