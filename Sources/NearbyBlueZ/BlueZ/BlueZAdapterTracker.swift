/// What is known about one BlueZ adapter (`org.bluez.Adapter1`).
package struct BlueZAdapterState: Sendable, Hashable {
    /// The object path, e.g. `/org/bluez/hci0`.
    package var path: String
    /// The kernel's name for it, e.g. `hci0` (the last path component).
    package var name: String { String(path.split(separator: "/").last ?? "") }
    /// The controller's address, e.g. `F0:F1:F2:F3:F4:00`.
    package var address: String
    /// `Adapter1.AddressType`: `public`, or `random` for a controller with a static random address only.
    package var addressType: String
    /// Whether the adapter is powered on.
    package var powered: Bool

    /// Creates a state.
    package init(path: String, address: String, addressType: String = "public", powered: Bool) {
        self.path = path
        self.address = address
        self.addressType = addressType
        self.powered = powered
    }
}

/// A change of the adapter or of `bluetoothd`, as `BlueZAdapter` reports it.
package enum BlueZAdapterEvent: Sendable, Hashable {
    /// The adapter is there (first seen, added again, or exported again after `bluetoothd` came back).
    case available(BlueZAdapterState)
    /// The adapter was powered on or off.
    case powered(Bool)
    /// The adapter went away while `bluetoothd` kept running (unplugged, or its controller was detached).
    case removed
    /// `bluetoothd` lost its bus name (stopped, crashed or killed); nothing BlueZ works until it is back.
    case daemonGone
    /// `bluetoothd` owns `org.bluez` again; `available` follows once it exports the adapter.
    case daemonBack
    /// More interfaces appeared on the adapter's object (e.g. `org.bluez.LEAdvertisingManager1`, which bluetoothd
    /// may add after `Adapter1`).
    case interfacesAdded([String])
}

/// The adapter state machine behind `BlueZAdapter`: it is fed the object manager's snapshot and signals and
/// `org.bluez`'s owner changes, and returns the events they mean. Pure value type, no D-Bus.
package struct BlueZAdapterTracker: Sendable {
    /// The adapter wanted (`hci0`), or nil for the first one (lowest index).
    package let wantedName: String?
    /// The adapter followed, while it exists.
    package private(set) var adapter: BlueZAdapterState?
    /// Whether `bluetoothd` is on the bus.
    package private(set) var daemonPresent = false
    /// Every adapter currently exported (path → state), to pick the default one from.
    private var adapters: [String: BlueZAdapterState] = [:]

    /// Creates a tracker for the adapter named `wantedName` (nil: the default adapter).
    package init(wantedName: String?) {
        self.wantedName = wantedName
    }

    static let adapterInterface = "org.bluez.Adapter1"

    /// The full object tree from `GetManagedObjects` (bluetoothd is present).
    package mutating func snapshot(_ objects: [String: [String: [String: DBusValue]]]) -> [BlueZAdapterEvent] {
        var events: [BlueZAdapterEvent] = []
        if !daemonPresent {
            daemonPresent = true
        }
        adapters = [:]
        for (path, interfaces) in objects {
            if let properties = interfaces[Self.adapterInterface] {
                adapters[path] = Self.state(path: path, properties: properties)
            }
        }
        events += reselect()
        return events
    }

    /// `InterfacesAdded(path, interfaces)`.
    package mutating func interfacesAdded(path: String, interfaces: [String: [String: DBusValue]]) -> [BlueZAdapterEvent] {
        guard let properties = interfaces[Self.adapterInterface] else {
            guard path == adapter?.path else { return [] }
            return [.interfacesAdded(interfaces.keys.sorted())]
        }
        adapters[path] = Self.state(path: path, properties: properties)
        var events = reselect()
        if path == adapter?.path, interfaces.count > 1 {
            events.append(.interfacesAdded(interfaces.keys.filter { $0 != Self.adapterInterface }.sorted()))
        }
        return events
    }

    /// `InterfacesRemoved(path, interfaces)`.
    package mutating func interfacesRemoved(path: String, interfaces: [String]) -> [BlueZAdapterEvent] {
        guard interfaces.contains(Self.adapterInterface), adapters.removeValue(forKey: path) != nil else { return [] }
        return reselect()
    }

    /// `PropertiesChanged(org.bluez.Adapter1, changed, invalidated)` on `path`.
    package mutating func propertiesChanged(path: String, changed: [String: DBusValue]) -> [BlueZAdapterEvent] {
        guard var state = adapters[path] else { return [] }
        if let address = changed["Address"]?.string { state.address = address }
        if let addressType = changed["AddressType"]?.string { state.addressType = addressType }
        let powered = changed["Powered"]?.bool
        if let powered { state.powered = powered }
        adapters[path] = state
        guard adapter?.path == path else { return [] }
        let wasPowered = adapter?.powered
        adapter = state
        if let powered, powered != wasPowered { return [.powered(powered)] }
        return []
    }

    /// `NameOwnerChanged` of `org.bluez`: `hasOwner` is whether the new owner is non-empty.
    package mutating func daemonOwnerChanged(hasOwner: Bool) -> [BlueZAdapterEvent] {
        guard hasOwner != daemonPresent else { return [] }
        daemonPresent = hasOwner
        if hasOwner { return [.daemonBack] }
        adapters = [:]
        adapter = nil
        return [.daemonGone]
    }

    /// The events one signal means: `org.bluez`'s `NameOwnerChanged` (from the bus daemon), or bluetoothd's
    /// `InterfacesAdded`, `InterfacesRemoved` or `PropertiesChanged` of `Adapter1`. The connection has checked the
    /// sender already (`DBusMatch`); arguments of the wrong shape are ignored.
    package mutating func apply(_ signal: DBusReceivedMessage) -> [BlueZAdapterEvent] {
        switch signal.member {
        case "NameOwnerChanged":
            guard signal.arguments.count == 3, signal.arguments[0].string == Self.service,
                let newOwner = signal.arguments[2].string
            else { return [] }
            return daemonOwnerChanged(hasOwner: !newOwner.isEmpty)
        case "InterfacesAdded":
            guard let path = signal.arguments.first?.string,
                let interfaces = signal.arguments.dropFirst().first?.interfaceMap
            else { return [] }
            return interfacesAdded(path: path, interfaces: interfaces)
        case "InterfacesRemoved":
            guard let path = signal.arguments.first?.string, let interfaces = signal.arguments.dropFirst().first?.strings
            else { return [] }
            return interfacesRemoved(path: path, interfaces: interfaces)
        case "PropertiesChanged":
            guard signal.arguments.first?.string == Self.adapterInterface,
                let changed = signal.arguments.dropFirst().first?.propertyMap
            else { return [] }
            return propertiesChanged(path: signal.path, changed: changed)
        default:
            return []
        }
    }

    static let service = "org.bluez"

    /// Picks the wanted (or default) adapter again after the set changed.
    private mutating func reselect() -> [BlueZAdapterEvent] {
        let chosen: BlueZAdapterState?
        if let wantedName {
            chosen = adapters.values.first { $0.name == wantedName }
        } else {
            chosen = adapters.values.min { Self.index($0.name) < Self.index($1.name) }
        }
        let previous = adapter
        adapter = chosen
        switch (previous, chosen) {
        case (nil, nil): return []
        case (.some, nil): return [.removed]
        case (nil, .some(let now)): return [.available(now)]
        case (.some(let before), .some(let now)):
            if before.path != now.path { return [.removed, .available(now)] }
            if before.powered != now.powered { return [.powered(now.powered)] }
            return []
        }
    }

    private static func index(_ name: String) -> Int {
        Int(name.drop { !$0.isNumber }) ?? Int.max
    }

    /// The adapter `Adapter1` properties describe.
    package static func state(path: String, properties: [String: DBusValue]) -> BlueZAdapterState {
        BlueZAdapterState(
            path: path, address: properties["Address"]?.string ?? "",
            addressType: properties["AddressType"]?.string ?? "public", powered: properties["Powered"]?.bool ?? false)
    }
}
