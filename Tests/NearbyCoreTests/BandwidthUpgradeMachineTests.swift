import NearbyCore
import NearbyWire
import Testing

@Suite("Bandwidth upgrade machine", .timeLimit(.minutes(5)))
struct BandwidthUpgradeMachineTests {
    static let path = OfflineFrames.wifiLanUpgradePath(addresses: [[10, 1, 2, 3]], port: 5555)

    static func event(_ type: ProtoBandwidthUpgradeNegotiationFrame.EventType) -> ProtoBandwidthUpgradeNegotiationFrame {
        var frame = ProtoBandwidthUpgradeNegotiationFrame()
        frame.eventType = type
        if type == .upgradePathAvailable || type == .upgradeFailure { frame.upgradePathInfo = path }
        return frame
    }

    /// A short name per action, for comparisons.
    static func names(_ actions: [BandwidthUpgradeMachine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .connect: "connect"
            case .send(let frame): "send \(frame.v1.bandwidthUpgradeNegotiation.eventType)"
            case .holdWritesAfter(let frame): "hold after \(frame.v1.bandwidthUpgradeNegotiation.eventType)"
            case .sendOnPriorChannel(let frame): "prior \(frame.v1.bandwidthUpgradeNegotiation.eventType)"
            case .switchChannels: "switch"
            case .abandon: "abandon"
            case .fail: "fail"
            }
        }
    }

    func receive(_ machine: inout BandwidthUpgradeMachine, _ type: ProtoBandwidthUpgradeNegotiationFrame.EventType,
                 canConnect: Bool = true) -> [String] {
        Self.names(machine.receive(Self.event(type)) { _ in canConnect })
    }

    @Test("Initiator: offer, new channel, LAST_WRITE, then SAFE_TO_CLOSE only after the peer's LAST_WRITE")
    func initiatorHappyPath() {
        var machine = BandwidthUpgradeMachine(role: .initiator)
        let offer = machine.offer(Self.path)
        #expect(offer?.v1.bandwidthUpgradeNegotiation.eventType == .upgradePathAvailable)
        #expect(offer?.v1.bandwidthUpgradeNegotiation.upgradePathInfo == Self.path)
        #expect(machine.offer(Self.path) == nil)
        #expect(Self.names(machine.newChannelReady()) == ["hold after lastWriteToPriorChannel"])
        #expect(machine.isDraining)
        #expect(receive(&machine, .lastWriteToPriorChannel) == ["prior safeToClosePriorChannel"])
        #expect(receive(&machine, .safeToClosePriorChannel) == ["switch"])
        #expect(machine.phase == .upgraded)
    }

    @Test("A peer's LAST_WRITE before ours is answered right after ours")
    func earlyPeerLastWrite() {
        var machine = BandwidthUpgradeMachine(role: .responder)
        #expect(receive(&machine, .upgradePathAvailable) == ["connect"])
        #expect(receive(&machine, .lastWriteToPriorChannel).isEmpty)
        #expect(Self.names(machine.newChannelReady()) == [
            "hold after lastWriteToPriorChannel", "prior safeToClosePriorChannel",
        ])
        #expect(receive(&machine, .safeToClosePriorChannel) == ["switch"])
    }

    @Test("SAFE_TO_CLOSE before the peer's LAST_WRITE, or LAST_WRITE outside an upgrade, ends the connection")
    func outOfOrder() {
        var draining = BandwidthUpgradeMachine(role: .initiator)
        _ = draining.offer(Self.path)
        _ = draining.newChannelReady()
        #expect(receive(&draining, .safeToClosePriorChannel) == ["fail"])
        var idle = BandwidthUpgradeMachine(role: .responder)
        #expect(receive(&idle, .lastWriteToPriorChannel) == ["fail"])
    }

    @Test("The advertiser ignores offers; a responder refuses paths it cannot use and second offers")
    func offers() {
        var initiator = BandwidthUpgradeMachine(role: .initiator)
        #expect(receive(&initiator, .upgradePathAvailable).isEmpty)
        var unusable = BandwidthUpgradeMachine(role: .responder)
        #expect(receive(&unusable, .upgradePathAvailable, canConnect: false) == ["send upgradeFailure"])
        var responder = BandwidthUpgradeMachine(role: .responder)
        #expect(receive(&responder, .upgradePathAvailable) == ["connect"])
        #expect(receive(&responder, .upgradePathAvailable) == ["send upgradeFailure"])
    }

    @Test("A new channel that fails: the responder sends UPGRADE_FAILURE, both stay; the initiator abandons on it")
    func failures() {
        var responder = BandwidthUpgradeMachine(role: .responder)
        _ = receive(&responder, .upgradePathAvailable)
        let actions = responder.newChannelFailed(NearbyError(.endpointIoError, "unreachable"))
        #expect(Self.names(actions) == ["send upgradeFailure", "abandon"])
        if case .send(let frame) = actions.first {
            #expect(frame.v1.bandwidthUpgradeNegotiation.upgradePathInfo == Self.path)
        }
        #expect(responder.phase == .abandoned)
        #expect(responder.newChannelReady().isEmpty)

        var initiator = BandwidthUpgradeMachine(role: .initiator)
        _ = initiator.offer(Self.path)
        #expect(receive(&initiator, .upgradeFailure) == ["abandon"])
        #expect(initiator.newChannelReady().isEmpty)
        // A later offer starts over.
        #expect(initiator.offer(Self.path) != nil)
        #expect(initiator.phase == .offered)
        var nothingToOffer = BandwidthUpgradeMachine(role: .initiator)
        nothingToOffer.cannotOffer()
        #expect(nothingToOffer.phase == .abandoned)
        #expect(nothingToOffer.offer(Self.path) != nil)
    }

    @Test("CLIENT_INTRODUCTION bytes match the wire layout")
    func introductionKnownAnswer() {
        let bytes = OfflineFrames.serialize(OfflineFrames.clientIntroduction(endpointID: "ABCD", lastEndpointID: "ABCD"))
        // OfflineFrame{version: V1, v1{type: BANDWIDTH_UPGRADE_NEGOTIATION, bandwidth_upgrade_negotiation{
        //   event_type: CLIENT_INTRODUCTION, client_introduction{endpoint_id, supports_disabling_encryption: false,
        //   last_endpoint_id}}}}
        let expected: [UInt8] = [
            0x08, 0x01, 0x12, 0x16, 0x08, 0x04, 0x2A, 0x12, 0x08, 0x04, 0x1A, 0x0E,
            0x0A, 0x04, 0x41, 0x42, 0x43, 0x44, 0x10, 0x00, 0x1A, 0x04, 0x41, 0x42, 0x43, 0x44,
        ]
        #expect(bytes == expected)
        let ack = OfflineFrames.serialize(OfflineFrames.clientIntroductionAck())
        #expect(ack == [0x08, 0x01, 0x12, 0x08, 0x08, 0x04, 0x2A, 0x04, 0x08, 0x06, 0x22, 0x00])
    }
}
