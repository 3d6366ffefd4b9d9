/// A signal match rule: what `DBusClient.signals(matching:)` asks the bus for (AddMatch) and filters locally.
///
/// The bus applies the rule to broadcast signals, but delivers a signal addressed to this connection (unicast)
/// whatever the rules say, from any client. So the rule is applied again locally, sender included: a unique sender
/// (`:1.42`) must match exactly, `org.freedesktop.DBus` only matches the bus daemon itself, and any other
/// well-known sender (`org.bluez`) only matches the unique name that owns it now (`DBusNameOwners`, which
/// `DBusClient.signals(matching:)` sets up before it returns).
package struct DBusMatch: Sendable, Hashable {
    /// The sender (well-known or unique name).
    package var sender: String?
    /// The interface.
    package var interface: String?
    /// The signal name.
    package var member: String?
    /// The exact object path.
    package var path: String?
    /// An object path prefix: the path itself and everything below it.
    package var pathNamespace: String?
    /// The first argument, when it is a string.
    package var arg0: String?

    /// Creates a rule; nil fields match anything.
    package init(
        sender: String? = nil, interface: String? = nil, member: String? = nil, path: String? = nil,
        pathNamespace: String? = nil, arg0: String? = nil
    ) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.arg0 = arg0
    }

    /// The rule string for AddMatch/RemoveMatch.
    package var ruleString: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            if let value { parts.append("\(key)='\(value.replacingOccurrences(of: "'", with: "'\\''"))'") }
        }
        add("sender", sender)
        add("interface", interface)
        add("member", member)
        add("path", path)
        add("path_namespace", pathNamespace)
        add("arg0", arg0)
        return parts.joined(separator: ",")
    }

    /// Whether `message` (a signal) matches this rule, its sender checked against `owners`: a well-known sender
    /// that `owners` does not follow, or that has no owner, matches nothing.
    package func matches(_ message: DBusReceivedMessage, owners: DBusNameOwners) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender, !owners.accepts(sender: message.sender, as: sender) { return false }
        if let interface, interface != message.interface { return false }
        if let member, member != message.member { return false }
        if let path, path != message.path { return false }
        if let pathNamespace, pathNamespace != "/", message.path != pathNamespace,
            !message.path.hasPrefix(pathNamespace + "/")
        {
            return false
        }
        if let arg0, message.arguments.first?.string != arg0 { return false }
        return true
    }

    /// The well-known sender whose owner must be followed for this rule to match (`org.bluez`); nil for no
    /// sender, a unique one, or the bus daemon.
    package var wellKnownSender: String? {
        guard let sender, !sender.hasPrefix(":"), sender != DBusNameOwners.busName else { return nil }
        return sender
    }

    /// `org.freedesktop.DBus.NameOwnerChanged` for one name.
    package static func nameOwnerChanged(_ name: String) -> DBusMatch {
        DBusMatch(
            sender: DBusNameOwners.busName, interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
            path: "/org/freedesktop/DBus", arg0: name)
    }

    /// `org.freedesktop.DBus.Properties.PropertiesChanged` from a sender, below a path, for one interface.
    package static func propertiesChanged(sender: String, pathNamespace: String, interface: String?) -> DBusMatch {
        DBusMatch(
            sender: sender, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            pathNamespace: pathNamespace, arg0: interface)
    }

    /// `org.freedesktop.DBus.ObjectManager.InterfacesAdded` or `InterfacesRemoved` from a sender.
    package static func objectManager(sender: String, member: String) -> DBusMatch {
        DBusMatch(sender: sender, interface: "org.freedesktop.DBus.ObjectManager", member: member)
    }
}
