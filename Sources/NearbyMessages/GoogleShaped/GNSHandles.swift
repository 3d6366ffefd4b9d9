import Foundation
import NearbyCore

/// What a Google-shaped handle runs: a publication or a subscription.
protocol GNSOperation: Sendable {
    func cancel() async
}

extension Publication: GNSOperation {}
extension Subscription: GNSOperation {}

/// The part the two handles share: start in the background, report the status, stop when released.
final class GNSHandleCore<Operation: GNSOperation>: Sendable {
    let status: GNSOperationStatusHandler?
    private let state = LockedValue<
        (task: Task<Void, Never>?, operation: Operation?, released: Bool, releasedStops: TaskScope?)
    >((nil, nil, false, nil))
    /// The app's answer to the permission request, if the start asks one; releasing the handle answers "no".
    private let permission = GNSPermissionAnswer()

    init(status: GNSOperationStatusHandler?) {
        self.status = status
    }

    var operation: Operation? { state.withLock { $0.operation } }

    func start(
        manager: MessageManager, permissionRequest: GNSPermissionRequestHandler?,
        _ body: @escaping @Sendable () async throws -> Operation
    ) {
        state.withLock { $0.releasedStops = manager.releasedStops }
        // Owner: this handle keeps it in `state.task` and never cancels it (releasing the handle lets the start
        // finish, then the operation is cancelled at once). It ends when `body` returns or throws, or at once when
        // consent is refused; a `permissionRequest` that has not called back yet is answered "no" when the handle
        // is stopped or released, so the task never waits for good.
        let task = Task { [weak self, status, permission] in
            status?(.starting)
            if let permissionRequest, !manager.isConsentGranted {
                permissionRequest { granted in permission.give(granted) }
                guard await permission.wait(), (try? manager.consent.setGranted(true)) != nil else {
                    manager.logger.debug("consent refused through the permission request handler")
                    status?(.inactive)
                    return
                }
            }
            do {
                let operation = try await body()
                guard let self, !self.state.withLock({ $0.released }) else {
                    await operation.cancel()
                    return
                }
                self.state.withLock { $0.operation = operation }
                status?(.active)
            } catch {
                manager.logger.debug("cannot start", metadata: ["error": "\(error)"])
                status?(.inactive)
            }
        }
        state.withLock { $0.task = task }
    }

    func stop() async {
        let operation = state.withLock { state -> Operation? in
            state.released = true
            defer { state.operation = nil }
            return state.operation
        }
        permission.give(false)
        guard let operation else { return }
        await operation.cancel()
        status?(.inactive)
    }

    deinit {
        let (operation, releasedStops) = state.withLock { state -> (Operation?, TaskScope?) in
            state.released = true
            return (state.operation, state.releasedStops)
        }
        permission.give(false)
        if let operation, let releasedStops {
            let status = self.status
            releasedStops.spawn {
                await operation.cancel()
                status?(.inactive)
            }
        }
    }
}

/// Google's `GNSPublication`: a running publication; releasing it unpublishes.
public final class GNSPublication: Sendable {
    private let core: GNSHandleCore<Publication>

    init(status: GNSOperationStatusHandler?) {
        core = GNSHandleCore(status: status)
    }

    func start(
        manager: MessageManager, permissionRequest: GNSPermissionRequestHandler?,
        _ body: @escaping @Sendable () async throws -> Publication
    ) {
        core.start(manager: manager, permissionRequest: permissionRequest, body)
    }

    /// The publication, once it runs.
    public var publication: Publication? { core.operation }

    /// Unpublishes now (releasing the handle does the same, later).
    public func cancel() async { await core.stop() }
}

/// Google's `GNSSubscription`: a running subscription; releasing it unsubscribes.
public final class GNSSubscription: Sendable {
    private let core: GNSHandleCore<Subscription>

    init(status: GNSOperationStatusHandler?) {
        core = GNSHandleCore(status: status)
    }

    func start(
        manager: MessageManager, permissionRequest: GNSPermissionRequestHandler?,
        _ body: @escaping @Sendable () async throws -> Subscription
    ) {
        core.start(manager: manager, permissionRequest: permissionRequest, body)
    }

    /// The subscription, once it runs.
    public var subscription: Subscription? { core.operation }

    /// Unsubscribes now (releasing the handle does the same, later).
    public func cancel() async { await core.stop() }
}
