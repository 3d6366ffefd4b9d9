import NearbyMessages
import NearbyWire

/// A publication running in the service, made by ``ServiceMessageManager/publish(_:options:)``.
///
/// Without ``ServicePublishOptions/background`` it stops when its manager's connection closes; a background one
/// runs until ``cancel()`` (or `nearby service unpublish HANDLE`, or its TTL), across restarts of the service.
public final class ServicePublication: Sendable {
    /// The service's name for it (`pub-…`), stable across restarts of the service.
    public let handle: String
    /// The published message.
    public let message: Message
    /// The options it was made with.
    public let options: ServicePublishOptions
    private let manager: ServiceMessageManager

    init(handle: String, message: Message, options: ServicePublishOptions, manager: ServiceMessageManager) {
        self.handle = handle
        self.message = message
        self.options = options
        self.manager = manager
    }

    /// Stops the publication (a background one is also removed from the service's state file).
    /// - Throws: `NearbyError` `.endpointIoError` when the connection to the service is gone (a publication that is
    ///   not background has then stopped already); `.invalidArgument` when the service no longer runs it (its TTL
    ///   ran out, or another client unpublished it).
    public func cancel() async throws(NearbyError) {
        try await manager.unpublish(handle: handle)
    }
}
