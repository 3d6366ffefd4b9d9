import ArgumentParser
import Foundation
import NearbyCore
import NearbyMessages
import NearbyMessagesService
import NearbyWire

/// `--via-service [--socket PATH]` of `nearby publish` and `nearby subscribe`: run through a running
/// `nearby service` (its mediums and consent) instead of in this process.
struct ViaServiceOptions: ParsableArguments {
    @Flag(
        name: .customLong("via-service"),
        help: "Publish or subscribe through the running `nearby service` (its mediums and consent) instead of in this process.")
    var viaService = false

    @Option(help: "With --via-service: the service's Unix socket (default: $XDG_RUNTIME_DIR/nearby/service.sock).")
    var socket: String?

    /// Refuses the options the service decides for itself, and `--socket` without `--via-service`.
    func check(_ common: CommonOptions, inProcessOnly: [(String, Bool)]) throws {
        guard viaService else {
            if socket != nil { throw ValidationError("--socket needs --via-service") }
            return
        }
        let refused = [("--medium", !common.mediums.isEmpty), ("--hci", common.hci != nil)] + inProcessOnly
        if let (name, _) = refused.first(where: { $0.1 }) {
            throw ValidationError("\(name) cannot be used with --via-service: the service runs with its own mediums and consent")
        }
    }

    /// Connects to the service as `serviceID`; `lost` gets the error if the connection is lost later.
    func connect(serviceID: String, lost: AsyncStream<NearbyError>.Continuation) async throws -> ServiceMessageManager {
        do {
            return try await ServiceMessageManager.connect(
                serviceID: serviceID, socketPath: socket.map { URL(fileURLWithPath: $0) } ?? ServicePaths.defaultSocket,
                onDisconnect: { lost.yield($0) })
        } catch {
            throw CLIFailure(error.message)
        }
    }
}

/// `publishing` through the service: the fields of the in-process event that apply (no endpoint ID or mediums:
/// those are the service's), plus the publication's handle.
struct ServicePublishingEvent: Encodable {
    var handle: String
    var size: Int
    var namespace: String
    var type: String
    var viaService = true
}

extension PublishCommand {
    /// `nearby publish --via-service`: publishes through the service until SIGINT/SIGTERM or the TTL; exit 1 when
    /// no service runs or it goes away.
    func runViaService() async throws {
        let output = EventOutput(json: common.json)
        let lost = AsyncStream<NearbyError>.makeStream()
        let nearby = try await via.connect(serviceID: common.serviceID, lost: lost.continuation)
        let message = Message(
            content: Data(try contentOptions.content()), namespace: messageOptions.namespace ?? "", type: messageOptions.type ?? "")
        let publication: ServicePublication
        do {
            publication = try await nearby.publish(
                message, options: ServicePublishOptions(ttl: .milliseconds(Int(ttl * 1000))))
        } catch {
            await nearby.close()
            throw CLIFailure("cannot publish: \(error.message)")
        }
        output.event(
            "publishing",
            ServicePublishingEvent(
                handle: publication.handle, size: message.content.count, namespace: message.namespace, type: message.type),
            human: "publishing \(message.content.count) bytes through the service as \(publication.handle)")
        let ttl = self.ttl
        let failure = await firstOf(
            { () async -> CLIFailure? in
                for await error in lost.stream { return CLIFailure("lost the nearby service: \(error.message)") }
                return nil
            },
            { _ = await Signals.waitForTermination(); return nil },
            { try? await Task.sleep(for: .milliseconds(Int(ttl * 1000))); return nil })
        await nearby.close()  // the publication is not background: it ends with the connection
        if let failure { throw failure }
    }
}

extension SubscribeCommand {
    /// `nearby subscribe --via-service`: prints the service's found/lost messages as the in-process command does,
    /// until SIGINT/SIGTERM or `--timeout`; exit 1 when no service runs or it goes away.
    func runViaService() async throws {
        let output = EventOutput(json: common.json)
        var filter = MessageFilter()
        if namespace != nil || type != nil {
            do { filter = try MessageFilter.namespacedType(namespace ?? "", type) } catch { throw ValidationError(error.message) }
        }
        let lost = AsyncStream<NearbyError>.makeStream()
        let nearby = try await via.connect(serviceID: common.serviceID, lost: lost.continuation)
        let subscription: ServiceSubscription
        do {
            subscription = try await nearby.subscribe(options: ServiceSubscribeOptions(filter: filter))
        } catch {
            await nearby.close()
            throw CLIFailure("cannot subscribe: \(error.message)")
        }
        let events = subscription.events
        let timeout = self.timeout
        let failure = await firstOf(
            { () async -> CLIFailure? in
                do {
                    for try await event in events {
                        let message = event.message
                        output.event(
                            "message_\(event.kind.rawValue)", MessageEventFields(message),
                            human: "\(event.kind): \(message.namespace)/\(message.type): \(message.text ?? Hex.encode(message.content))")
                    }
                    return nil
                } catch {
                    return CLIFailure("lost the nearby service: \((error as? NearbyError)?.message ?? "\(error)")")
                }
            },
            { () async -> CLIFailure? in
                if let timeout {
                    try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                } else {
                    _ = await Signals.waitForTermination()
                }
                return nil
            })
        await nearby.close()
        if let failure { throw failure }
    }
}
