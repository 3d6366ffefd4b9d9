import CDBus
import Dispatch
import NearbyWire

/// One interface of an object this process exports on the bus: its properties (served through
/// `org.freedesktop.DBus.Properties` Get/GetAll) and its methods.
///
/// A method handler receives the call and returns the reply's arguments; throwing a `DBusRemoteError` replies with
/// that error, any other error with `org.freedesktop.DBus.Error.Failed`. Handlers run as tasks, so a slow one does
/// not hold up the connection.
package struct DBusExportedInterface: Sendable {
    /// A method implementation.
    package typealias Method = @Sendable (DBusReceivedMessage) async throws -> [DBusValue]

    /// The interface name, e.g. `org.bluez.LEAdvertisement1`.
    package var name: String
    /// The current property values (called for each Get/GetAll).
    package var properties: @Sendable () -> [String: DBusValue]
    /// Methods by name.
    package var methods: [String: Method]

    /// Creates an interface.
    package init(
        name: String, properties: @escaping @Sendable () -> [String: DBusValue] = { [:] }, methods: [String: Method] = [:]
    ) {
        self.name = name
        self.properties = properties
        self.methods = methods
    }
}

/// A libdbus message kept alive across a task hop (only dereferenced on the connection's queue).
private struct RetainedMessage: @unchecked Sendable {
    let message: OpaquePointer
}

extension DBusConnectionCore {
    /// Answers a method call to an exported object (on the queue, from the filter).
    func handleCall(_ message: OpaquePointer, interfaces: [String: DBusExportedInterface]) {
        let call: DBusReceivedMessage
        do {
            call = try DBusReceivedMessage(message)
        } catch {
            return reply(to: message, error: DBusRemoteError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "\(error)"))
        }
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Properties", "Get"):
            let name = call.arguments.first?.string ?? ""
            let property = call.arguments.dropFirst().first?.string ?? ""
            guard let interface = interfaces[name] else {
                return reply(to: message, error: Self.unknownInterface(name))
            }
            guard let value = interface.properties()[property] else {
                return reply(to: message, error: DBusRemoteError(
                    name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(property) on \(name)"))
            }
            reply(to: message, with: [.variant(value)])
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            let name = call.arguments.first?.string ?? ""
            guard let interface = interfaces[name] else {
                return reply(to: message, error: Self.unknownInterface(name))
            }
            reply(to: message, with: [.properties(interface.properties())])
        case ("org.freedesktop.DBus.Properties", "Set"):
            reply(to: message, error: DBusRemoteError(
                name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "properties are read-only"))
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            reply(to: message, with: [.string(Self.introspection(interfaces))])
        default:
            let candidates = call.interface.isEmpty ? Array(interfaces.values) : interfaces[call.interface].map { [$0] } ?? []
            guard let method = candidates.lazy.compactMap({ $0.methods[call.member] }).first else {
                return reply(to: message, error: DBusRemoteError(
                    name: "org.freedesktop.DBus.Error.UnknownMethod",
                    message: "no method \(call.interface).\(call.member) at \(call.path)"))
            }
            dbus_message_ref(message)
            let retained = RetainedMessage(message: message)
            // Owner: none; one per incoming method call, ending when the method returns and the reply is queued
            // (the only method, an advertisement's Release, checks the caller and updates the advertiser: no I/O).
            Task {
                let result: Result<[DBusValue], any Error>
                do {
                    result = .success(try await method(call))
                } catch {
                    result = .failure(error)
                }
                self.queue.async {
                    defer { dbus_message_unref(retained.message) }
                    switch result {
                    case .success(let values): self.reply(to: retained.message, with: values)
                    case .failure(let error as DBusRemoteError): self.reply(to: retained.message, error: error)
                    case .failure(let error):
                        self.reply(to: retained.message, error: DBusRemoteError(
                            name: "org.freedesktop.DBus.Error.Failed", message: "\(error)"))
                    }
                }
            }
        }
    }

    private static func unknownInterface(_ name: String) -> DBusRemoteError {
        DBusRemoteError(name: "org.freedesktop.DBus.Error.UnknownInterface", message: "no interface \(name)")
    }

    private func reply(to message: OpaquePointer, with values: [DBusValue]) {
        guard dbus_message_get_no_reply(message) == 0, let reply = dbus_message_new_method_return(message) else { return }
        do {
            try DBusMarshalling.append(values, to: reply)
            try send(reply)
        } catch {
            logger.debug("D-Bus reply not sent", metadata: ["error": "\(error)"])
        }
    }

    private func reply(to message: OpaquePointer, error: DBusRemoteError) {
        guard dbus_message_get_no_reply(message) == 0 else { return }
        let name = dbus_validate_error_name(error.name, nil) != 0 ? error.name : "org.freedesktop.DBus.Error.Failed"
        guard let reply = dbus_message_new_error(message, name, error.message.replacingOccurrences(of: "\0", with: ""))
        else { return }
        try? send(reply)
    }

    private static func introspection(_ interfaces: [String: DBusExportedInterface]) -> String {
        var xml = "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\" "
            + "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n"
        xml += "  <interface name=\"org.freedesktop.DBus.Properties\"><method name=\"Get\"/><method name=\"GetAll\"/></interface>\n"
        for interface in interfaces.values.sorted(by: { $0.name < $1.name }) {
            xml += "  <interface name=\"\(interface.name)\">\n"
            for method in interface.methods.keys.sorted() { xml += "    <method name=\"\(method)\"/>\n" }
            for (property, value) in interface.properties().sorted(by: { $0.key < $1.key }) {
                xml += "    <property name=\"\(property)\" type=\"\(value.signature)\" access=\"read\"/>\n"
            }
            xml += "  </interface>\n"
        }
        return xml + "</node>\n"
    }
}
