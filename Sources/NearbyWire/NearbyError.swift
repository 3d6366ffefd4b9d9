/// The one error type of swift-nearby.
///
/// Every layer reports failures as a `NearbyError`: a ``Code`` that says what kind of failure it is (and that new
/// versions may extend without breaking callers), a human-readable ``message``, and an optional underlying
/// ``cause``. Match on ``code``; show ``message`` to people.
public struct NearbyError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in any release, so `switch` with a `default`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The stable, lower-camel-case name of the code.
        public let rawValue: String

        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The code's name.
        public var description: String { rawValue }

        /// A failure with no more specific code.
        public static let unknown = Code(rawValue: "unknown")
        /// An argument given by the caller is out of range or malformed.
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// A length prefix is negative, too large, or the stream ended inside a frame.
        public static let invalidFraming = Code(rawValue: "invalidFraming")
        /// Bytes that should hold a protobuf message do not parse as one.
        public static let malformedMessage = Code(rawValue: "malformedMessage")
        /// A frame parsed but breaks a protocol rule (missing field, bad value, wrong type for the state).
        public static let invalidFrame = Code(rawValue: "invalidFrame")
        /// The UKEY2 handshake failed; the peer may have been sent an alert.
        public static let handshakeFailed = Code(rawValue: "handshakeFailed")
        /// The peer sent a UKEY2 alert.
        public static let handshakeAlert = Code(rawValue: "handshakeAlert")
        /// A SecureMessage failed its HMAC check or could not be decrypted.
        public static let authenticationFailed = Code(rawValue: "authenticationFailed")
        /// A SecureMessage carried a sequence number other than the next expected one (replay, gap, reorder).
        public static let sequenceMismatch = Code(rawValue: "sequenceMismatch")
        /// An advertisement, service name or TXT record cannot be decoded.
        public static let invalidAdvertisement = Code(rawValue: "invalidAdvertisement")
        /// An API was called in a state that does not allow it.
        public static let outOfOrderApiCall = Code(rawValue: "outOfOrderApiCall")
        /// The endpoint is not known, or not connected.
        public static let endpointUnknown = Code(rawValue: "endpointUnknown")
        /// A connection to the endpoint exists or is being made already (Google's `kAlreadyConnectedToEndpoint`).
        public static let alreadyConnectedToEndpoint = Code(rawValue: "alreadyConnectedToEndpoint")
        /// Reading from or writing to an endpoint failed.
        public static let endpointIoError = Code(rawValue: "endpointIoError")
        /// The connection was rejected by one side.
        public static let connectionRejected = Code(rawValue: "connectionRejected")
        /// A medium cannot be used: its daemon is not running, its hardware is missing or unusable.
        public static let mediumUnavailable = Code(rawValue: "mediumUnavailable")
        /// An operation did not complete in time.
        public static let timeout = Code(rawValue: "timeout")
    }

    /// What kind of failure this is.
    public var code: Code
    /// A one-line explanation for people.
    public var message: String
    /// The lower-level error that caused this one, if any.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// `code: message`, followed by the cause when there is one.
    public var description: String {
        if let cause {
            return "\(code): \(message) (cause: \(cause))"
        }
        return "\(code): \(message)"
    }
}
