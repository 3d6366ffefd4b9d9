import Foundation
import NearbyMessages
import NearbyWire

extension MessageService {
    /// Carries out one request of `client` and returns the response. Events of a new subscription may reach the
    /// client's sink before this returns.
    public func handle(_ request: ServiceRequest, from client: ClientID) async -> ServiceResponse {
        do {
            return try await perform(request, from: client)
        } catch {
            logger.debug("request failed", metadata: ["op": "\(request.op)", "error": "\(error)"])
            return .failure(request.id, ServiceFailure(code: error.code.rawValue, message: error.message))
        }
    }

    private func perform(_ request: ServiceRequest, from client: ClientID) async throws(NearbyError) -> ServiceResponse {
        switch request.op {
        case .ping:
            return ServiceResponse(id: request.id)
        case .list:
            return ServiceResponse(id: request.id, entries: entries)
        case .publish, .subscribe:
            let entry = try makeEntry(request)
            try await start(entry, owner: client)
            if entry.background {
                saved.upsert(entry)
                if let error = persist() {
                    await stop(entry.handle)
                    throw error
                }
            }
            return ServiceResponse(id: request.id, handle: entry.handle)
        case .unpublish, .unsubscribe:
            let kind: ServiceEntry.Kind = request.op == .unpublish ? .publication : .subscription
            guard let handle = request.handle, items[handle]?.entry.kind == kind else {
                throw NearbyError(.invalidArgument, "no \(kind) named \(request.handle ?? "(missing handle)")")
            }
            await stop(handle, reason: .unsubscribed)
            return ServiceResponse(id: request.id, handle: handle)
        case .watch:
            return try await watch(request, from: client)
        }
    }

    /// Makes `client` follow every subscription (or `request.handle`, in addition to those it already follows),
    /// first sending it what they have found.
    ///
    /// What they have found may be many large messages, so it is sent one event at a time, each once the client's
    /// output has room (``connect(_:waitForRoom:)``); the subscriptions go on meanwhile. Until it has caught up the
    /// client does not follow them yet: each round sends the next found message not yet sent, and the last round,
    /// with nothing left to send, reports lost what was sent and is no longer found, then starts following, all
    /// without suspending, so nothing found or lost meanwhile is missed or reported twice.
    private func watch(_ request: ServiceRequest, from client: ClientID) async throws(NearbyError) -> ServiceResponse {
        if let handle = request.handle, items[handle]?.entry.kind != .subscription {
            throw NearbyError(.invalidArgument, "no subscription named \(handle)")
        }
        guard let first = clients[client] else { throw NearbyError(.outOfOrderApiCall, "the client is not connected") }
        if request.handle.map(first.follows) ?? first.watchingAll { return ServiceResponse(id: request.id) }
        var sent: [String: Set<Message>] = [:]
        while true {
            if let waitForRoom = clients[client]?.waitForRoom { await waitForRoom() }
            guard let sink = clients[client]?.sink else {
                throw NearbyError(.outOfOrderApiCall, "the client is not connected")
            }
            if request.handle.map({ items[$0]?.entry.kind != .subscription }) == true {
                throw NearbyError(.invalidArgument, "no subscription named \(request.handle ?? "")")
            }
            if let (handle, serviceID, message) = nextToReplay(request.handle, to: client, sent: sent) {
                sink(ServiceEvent(.found, message, subscription: handle, serviceID: serviceID))
                sent[handle, default: []].insert(message)
                continue
            }
            for (handle, messages) in sent {
                guard let item = items[handle], let found = item.subscription?.foundMessages else { continue }
                for message in messages where !found.contains(message) {
                    sink(ServiceEvent(.lost, message, subscription: handle, serviceID: item.entry.serviceID))
                }
            }
            if let handle = request.handle {
                clients[client]?.watching.insert(handle)
            } else {
                clients[client]?.watchingAll = true
            }
            return ServiceResponse(id: request.id)
        }
    }

    /// The next found message of the subscriptions a `watch` follows that `client` was not sent yet.
    private func nextToReplay(
        _ only: String?, to client: ClientID, sent: [String: Set<Message>]
    ) -> (handle: String, serviceID: String, message: Message)? {
        for handle in order where only == nil || only == handle {
            guard let item = items[handle], let subscription = item.subscription, item.owner != client,
                clients[client]?.follows(handle) != true
            else { continue }
            let already = sent[handle] ?? []
            if let message = subscription.foundMessages.first(where: { !already.contains($0) }) {
                return (handle, item.entry.serviceID, message)
            }
        }
        return nil
    }

    /// The entry a `publish` or `subscribe` request describes, checked.
    private func makeEntry(_ request: ServiceRequest) throws(NearbyError) -> ServiceEntry {
        guard let serviceID = request.serviceID, !serviceID.isEmpty else {
            throw NearbyError(.invalidArgument, "\(request.op) needs a service_id")
        }
        guard serviceID.utf8.count <= ServiceEntry.maximumServiceIDLength else {
            throw NearbyError(
                .invalidArgument, "a service_id has at most \(ServiceEntry.maximumServiceIDLength) bytes, got \(serviceID.utf8.count)")
        }
        if let ttl = request.ttl, !(ttl > 0 && ttl <= 86_400 * 365) {
            throw NearbyError(.invalidArgument, "ttl must be a positive number of seconds, got \(ttl)")
        }
        let expiresAt = request.ttl.map { now().addingTimeInterval($0) }
        let prefix = request.op == .publish ? "pub" : "sub"
        let handle = "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
        let background = request.background ?? false
        if request.op == .publish {
            guard let contentHex = request.contentHex else { throw NearbyError(.invalidArgument, "publish needs content_hex") }
            let content: [UInt8]
            do { content = try Hex.decode(contentHex) } catch {
                throw NearbyError(.invalidArgument, "content_hex: \(error.message)")
            }
            try Message(content: Data(content), namespace: request.namespace ?? "", type: request.type ?? "").validate()
            return ServiceEntry(
                handle: handle, kind: .publication, serviceID: serviceID, namespace: request.namespace ?? "",
                type: request.type ?? "", contentHex: Hex.encode(content), background: background, expiresAt: expiresAt)
        }
        if request.namespace != nil || request.type != nil {
            _ = try MessageFilter.namespacedType(request.namespace ?? "", request.type)
        }
        return ServiceEntry(
            handle: handle, kind: .subscription, serviceID: serviceID, namespace: request.namespace, type: request.type,
            background: background, expiresAt: expiresAt)
    }
}
