import NearbyBlueZ
import NearbyCore
import NearbyWire

/// A stand-in for `bluetoothd` on a private bus: owns `org.bluez`, exports one adapter (`/org/bluez/hci0`) with
/// `Adapter1` and `LEAdvertisingManager1` through an object manager, reads a registered advertisement's
/// properties back with `GetAll` as bluetoothd does, and records the discovery calls. Closing its connection is
/// `bluetoothd` going away.
final class FakeBlueZ: Sendable {
    static let adapterPath = "/org/bluez/hci0"

    let connection: DBusClient
    /// Advertisement properties read back at each RegisterAdvertisement.
    let registrations = LockedValue<[[String: DBusValue]]>([])
    /// Adapter1 method calls: member and arguments.
    let adapterCalls = LockedValue<[(String, [DBusValue])]>([])
    /// The adapter's `Powered` property (``setPowered(_:)`` changes it and says so).
    let powered = LockedValue(true)
    /// The error RegisterAdvertisement replies with, when set (as bluetoothd does for a blocked adapter).
    let registrationError = LockedValue<DBusRemoteError?>(nil)
    /// Methods (`RegisterAdvertisement`, `StartDiscovery`, ...) that get no answer until `answerHeldCalls()`: a
    /// bluetoothd that hangs.
    let held = LockedValue<Set<String>>([])

    /// Answers the held calls (with an error) and stops holding any.
    func answerHeldCalls() {
        held.withLock { $0 = [] }
    }

    /// `adapterProperties` with the current `Powered`.
    static func adapterProperties(powered: Bool) -> [String: DBusValue] {
        var properties = adapterProperties
        properties["Powered"] = .boolean(powered)
        return properties
    }

    static let adapterProperties: [String: DBusValue] = [
        "Address": .string("F0:F1:F2:F3:F4:00"), "Powered": .boolean(true), "Name": .string("fake"),
    ]
    static let managerProperties: [String: DBusValue] = [
        "SupportedInstances": .byte(4), "ActiveInstances": .byte(0), "SupportedIncludes": .strings(["tx-power"]),
        "SupportedSecondaryChannels": .strings(["1M", "2M"]),
    ]

    /// Connects, exports the objects, takes `org.bluez` and announces the adapter (InterfacesAdded).
    init(bus: PrivateBus) async throws {
        connection = try await bus.connect()
        let connection = self.connection
        let held = self.held
        let hold: @Sendable (String) async throws -> Void = { member in
            guard held.withLock({ $0.contains(member) }) else { return }
            while held.withLock({ $0.contains(member) }) { try await Task.sleep(for: .milliseconds(20)) }
            throw DBusRemoteError(name: "org.bluez.Error.Failed", message: "held \(member) answered late")
        }
        let registrations = self.registrations
        let adapterCalls = self.adapterCalls
        let powered = self.powered
        let registrationError = self.registrationError
        try await connection.export(path: "/", interfaces: [
            DBusExportedInterface(name: "org.freedesktop.DBus.ObjectManager", methods: [
                "GetManagedObjects": { _ in
                    [.managedObjects([Self.adapterPath: [
                        BlueZ.adapterInterface: Self.adapterProperties(powered: powered.withLock { $0 }),
                        BlueZ.advertisingManagerInterface: Self.managerProperties,
                    ]])]
                }
            ])
        ])
        let record: DBusExportedInterface.Method = { call in
            adapterCalls.withLock { $0.append((call.member, call.arguments)) }
            try await hold(call.member)
            return []
        }
        try await connection.export(path: Self.adapterPath, interfaces: [
            DBusExportedInterface(
                name: BlueZ.adapterInterface, properties: { Self.adapterProperties(powered: powered.withLock { $0 }) },
                methods: ["SetDiscoveryFilter": record, "StartDiscovery": record, "StopDiscovery": record]),
            DBusExportedInterface(
                name: BlueZ.advertisingManagerInterface, properties: { Self.managerProperties },
                methods: [
                    "RegisterAdvertisement": { call in
                        if let error = registrationError.withLock({ $0 }) { throw error }
                        try await hold(call.member)
                        let path = call.arguments.first?.string ?? "/"
                        let reply = try await connection.call(
                            destination: call.sender, path: path, interface: BlueZ.propertiesInterface,
                            member: "GetAll", arguments: [.string(BlueZ.advertisementInterface)])
                        registrations.withLock { $0.append(reply.first?.propertyMap ?? [:]) }
                        return []
                    },
                    "UnregisterAdvertisement": { _ in [] },
                ]),
        ])
        _ = try await connection.requestName(BlueZ.service)
        try await connection.emitSignal(
            path: "/", interface: BlueZ.objectManagerInterface, member: "InterfacesAdded",
            arguments: [.objectPath(Self.adapterPath), .interfaces([
                BlueZ.adapterInterface: Self.adapterProperties,
                BlueZ.advertisingManagerInterface: Self.managerProperties,
            ])])
    }

    /// Powers the adapter on or off (PropertiesChanged on Adapter1, as bluetoothd sends; rfkill looks the same).
    func setPowered(_ on: Bool) async throws {
        powered.withLock { $0 = on }
        try await connection.emitPropertiesChanged(
            path: Self.adapterPath, interface: BlueZ.adapterInterface, changed: ["Powered": .boolean(on)])
    }

    /// Announces a device below the adapter.
    func addDevice(_ name: String, properties: [String: DBusValue]) async throws {
        try await connection.emitSignal(
            path: "/", interface: BlueZ.objectManagerInterface, member: "InterfacesAdded",
            arguments: [.objectPath("\(Self.adapterPath)/\(name)"), .interfaces([BlueZ.deviceInterface: properties])])
    }

    /// Changes a device's properties.
    func changeDevice(_ name: String, _ changed: [String: DBusValue]) async throws {
        try await connection.emitPropertiesChanged(
            path: "\(Self.adapterPath)/\(name)", interface: BlueZ.deviceInterface, changed: changed)
    }
}
