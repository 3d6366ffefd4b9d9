import ArgumentParser
import Foundation
import NearbyMessagesService
import NearbyWire

/// `nearby service publish`: publish through the service.
struct ServicePublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish a message through the service: until interrupted, or with --background until unpublished.")

    @OptionGroup var socketOptions: ServiceSocketOptions

    @Option(name: .customLong("service-id"), help: "The service ID both sides use.")
    var serviceID: String

    @OptionGroup var contentOptions: MessageContentOptions

    @Option(help: "The message namespace (default: the service's own, empty).")
    var namespace: String?

    @Option(help: "The message type (default: empty).")
    var type: String?

    @Option(help: "Stop after this many seconds (default: until unpublished).")
    var ttl: Double?

    @Flag(help: "Keep publishing after this command exits and across restarts of the service; print the handle and exit.")
    var background = false

    func validate() throws {
        if let ttl, ttl <= 0 { throw ValidationError("--ttl must be positive") }
    }

    func run() async throws {
        let contentHex = Hex.encode(try contentOptions.content())
        let request = ServiceRequest(
            id: 0, op: .publish, serviceID: serviceID, contentHex: contentHex, namespace: namespace ?? "", type: type ?? "",
            ttl: ttl,
            background: background)
        try await runAttached(socketOptions, request, what: "publish", started: "published")
    }
}

/// `nearby service subscribe`: subscribe through the service and print its events.
struct ServiceSubscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Subscribe through the service and print found/lost messages; with --background, until unsubscribed.")

    @OptionGroup var socketOptions: ServiceSocketOptions

    @Option(name: .customLong("service-id"), help: "The service ID both sides use.")
    var serviceID: String

    @Option(help: "Only messages of this namespace (with --type: and this type).")
    var namespace: String?

    @Option(help: "Only messages of this type (default namespace when --namespace is omitted).")
    var type: String?

    @Option(help: "Stop after this many seconds (default: until unsubscribed).")
    var ttl: Double?

    @Option(help: "Exit after this many seconds (default: run until interrupted).")
    var timeout: Double?

    @Flag(help: "Keep subscribing after this command exits and across restarts of the service; print the handle and exit.")
    var background = false

    func validate() throws {
        if let ttl, ttl <= 0 { throw ValidationError("--ttl must be positive") }
    }

    func run() async throws {
        let request = ServiceRequest(
            id: 0, op: .subscribe, serviceID: serviceID, namespace: namespace, type: type, ttl: ttl, background: background)
        try await runAttached(socketOptions, request, what: "subscribe", started: "subscribed", timeout: timeout)
    }
}

/// `nearby service watch`: print the events of every subscription of the service (or of one).
struct ServiceWatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Print the found/lost messages of the service's subscriptions.")

    @OptionGroup var socketOptions: ServiceSocketOptions

    @Option(help: "Only this subscription.")
    var handle: String?

    @Option(help: "Exit after this many seconds (default: run until interrupted).")
    var timeout: Double?

    func run() async throws {
        try await runAttached(
            socketOptions, ServiceRequest(id: 0, op: .watch, handle: handle), what: "watch", started: "watching",
            timeout: timeout)
    }
}

/// `nearby service list`: what the service runs.
struct ServiceListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the service's publications and subscriptions.")

    @OptionGroup var socketOptions: ServiceSocketOptions

    func run() async throws {
        let output = EventOutput(json: socketOptions.json)
        let client = try await socketOptions.connect()
        let response = try await sendRequest(client, ServiceRequest(id: 0, op: .list), what: "list")
        for entry in response.entries ?? [] {
            let label = [entry.namespace, entry.type].compactMap { $0 }.joined(separator: "/")
            let content = entry.contentHex.flatMap { try? Hex.decode($0) }.map { String(decoding: $0, as: UTF8.self) }
            output.event(
                entry.kind.rawValue, ServiceEntryFields(entry),
                human: "\(entry.handle) \(entry.kind.rawValue) \(entry.serviceID) \(label) \(content ?? "")"
                    + (entry.background ? " (background)" : ""))
        }
        await client.close()
    }
}

/// `nearby service unpublish HANDLE`.
struct ServiceUnpublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unpublish", abstract: "Stop a publication of the service.")

    @OptionGroup var socketOptions: ServiceSocketOptions

    @Argument(help: "The publication's handle (pub-…).")
    var handle: String

    func run() async throws {
        try await stopItem(socketOptions, ServiceRequest(id: 0, op: .unpublish, handle: handle), event: "unpublished")
    }
}

/// `nearby service unsubscribe HANDLE`.
struct ServiceUnsubscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unsubscribe", abstract: "Stop a subscription of the service.")

    @OptionGroup var socketOptions: ServiceSocketOptions

    @Argument(help: "The subscription's handle (sub-…).")
    var handle: String

    func run() async throws {
        try await stopItem(socketOptions, ServiceRequest(id: 0, op: .unsubscribe, handle: handle), event: "unsubscribed")
    }
}

// MARK: - Shared client steps

/// Sends `request`; a failed response becomes a `CLIFailure` ("cannot WHAT: message").
private func sendRequest(_ client: MessageServiceClient, _ request: ServiceRequest, what: String) async throws -> ServiceResponse {
    let response: ServiceResponse
    do { response = try await client.send(request) } catch { throw CLIFailure("cannot \(what): \(error.message)") }
    guard response.ok else { throw CLIFailure("cannot \(what): \(response.error?.message ?? "the service refused")") }
    return response
}

/// Sends `request`, prints `started` with its handle, then (unless it is a background request) prints the events
/// that come on the connection until SIGINT/SIGTERM, `timeout`, or the service closing the connection.
private func runAttached(
    _ options: ServiceSocketOptions, _ request: ServiceRequest, what: String, started: String, timeout: Double? = nil
) async throws {
    let output = EventOutput(json: options.json)
    let client = try await options.connect()
    // Subscriptions that ended in the service (TTL, unsubscribed elsewhere), for the command following only one.
    let (endedHandles, endedHandle) = AsyncStream<String>.makeStream()
    let printing = Task {
        for await event in client.events {
            if event.isSubscriptionEnd {
                output.event(
                    event.event, ServiceSubscriptionEndedFields(event),
                    human: "subscription \(event.subscription) ended: \(event.reason ?? "")")
                endedHandle.yield(event.subscription)
                continue
            }
            output.event(
                event.event, ServiceMessageEventFields(event),
                human: "\(event.kind?.rawValue ?? event.event): \(event.namespace)/\(event.type): \(event.message.isEmpty ? event.messageHex : event.message)")
        }
    }
    let response = try await sendRequest(client, request, what: what)
    output.event(
        started, ServiceHandleEvent(handle: response.handle, background: request.background ?? false),
        human: "\(started)\(response.handle.map { " \($0)" } ?? "")\(request.background == true ? " in the background" : "")")
    if request.background == true {
        await client.close()
        return
    }
    // One signal waiter only: a second trap of the same signals raced with the first, and a publisher then
    // sometimes ignored SIGTERM (seen once in CI).
    let terminated: @Sendable () async -> CLIFailure? = {
        _ = await Signals.waitForTermination()
        return nil
    }
    let closed: @Sendable () async -> CLIFailure? = {
        await printing.value
        return CLIFailure("the service closed the connection")
    }
    // `subscribe`, or `watch` of one handle: done (exit 0) when that subscription ends in the service.
    let followed = request.op == .subscribe || request.op == .watch ? response.handle ?? request.handle : nil
    let ended: @Sendable () async -> CLIFailure? = {
        // Ends only by that event or by cancellation (another branch won).
        for await handle in endedHandles where handle == followed { return nil }
        return nil
    }
    let failure: CLIFailure?
    if let timeout {
        let timedOut: @Sendable () async -> CLIFailure? = {
            try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
            return nil
        }
        failure = await firstOf(terminated, closed, ended, timedOut)
    } else {
        failure = await firstOf(terminated, closed, ended)
    }
    await client.close()
    printing.cancel()
    if let failure { throw failure }
}

/// Sends an unpublish or unsubscribe and prints `event` with the handle.
private func stopItem(_ options: ServiceSocketOptions, _ request: ServiceRequest, event: String) async throws {
    let output = EventOutput(json: options.json)
    let client = try await options.connect()
    let response = try await sendRequest(client, request, what: request.op.rawValue)
    output.event(event, ServiceHandleEvent(handle: response.handle, background: nil), human: "\(event) \(response.handle ?? "")")
    await client.close()
}
