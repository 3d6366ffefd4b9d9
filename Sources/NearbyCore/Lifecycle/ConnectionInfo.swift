import NearbyWire

/// What both sides learn once the handshake of a new connection is done, before either accepts.
public struct ConnectionInfo: Sendable, Hashable {
    /// The peer's endpoint ID.
    public var endpointID: String
    /// The peer's endpoint info (from its connection request, or from discovery for outgoing connections).
    public var endpointInfo: [UInt8]
    /// Whether the peer opened the connection to us.
    public var isIncoming: Bool
    /// The 4-digit code Android shows; equal on both sides when no one is in the middle.
    public var verificationDigits: String
    /// The 5-character token Google's Swift API shows.
    public var verificationToken: String
    /// The 32-byte UKEY2 authentication string both codes derive from.
    public var authenticationString: [UInt8]
    /// The medium the connection runs over.
    public var medium: MediumKind

    /// Creates connection info.
    public init(
        endpointID: String, endpointInfo: [UInt8], isIncoming: Bool, verificationDigits: String,
        verificationToken: String, authenticationString: [UInt8], medium: MediumKind
    ) {
        self.endpointID = endpointID
        self.endpointInfo = endpointInfo
        self.isIncoming = isIncoming
        self.verificationDigits = verificationDigits
        self.verificationToken = verificationToken
        self.authenticationString = authenticationString
        self.medium = medium
    }
}

/// Keep-alive timing for a connection.
public struct KeepAliveSettings: Sendable, Hashable {
    /// Send a keep-alive when nothing was written for this long.
    public var interval: Duration
    /// Drop the peer when nothing was read for this long.
    public var timeout: Duration

    /// The protocol defaults: 5 s interval, 30 s timeout.
    public static let `default` = KeepAliveSettings(interval: .seconds(5), timeout: .seconds(30))

    /// Creates settings; an interval that is not below the timeout falls back to the defaults.
    public init(interval: Duration, timeout: Duration) {
        if interval > .zero && timeout > interval {
            self.interval = interval
            self.timeout = timeout
        } else {
            self.interval = .seconds(5)
            self.timeout = .seconds(30)
        }
    }

    /// The settings a connection request asks for, or the defaults when its values are missing or inconsistent.
    public init(request: ProtoConnectionRequestFrame) {
        let interval = Int64(request.keepAliveIntervalMillis)
        let timeout = Int64(request.keepAliveTimeoutMillis)
        if request.hasKeepAliveIntervalMillis, request.hasKeepAliveTimeoutMillis, interval > 0, timeout > interval {
            self.init(interval: .milliseconds(interval), timeout: .milliseconds(timeout))
        } else {
            self = .default
        }
    }

    /// The interval in whole milliseconds, as sent on the wire.
    public var intervalMillis: Int32 { Self.millis(interval) }
    /// The timeout in whole milliseconds, as sent on the wire.
    public var timeoutMillis: Int32 { Self.millis(timeout) }

    static func millis(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
