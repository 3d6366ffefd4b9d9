/// Who owns each well-known bus name whose signals a connection listens to (`org.bluez` → `:1.7`), so that a
/// signal claiming to come from `org.bluez` is believed only when the bus stamped it with that owner's unique name.
///
/// The bus daemon overwrites the sender of every message a client sends with that client's unique name, and no
/// client can own `org.freedesktop.DBus`, so:
/// - a signal from the bus daemon itself (`NameOwnerChanged`) carries the sender `org.freedesktop.DBus`, which is
///   proof enough;
/// - a signal from a well-known name carries its owner's unique name, which is compared with the owner learned from
///   `GetNameOwner` and kept up to date from the daemon's `NameOwnerChanged`;
/// - anything else (another client's unicast signal, which the bus delivers whatever the match rules, as in GLib's
///   CVE-2024-34397) is not believed.
///
/// Pure value type, no D-Bus; `DBusConnectionCore` feeds it on its queue, in the order the bus delivered.
package struct DBusNameOwners: Sendable, Hashable {
    /// The bus daemon's name: the sender of its own signals, which no client can own.
    package static let busName = "org.freedesktop.DBus"

    /// Watched name → its owner's unique name, or "" while it has none.
    private var owners: [String: String] = [:]

    /// Creates a table that watches nothing.
    package init() {}

    /// The watched names.
    package var watchedNames: Set<String> { Set(owners.keys) }

    /// Whether `name`'s owner is followed (looked up, and changes applied).
    package func isWatched(_ name: String) -> Bool {
        owners[name] != nil
    }

    /// The unique name owning `name`, if it is watched and owned.
    package func owner(of name: String) -> String? {
        guard let owner = owners[name], !owner.isEmpty else { return nil }
        return owner
    }

    /// Starts watching `name` with its current owner (`nil`: none), from `GetNameOwner`'s reply.
    package mutating func set(_ name: String, owner: String?) {
        owners[name] = owner ?? ""
    }

    /// Applies `message` when it is the bus daemon's `NameOwnerChanged(name, old, new)` for a watched name;
    /// returns whether it was.
    @discardableResult
    package mutating func observe(_ message: DBusReceivedMessage) -> Bool {
        guard let change = Self.nameOwnerChange(message), owners[change.name] != nil else { return false }
        owners[change.name] = change.newOwner
        return true
    }

    /// Whether a message the bus stamped with the unique name `sender` may be believed to come from `expected` (a
    /// unique name, the bus daemon, or a watched well-known name). An unwatched or unowned well-known name accepts
    /// no one.
    package func accepts(sender: String, as expected: String) -> Bool {
        guard !sender.isEmpty else { return false }
        if expected.hasPrefix(":") { return sender == expected }
        if expected == Self.busName { return sender == Self.busName }
        guard let owner = owner(of: expected) else { return false }
        return sender == owner
    }

    /// `(name, newOwner)` of a genuine `org.freedesktop.DBus.NameOwnerChanged` (sender, path, interface, member and
    /// the three string arguments all as the bus daemon sends them); nil for anything else.
    package static func nameOwnerChange(_ message: DBusReceivedMessage) -> (name: String, newOwner: String)? {
        guard message.kind == .signal, message.sender == busName, message.path == "/org/freedesktop/DBus",
            message.interface == busName, message.member == "NameOwnerChanged", message.arguments.count == 3,
            case .string(let name) = message.arguments[0], case .string = message.arguments[1],
            case .string(let newOwner) = message.arguments[2]
        else { return nil }
        return (name, newOwner)
    }
}
