import Foundation
import Logging
import NearbyCore
import NearbySecurity
import NearbyTestSupport
import NearbyWire

/// A peer the test plays by hand on the in-memory air: it advertises, answers an engine's connection through its
/// own ``ConnectionStateMachine`` (so the handshake and encryption are real), and can then write any frame,
/// encrypted or in plaintext, when the test says so.
actor ScriptedPeer {
    static let endpointID = "EVIL"

    private let channel: any EndpointChannel
    private var machine: ConnectionStateMachine
    private var secure: D2DSecureChannel?
    /// Frames read once connected, decrypted.
    private(set) var received: [InboundFrame] = []
    /// Every frame read once encryption is on, in order: decrypted, or `nil` for one that did not decrypt (a
    /// plaintext frame, such as the goodbye on the prior channel after a bandwidth upgrade).
    private(set) var arrivals: [InboundFrame?] = []
    /// Whether the engine closed the channel.
    private(set) var closed = false
    private(set) var initiated = false

    private init(channel: any EndpointChannel, medium: MediumKind) {
        self.channel = channel
        machine = .incoming(
            local: .init(endpointID: Self.endpointID, endpointInfo: Array("scripted".utf8)), medium: medium)
    }

    /// Advertises on `air` over `medium`, has `engine` request a connection, and runs the handshake up to both
    /// sides' decision (neither has decided yet).
    static func connect(
        _ engine: NearbyEngine, on air: InMemoryMedium.Air, medium kind: MediumKind = .ble
    ) async throws -> ScriptedPeer {
        let (incoming, continuation) = AsyncStream<any EndpointChannel>.makeStream()
        let medium = InMemoryMedium(air: air, kind: kind)
        let advertising = try await medium.startAdvertising(
            AdvertisingRequest(
                serviceID: "com.example.test", endpointID: endpointID, endpointInfo: Array("scripted".utf8),
                pcp: Strategy.pointToPoint.pcp)
        ) { continuation.yield($0) }
        let port = try requireValue(advertising.port, "the in-memory advertisement has a port")
        try await engine.requestConnection(
            route: .tcp(hosts: ["memory"], port: port), medium: kind, peerEndpointID: endpointID,
            endpointInfo: Array("engine".utf8))
        var iterator = incoming.makeAsyncIterator()
        let arrived = await iterator.next()
        let channel = try requireValue(arrived, "the engine's channel")
        await advertising.stop()
        let peer = ScriptedPeer(channel: channel, medium: kind)
        await peer.startReading()
        _ = try await eventually("the handshake") { await peer.initiated ? true : nil }
        return peer
    }

    /// Accepts the connection (our CONNECTION_RESPONSE goes out in plaintext).
    func accept() async {
        await perform(machine.decide(accept: true))
    }

    /// Whether both sides accepted and our encryption is on.
    var isConnected: Bool { machine.isConnected && secure != nil }

    /// Writes `frame` as it is, unencrypted.
    func sendPlaintext(_ frame: ProtoOfflineFrame) async throws {
        try await channel.writeFrame(OfflineFrames.serialize(frame))
    }

    /// Writes `frame` encrypted with the connection's D2D context.
    func sendEncrypted(_ frame: ProtoOfflineFrame) async throws {
        guard secure != nil else { throw NearbyError(.outOfOrderApiCall, "encryption is not on yet") }
        let sealed = try secure!.encode(OfflineFrames.serialize(frame))
        try await channel.writeFrame(sealed)
    }

    /// Whether a KEEP_ALIVE ack with `sequenceNumber` arrived.
    func sawKeepAliveAck(_ sequenceNumber: UInt32) -> Bool {
        received.contains {
            if case .keepAlive(let keepAlive) = $0 { keepAlive.ack && keepAlive.seqNum == sequenceNumber } else { false }
        }
    }

    /// The bandwidth upgrade frames among ``arrivals``, in order, with `nil` for each frame that did not decrypt.
    func upgradeArrivals() -> [ProtoBandwidthUpgradeNegotiationFrame.EventType?] {
        arrivals.compactMap { frame -> ProtoBandwidthUpgradeNegotiationFrame.EventType?? in
            guard let frame else { return .some(nil) }
            if case .bandwidthUpgradeNegotiation(let negotiation) = frame { return .some(negotiation.eventType) }
            return nil
        }
    }

    func close() async {
        await channel.close()
    }

    private func startReading() {
        let channel = self.channel
        Task {
            while let body = try? await channel.readFrame() {
                await self.receive(body)
            }
            await self.markClosed()
        }
    }

    private func markClosed() { closed = true }

    private func receive(_ body: [UInt8]) async {
        var plaintext = body
        if secure != nil {
            guard let decoded = try? secure!.decode(body) else {
                arrivals.append(nil)
                return
            }
            plaintext = decoded
            arrivals.append(try? OfflineFrameParser.parse(decoded))
        }
        if machine.isConnected, let frame = try? OfflineFrameParser.parse(plaintext) { received.append(frame) }
        await perform(machine.receive(plaintext))
    }

    private func perform(_ actions: [ConnectionStateMachine.Action]) async {
        for action in actions {
            switch action {
            case .sendRaw(let bytes):
                try? await channel.writeFrame(bytes)
            case .sendFrame(let frame):
                if secure != nil { try? await sendEncrypted(frame) } else { try? await sendPlaintext(frame) }
            case .initiated:
                initiated = true
            case .enableEncryption(let context, let replay):
                secure = context
                for body in replay { await receive(body) }
            default:
                break
            }
        }
    }
}

/// An engine on in-memory air with an in-memory BLE medium and a counting in-memory Wi-Fi LAN upgrade medium.
struct LoneEngine {
    let engine: NearbyEngine
    let log: EventLog
    let air = InMemoryMedium.Air()
    /// The medium the engine connects to the scripted peer over (the prior channel of an upgrade).
    let firstMedium: InMemoryMedium
    let upgradeMedium: InMemoryUpgradeMedium

    init(timeouts: EndpointSession.Timeouts = .init()) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-core-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        upgradeMedium = InMemoryUpgradeMedium(air: air)
        firstMedium = InMemoryMedium(air: air, kind: .ble)
        engine = NearbyEngine(
            configuration: EngineConfiguration(
                serviceID: "com.example.test", strategy: .pointToPoint, receiveDirectory: directory,
                // No keep-alives of the engine's own during a test (the scripted peer's answers would be encrypted).
                keepAlive: KeepAliveSettings(interval: .seconds(300), timeout: .seconds(600)), timeouts: timeouts,
                logger: logger),
            mediums: [firstMedium, upgradeMedium], localEndpointID: "MINE")
        log = EventLog(engine)
    }

    /// The error the engine's connection with the scripted peer ended with.
    func disconnectionError() async throws -> NearbyError? {
        let event = try await log.wait {
            if case .endpoint(.disconnected(ScriptedPeer.endpointID, _)) = $0 { true } else { false }
        }
        guard case .endpoint(.disconnected(_, let error)) = event else { return nil }
        return error
    }
}

/// `value`, or a thrown ``TestTimeout`` naming what was missing.
func requireValue<T>(_ value: T?, _ what: String) throws -> T {
    guard let value else { throw TestTimeout(description: "missing \(what)") }
    return value
}
