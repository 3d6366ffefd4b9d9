import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyWire

/// A message being published. Publishing stops when ``cancel()`` is called, when the object is released, or when
/// the TTL runs out.
public final class Publication: Sendable {
    /// The message.
    public let message: Message
    /// The endpoint ID the message is advertised under.
    public var endpointID: String { connections.localEndpointID }
    /// The mediums actually advertising (none in discovery mode `.scan` alone).
    public let mediums: [MediumKind]

    private let connections: ConnectionManager
    private let advertiser: Advertiser
    /// The delivery to interested subscriptions, in discovery mode `.scan`.
    let delivery: PublicationDelivery?
    /// The serving of connection events (with the lingering subscribers' timers as its children) and the TTL
    /// timer: ``cancel()`` and `deinit` cancel them without waiting (the TTL timer's child calls ``cancel()``
    /// itself, so nothing here awaits the scope).
    let tasks: TaskScope
    /// The loop playing the audio token (Publication+Audio.swift); ``cancel()`` cancels and awaits it.
    let audioPlayback = LockedValue<Task<Void, Never>?>(nil)
    /// Where `deinit` hands the stopping of a publication released without ``cancel()``: its manager's.
    private let releasedStops: TaskScope
    private let stopped = LockedValue(false)

    /// How long a subscriber may stay connected after it received the message.
    static let lingerLimit: Duration = .seconds(10)

    private init(
        message: Message, connections: ConnectionManager, advertiser: Advertiser, delivery: PublicationDelivery?,
        mediums: [MediumKind], tasks: TaskScope, releasedStops: TaskScope
    ) {
        self.tasks = tasks
        self.releasedStops = releasedStops
        self.message = message
        self.delivery = delivery
        self.connections = connections
        self.advertiser = advertiser
        self.mediums = mediums
    }

    static func start(
        _ message: Message, options: PublishOptions, connections: ConnectionManager, owner: MessageManager
    ) async throws -> Publication {
        let audioToken = options.strategy.mediums.contains(.audio) ? AudioToken.random() : nil
        let (envelope, tagged) = AudioTag.advertisement(for: message, token: audioToken)
        let full = MessageEnvelope.message(message).bytes
        let advertised = options.plainEndpointInfo ? Array(message.content) : tagged
        var logger = owner.logger
        logger[metadataKey: "endpoint"] = "\(connections.localEndpointID)"
        logger[metadataKey: "message"] = "\(message)"
        let isLarge = if case .descriptor = envelope, !options.plainEndpointInfo { true } else { false }
        let clock = owner.clock

        // Plain endpoint info is only advertised: a delivery needs the envelope.
        let delivery = options.strategy.mode.contains(.scan) && !options.plainEndpointInfo
            ? PublicationDelivery(
                envelope: envelope.bytes, connections: connections,
                publicationBroadcasts: options.strategy.mode.contains(.broadcast),
                interval: options.redeliveryInterval, clock: clock, logger: logger)
            : nil
        // Subscribe to the events before advertising so no request is missed.
        let events = connections.events
        let tasks = TaskScope()
        tasks.spawn { [logger] in await withDiscardingTaskGroup { lingering in
            for await event in events {
                await delivery?.handle(event)
                switch event {
                case .connectionRequested(let id, let context, _, true):
                    if isLarge, case .fetchRequest? = try? MessageEnvelope.decode(context) {
                        logger.debug("subscriber fetches the message", metadata: ["peer": "\(id)"])
                        try? await connections.accept(id)
                    } else {
                        try? await connections.reject(id)
                    }
                case .stateChanged(let id, .connected, _) where isLarge:
                    do {
                        try await connections.send(Data(full), to: id)
                    } catch {
                        logger.warning("cannot send the message", metadata: ["peer": "\(id)", "error": "\(error)"])
                        await connections.disconnect(from: id)
                    }
                case .transferUpdate(let id, _, .success, _, true, _, _):
                    // The subscriber disconnects once it has the message; a peer that lingers would hold the one
                    // point-to-point connection, so it is dropped after a while (unless the publication stops
                    // first: its connections close then anyway).
                    lingering.addTask {
                        do { try await clock.sleep(for: Self.lingerLimit) } catch { return }
                        await connections.disconnect(from: id)
                    }
                default:
                    break
                }
            }
        } }

        let advertiser = Advertiser(connectionManager: connections)
        var sessions: [any AdvertisingSession] = []
        do {
            if options.strategy.mode.contains(.broadcast) {
                sessions = try await advertiser.startAdvertising(using: Data(advertised))
            }
            try await delivery?.start()
        } catch {
            tasks.cancel()
            await connections.shutdown()
            if let nearby = error as? NearbyError, nearby.code == .mediumUnavailable { owner.onMDNSProblem(nearby) }
            throw error
        }
        for session in sessions { owner.reportAdvertising(session) }
        logger.debug(
            "publishing", metadata: ["mediums": "\(sessions.map(\.medium))", "inline": "\(!isLarge)"])
        let publication = Publication(
            message: message, connections: connections, advertiser: advertiser, delivery: delivery,
            mediums: sessions.map(\.medium), tasks: tasks, releasedStops: owner.releasedStops)
        if let audioToken { publication.startAudio(audioToken, owner: owner) }
        if let ttl = options.ttl {
            let onExpired = options.onExpired
            tasks.spawn { [weak publication, logger] in
                do { try await clock.sleep(for: ttl) } catch { return }
                guard let publication else { return }
                logger.debug("publication expired")
                await publication.cancel()
                onExpired?()
            }
        }
        return publication
    }

    /// Whether the publication has stopped.
    public var isCancelled: Bool { stopped.withLock { $0 } }

    /// Stops publishing: the advertisement is withdrawn (subscribers see the message lost) and connections close.
    public func cancel() async {
        guard stopped.withLock({ wasStopped in defer { wasStopped = true }; return !wasStopped }) else { return }
        tasks.cancel()
        audioPlayback.withLock { $0 }?.cancel()
        await waitForAudioToStop()
        await delivery?.stop()
        await advertiser.stopAdvertisingAndWait()
        await connections.shutdown()
    }

    deinit {
        tasks.cancel()
        audioPlayback.withLock { $0 }?.cancel()
        guard !stopped.withLock({ $0 }) else { return }
        let connections = self.connections
        let advertiser = self.advertiser
        releasedStops.spawn {
            await advertiser.stopAdvertisingAndWait()
            await connections.shutdown()
        }
    }
}
