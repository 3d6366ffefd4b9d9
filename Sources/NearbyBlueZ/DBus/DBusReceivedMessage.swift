import CDBus
import NearbyWire

/// A message received from the bus (a signal, or a method call to an exported object), decoded into Swift values.
package struct DBusReceivedMessage: Sendable, Hashable {
    /// What kind of message it is.
    package enum Kind: Sendable, Hashable {
        /// A method call.
        case methodCall
        /// A method's reply.
        case methodReturn
        /// An error reply.
        case error
        /// A signal.
        case signal
    }

    /// The message kind.
    package var kind: Kind
    /// The object path (calls and signals).
    package var path: String
    /// The interface (calls and signals).
    package var interface: String
    /// The method or signal name.
    package var member: String
    /// The sender's unique bus name (empty on a peer-to-peer connection).
    package var sender: String
    /// The error name of an error reply.
    package var errorName: String?
    /// The arguments.
    package var arguments: [DBusValue]

    /// Creates a message (tests and local dispatch).
    package init(
        kind: Kind, path: String, interface: String, member: String, sender: String = "", errorName: String? = nil,
        arguments: [DBusValue] = []
    ) {
        self.kind = kind
        self.path = path
        self.interface = interface
        self.member = member
        self.sender = sender
        self.errorName = errorName
        self.arguments = arguments
    }

    /// Decodes a libdbus message.
    init(_ message: OpaquePointer) throws {
        switch dbus_message_get_type(message) {
        case Int32(DBUS_MESSAGE_TYPE_METHOD_CALL): kind = .methodCall
        case Int32(DBUS_MESSAGE_TYPE_METHOD_RETURN): kind = .methodReturn
        case Int32(DBUS_MESSAGE_TYPE_ERROR): kind = .error
        default: kind = .signal
        }
        path = dbus_message_get_path(message).map { String(cString: $0) } ?? ""
        interface = dbus_message_get_interface(message).map { String(cString: $0) } ?? ""
        member = dbus_message_get_member(message).map { String(cString: $0) } ?? ""
        sender = dbus_message_get_sender(message).map { String(cString: $0) } ?? ""
        errorName = dbus_message_get_error_name(message).map { String(cString: $0) }
        arguments = try DBusMarshalling.arguments(of: message)
    }
}

/// A D-Bus error reply (its name and message), kept as the `cause` of the `NearbyError` a failed call throws; and
/// what an exported method throws to reply with a specific D-Bus error.
package struct DBusRemoteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The D-Bus error name, e.g. `org.bluez.Error.AlreadyExists`.
    package var name: String
    /// The error's message text.
    package var message: String

    /// Creates an error.
    package init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// `name: message`.
    package var description: String { "\(name): \(message)" }

    /// The `NearbyError` a failed call throws: timeouts as `.timeout`, bad arguments as `.invalidArgument`,
    /// everything else (no such service, object or method, refused) as `.mediumUnavailable`.
    package var nearbyError: NearbyError {
        let code: NearbyError.Code
        switch name {
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
            "org.freedesktop.DBus.Error.TimedOut":
            code = .timeout
        case "org.freedesktop.DBus.Error.InvalidArgs", "org.bluez.Error.InvalidArguments",
            "org.bluez.Error.InvalidLength":
            code = .invalidArgument
        default:
            code = .mediumUnavailable
        }
        return NearbyError(code, "D-Bus call failed: \(name): \(message)", cause: self)
    }
}

extension NearbyError {
    /// The D-Bus error name when this error came from a D-Bus error reply.
    package var dbusErrorName: String? {
        (cause as? DBusRemoteError)?.name
    }
}
