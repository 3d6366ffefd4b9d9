import Foundation

/// One request a client sends to the service: one JSON object on one line (`docs/MESSAGES-SERVICE.md`).
///
/// ```json
/// {"id":1,"op":"publish","service_id":"com.example","content_hex":"6869","namespace":"","type":"","background":true}
/// ```
///
/// Fields an operation does not use are left out (`nil`).
public struct ServiceRequest: Codable, Sendable, Hashable {
    /// What the request asks for.
    public enum Operation: String, Codable, Sendable, Hashable {
        /// Publish a message (``serviceID``, ``contentHex``, ``namespace``, ``type``, ``ttl``, ``background``).
        case publish
        /// Stop the publication named by ``handle``.
        case unpublish
        /// Subscribe (``serviceID``, filter ``namespace``/``type``, ``ttl``, ``background``); found/lost events of
        /// the subscription come on this connection.
        case subscribe
        /// Stop the subscription named by ``handle``.
        case unsubscribe
        /// List the running publications and subscriptions.
        case list
        /// Receive the events of every subscription (or of the one named by ``handle``) on this connection.
        case watch
        /// Check that the service answers.
        case ping
    }

    /// Chosen by the client; the response carries it back.
    public var id: Int
    /// What the request asks for.
    public var op: Operation
    /// The service ID of a publication or subscription.
    public var serviceID: String?
    /// The content of a published message, as hex bytes.
    public var contentHex: String?
    /// The namespace of a published message (default empty), or the namespace a subscription filters on (`nil`:
    /// every message).
    public var namespace: String?
    /// The type of a published message (default empty), or the type a subscription filters on (`nil`: every type
    /// of the namespace).
    public var type: String?
    /// The time to live in seconds; `nil` lasts until stopped.
    public var ttl: Double?
    /// Whether the publication or subscription outlives the connection and the service (it is saved in the state
    /// file and restored when the service starts); default false, it ends when the connection closes.
    public var background: Bool?
    /// The publication or subscription `unpublish`, `unsubscribe` and `watch` name.
    public var handle: String?

    /// Creates a request.
    public init(
        id: Int, op: Operation, serviceID: String? = nil, contentHex: String? = nil, namespace: String? = nil,
        type: String? = nil, ttl: Double? = nil, background: Bool? = nil, handle: String? = nil
    ) {
        self.id = id
        self.op = op
        self.serviceID = serviceID
        self.contentHex = contentHex
        self.namespace = namespace
        self.type = type
        self.ttl = ttl
        self.background = background
        self.handle = handle
    }

    enum CodingKeys: String, CodingKey {
        case id, op, namespace, type, ttl, background, handle
        case serviceID = "service_id"
        case contentHex = "content_hex"
    }
}

/// The service's answer to one request: `{"id":1,"ok":true,"handle":"pub-…"}` or
/// `{"id":1,"ok":false,"error":{"code":"invalidArgument","message":"…"}}`.
public struct ServiceResponse: Codable, Sendable, Hashable {
    /// The request's ``ServiceRequest/id``; `nil` when the request line could not be read at all.
    public var id: Int?
    /// Whether the request succeeded.
    public var ok: Bool
    /// The publication or subscription a `publish` or `subscribe` made.
    public var handle: String?
    /// Why the request failed.
    public var error: ServiceFailure?
    /// What `list` found.
    public var entries: [ServiceEntry]?

    /// Creates a response.
    public init(
        id: Int?, ok: Bool = true, handle: String? = nil, error: ServiceFailure? = nil, entries: [ServiceEntry]? = nil
    ) {
        self.id = id
        self.ok = ok
        self.handle = handle
        self.error = error
        self.entries = entries
    }

    /// A failed response carrying `error`'s code and message.
    public static func failure(_ id: Int?, _ error: ServiceFailure) -> ServiceResponse {
        ServiceResponse(id: id, ok: false, error: error)
    }
}

/// A failure as the protocol carries it: a `NearbyError` code name and its message.
public struct ServiceFailure: Codable, Sendable, Hashable, Error, CustomStringConvertible {
    /// The `NearbyError.Code` raw value (`invalidArgument`, `messageTooLarge`, …).
    public var code: String
    /// A one-line explanation for people.
    public var message: String

    /// Creates a failure.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

/// A publication or subscription the service runs, as `list` reports it and the state file saves it.
public struct ServiceEntry: Codable, Sendable, Hashable {
    /// Publication or subscription.
    public enum Kind: String, Codable, Sendable, Hashable {
        /// A published message.
        case publication
        /// A subscription.
        case subscription
    }

    /// The name clients stop it by (`pub-…` or `sub-…`); stable across restarts of the service.
    public var handle: String
    /// Publication or subscription.
    public var kind: Kind
    /// The service ID.
    public var serviceID: String
    /// A publication's namespace, or a subscription's filter namespace (`nil`: every message).
    public var namespace: String?
    /// A publication's type, or a subscription's filter type (`nil`: every type).
    public var type: String?
    /// A publication's content as hex bytes.
    public var contentHex: String?
    /// Whether it outlives its connection and is restored when the service starts.
    public var background: Bool
    /// When its TTL runs out; `nil` lasts until stopped.
    public var expiresAt: Date?

    /// Creates an entry.
    public init(
        handle: String, kind: Kind, serviceID: String, namespace: String? = nil, type: String? = nil,
        contentHex: String? = nil, background: Bool, expiresAt: Date? = nil
    ) {
        self.handle = handle
        self.kind = kind
        self.serviceID = serviceID
        self.namespace = namespace
        self.type = type
        self.contentHex = contentHex
        self.background = background
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case handle, kind, namespace, type, background
        case serviceID = "service_id"
        case contentHex = "content_hex"
        case expiresAt = "expires_at"
    }
}
