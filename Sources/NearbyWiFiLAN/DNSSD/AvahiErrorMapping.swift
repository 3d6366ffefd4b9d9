import CAvahiClient
import NearbyWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Turns Avahi error numbers (`AVAHI_ERR_*`) into `NearbyError`s.
enum AvahiErrorMapping {
    /// The error for Avahi error number `code`, raised while doing `action` (a short gerund phrase).
    static func nearbyError(_ code: Int32, while action: String) -> NearbyError {
        let text = String(cString: avahi_strerror(code))
        switch Int(code) {
        case AVAHI_ERR_NO_DAEMON:
            return NearbyError(
                .mediumUnavailable,
                "avahi-daemon is not running: \(text) (while \(action); D-Bus system bus \(systemBusDescription))"
            )
        case AVAHI_ERR_DISCONNECTED, AVAHI_ERR_DBUS_ERROR, AVAHI_ERR_BAD_STATE:
            return NearbyError(.mediumUnavailable, "lost the connection to avahi-daemon: \(text) (while \(action))")
        case AVAHI_ERR_INVALID_SERVICE_NAME, AVAHI_ERR_INVALID_SERVICE_TYPE, AVAHI_ERR_INVALID_PORT,
            AVAHI_ERR_INVALID_KEY, AVAHI_ERR_INVALID_RECORD, AVAHI_ERR_INVALID_HOST_NAME,
            AVAHI_ERR_INVALID_DOMAIN_NAME, AVAHI_ERR_INVALID_FLAGS, AVAHI_ERR_INVALID_SERVICE_SUBTYPE:
            return NearbyError(.invalidArgument, "avahi-daemon rejected the request: \(text) (while \(action))")
        case AVAHI_ERR_COLLISION:
            return collision(action)
        default:
            return NearbyError(.unknown, "avahi error \(code): \(text) (while \(action))")
        }
    }

    /// The error for a service name that another service on the network (or this host) already uses.
    static func collision(_ action: String) -> NearbyError {
        NearbyError(.unknown, "name collision: another service already uses this name (while \(action))")
    }

    /// The error that ends everything when the client connection to the daemon fails.
    static func daemonLost(_ code: Int32) -> NearbyError {
        let text = String(cString: avahi_strerror(code))
        return NearbyError(.mediumUnavailable, "lost the connection to avahi-daemon: \(text)")
    }

    private static var systemBusDescription: String {
        if let address = getenv("DBUS_SYSTEM_BUS_ADDRESS") {
            return "at \(String(cString: address))"
        }
        return "at its default address"
    }
}
