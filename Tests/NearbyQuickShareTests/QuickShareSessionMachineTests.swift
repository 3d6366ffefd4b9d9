import NearbyWire
import Testing

@testable import NearbyQuickShare

/// The Quick Share frame sequence, both roles, every phase: order of frames, decisions, payload matching,
/// cancellation, deadlines and hostile input, without sockets or time.
@Suite("Quick Share session machine", .timeLimit(.minutes(1)))
struct QuickShareSessionMachineTests {
    typealias Machine = QuickShareSessionMachine
    static let ourKey = QuickShareFrame.pairedKeyEncryption(signedData: [1], secretIDHash: [2])
    static let peerKey = QuickShareFrame.pairedKeyEncryption(signedData: [3], secretIDHash: [4])

    static func introduction(files: [(Int64, Int64)] = [(11, 3)], texts: [(Int64, Int64)] = []) -> ProtoSharingIntroduction {
        var introduction = ProtoSharingIntroduction()
        introduction.useCase = .nearbyShare
        introduction.files = files.map { payloadID, size in
            var file = ProtoSharingFileMetadata()
            file.name = "f\(payloadID).bin"
            file.size = size
            file.payloadID = payloadID
            file.id = payloadID + 100
            return file
        }
        introduction.texts = texts.map { payloadID, size in
            var text = ProtoSharingTextMetadata()
            text.title = "t"
            text.kind = .text
            text.size = size
            text.payloadID = payloadID
            text.id = payloadID + 100
            return text
        }
        return introduction
    }

    /// A receiver that has exchanged keys and waits for the introduction.
    func receiverAwaitingIntroduction() -> Machine {
        var machine = Machine(role: .receiver(limits: QuickShareLimits()), pairedKeyEncryption: Self.ourKey)
        #expect(machine.connected() == [.send(Self.ourKey), .setDeadline(.pairedKey)])
        #expect(machine.receive(Self.peerKey) == [.send(.pairedKeyResult(.unable)), .setDeadline(.pairedKey)])
        #expect(machine.receive(.pairedKeyResult(.unable)) == [.setDeadline(.introduction)])
        return machine
    }

    /// A receiver that accepted the default introduction (one 3-byte file, payload 11).
    func acceptingReceiver(_ introduction: ProtoSharingIntroduction = Self.introduction()) -> (Machine, QuickShareOffer) {
        var machine = receiverAwaitingIntroduction()
        let actions = machine.receivedBytes(payloadID: 900, QuickShareFrame.introduction(introduction).bytes, freeSpace: 1 << 30)
        guard case .askUser(let offer) = actions.first else {
            Issue.record("no question: \(actions)")
            return (machine, QuickShareOffer())
        }
        #expect(actions == [.askUser(offer), .setDeadline(.decision)])
        #expect(machine.decide(accept: true) == [.clearDeadline, .expectPayloads(offer), .send(.response(.accept))])
        return (machine, offer)
    }

    // MARK: Receiver

    @Test func receiverTakesAnnouncedFilesAndTextsThenHangsUp() {
        var (machine, offer) = acceptingReceiver(Self.introduction(files: [(11, 3), (12, 0)], texts: [(13, 5)]))
        #expect(machine.fileStarted(payloadID: 11, totalSize: 3) == [])
        #expect(machine.receivedBytes(payloadID: 13, Array("hello".utf8)) == [.deliverText(offer.texts[0], "hello")])
        #expect(machine.payloadFinished(payloadID: 11, success: true) == [.deliverFile(offer.files[0])])
        #expect(machine.fileStarted(payloadID: 12, totalSize: 0) == [])
        #expect(machine.payloadFinished(payloadID: 12, success: true)
            == [.deliverFile(offer.files[1]), .finish(.received), .disconnect(after: .zero)])
        #expect(machine.isFinished)
        #expect(machine.disconnected() == [])
    }

    @Test func receiverRejects() {
        var machine = receiverAwaitingIntroduction()
        _ = machine.receive(.introduction(Self.introduction()), freeSpace: nil)
        #expect(machine.decide(accept: false)
            == [.clearDeadline, .send(.response(.reject)), .finish(.rejected), .disconnect(after: Machine.rejectionLinger)])
        #expect(machine.decide(accept: true) == [])
    }

    @Test func receiverRefusesWhatDoesNotFitOnDisk() {
        var machine = receiverAwaitingIntroduction()
        let actions = machine.receive(.introduction(Self.introduction(files: [(11, 1_000)])), freeSpace: 999)
        #expect(actions.contains(.send(.response(.notEnoughSpace))))
        guard case .finish(.refused(let refusal)) = actions.dropLast().last else {
            Issue.record("\(actions)")
            return
        }
        #expect(refusal.status == .notEnoughSpace)
        #expect(actions.last == .disconnect(after: Machine.rejectionLinger))
    }

    @Test func receiverRefusesHostileIntroductionsWithAStatus() {
        var introduction = Self.introduction()
        introduction.files[0].name = "../evil"
        var machine = receiverAwaitingIntroduction()
        let actions = machine.receive(.introduction(introduction))
        #expect(actions.first == .clearDeadline)
        #expect(actions[1] == .send(.response(.unsupportedAttachmentType)))
        #expect(machine.isFinished)
    }

    @Test func unannouncedOrMisSizedPayloadsEndTheShare() {
        var (machine, _) = acceptingReceiver()
        var actions = machine.fileStarted(payloadID: 99, totalSize: 3)
        #expect(actions.first == .clearDeadline)
        #expect(actions.contains(.cancelPayloads([11, 99])))
        #expect(failure(actions)?.message.contains("not announced") == true)

        (machine, _) = acceptingReceiver()
        actions = machine.fileStarted(payloadID: 11, totalSize: 4)
        #expect(failure(actions)?.message.contains("introduction said 3") == true)

        (machine, _) = acceptingReceiver()
        // A file payload's ID sent as bytes.
        actions = machine.receivedBytes(payloadID: 11, [1, 2, 3])
        #expect(failure(actions)?.code == .invalidFrame)

        // A file payload before ACCEPT.
        var early = receiverAwaitingIntroduction()
        _ = early.receive(.introduction(Self.introduction()))
        actions = early.fileStarted(payloadID: 11, totalSize: 3)
        #expect(failure(actions)?.message.contains("while the user decides") == true)
        #expect(actions.contains(.cancelPayloads([11])))
    }

    @Test func framesOutOfOrderEndTheShare() {
        var machine = Machine(role: .receiver(limits: QuickShareLimits()), pairedKeyEncryption: Self.ourKey)
        _ = machine.connected()
        var actions = machine.receive(.introduction(Self.introduction()))
        #expect(failure(actions)?.message == "Quick Share protocol violation: INTRODUCTION arrived while waiting for PAIRED_KEY_ENCRYPTION")
        #expect(actions.last == .disconnect(after: .zero))

        machine = receiverAwaitingIntroduction()
        actions = machine.receive(.pairedKeyEncryption(signedData: [], secretIDHash: []))
        #expect(failure(actions)?.code == .invalidFrame)

        var (receiving, _) = acceptingReceiver()
        actions = receiving.receive(.introduction(Self.introduction()))
        #expect(failure(actions)?.message.contains("INTRODUCTION arrived while receiving") == true)

        machine = receiverAwaitingIntroduction()
        actions = machine.receivedBytes(payloadID: 5, [0xFF, 0x00])
        #expect(failure(actions)?.code == .invalidFrame)
    }

    @Test func unknownFrameTypesAreIgnoredEverywhere() {
        var machine = receiverAwaitingIntroduction()
        #expect(machine.receive(.ignored(type: 7)) == [])
        #expect(machine.receive(.ignored(type: 8)) == [])
        #expect(!machine.isFinished)
    }

    @Test func aFailedPairedKeyResultEndsTheShare() {
        var machine = Machine(role: .receiver(limits: QuickShareLimits()), pairedKeyEncryption: Self.ourKey)
        _ = machine.connected()
        _ = machine.receive(Self.peerKey)
        let actions = machine.receive(.pairedKeyResult(.fail))
        #expect(failure(actions)?.code == .authenticationFailed)
    }

    @Test func receiverDeadlines() {
        var machine = Machine(role: .receiver(limits: QuickShareLimits()), pairedKeyEncryption: Self.ourKey)
        _ = machine.connected()
        #expect(machine.deadlinePassed(.introduction) == [], "a stale deadline does nothing")
        #expect(failure(machine.deadlinePassed(.pairedKey))?.code == .timeout)

        machine = receiverAwaitingIntroduction()
        #expect(failure(machine.deadlinePassed(.introduction))?.code == .timeout)

        machine = receiverAwaitingIntroduction()
        _ = machine.receive(.introduction(Self.introduction()))
        let actions = machine.deadlinePassed(.decision)
        #expect(actions.first == .send(.response(.timedOut)))
        #expect(actions.last == .disconnect(after: Machine.rejectionLinger))
        #expect(machine.decide(accept: true) == [], "too late")
    }

    @Test func cancelFromEitherSide() {
        var (machine, _) = acceptingReceiver()
        #expect(machine.receive(.cancel)
            == [.clearDeadline, .cancelPayloads([11]), .finish(.canceled(byPeer: true)), .disconnect(after: .zero)])
        (machine, _) = acceptingReceiver()
        #expect(machine.cancel()
            == [.clearDeadline, .send(.cancel), .cancelPayloads([11]), .finish(.canceled(byPeer: false)),
                .disconnect(after: Machine.cancelLinger)])
        #expect(machine.cancel() == [])
        var idle = Machine(role: .receiver(limits: QuickShareLimits()), pairedKeyEncryption: Self.ourKey)
        #expect(idle.cancel() == [.finish(.canceled(byPeer: false)), .disconnect(after: .zero)])
    }

    @Test func receiverReportsASenderThatLeavesEarly() {
        var (machine, _) = acceptingReceiver()
        _ = machine.fileStarted(payloadID: 11, totalSize: 3)
        let actions = machine.disconnected()
        #expect(failure(actions)?.message == "the peer disconnected while receiving")
        #expect(machine.payloadFinished(payloadID: 11, success: false) == [])
        // When the engine ended the connection itself, its reason is the share's.
        (machine, _) = acceptingReceiver()
        let ended = failure(machine.disconnected(cause: NearbyError(.invalidFrame, "parent folder contains '..'")))
        #expect(ended?.code == .invalidFrame)
        #expect(ended?.message == "the connection ended while receiving: parent folder contains '..'")
    }

    @Test func aFailedPayloadEndsTheShare() {
        var (machine, _) = acceptingReceiver()
        _ = machine.fileStarted(payloadID: 11, totalSize: 3)
        #expect(failure(machine.payloadFinished(payloadID: 11, success: false))?.code == .endpointIoError)
    }

    @Test func wifiCredentialsArriveAsAPasswordMessage() throws {
        var introduction = Self.introduction(files: [])
        var network = ProtoSharingWifiNetworkMetadata()
        network.ssid = "home"
        network.security = .wpaPsk
        network.payloadID = 21
        network.id = 1
        introduction.wifiNetworks = [network]
        var (machine, offer) = acceptingReceiver(introduction)
        var password = ProtoSharingWifiPassword()
        password.password = "secret"
        let actions = machine.receivedBytes(payloadID: 21, try password.serializedBytes())
        #expect(actions == [
            .deliverWifiCredentials(QuickShareWifiCredentials(network: offer.wifiNetworks[0], password: "secret", isHidden: false)),
            .finish(.received), .disconnect(after: .zero),
        ])
    }

    // MARK: Sender

    func senderAwaitingResponse(order: [Int64] = [13, 11]) -> Machine {
        var machine = Machine(
            role: .sender(introduction: Self.introduction(files: [(11, 3)], texts: [(13, 5)]), payloadOrder: order),
            pairedKeyEncryption: Self.ourKey)
        #expect(machine.connected() == [.send(Self.ourKey), .setDeadline(.pairedKey)])
        #expect(machine.receive(Self.peerKey) == [.send(.pairedKeyResult(.unable)), .setDeadline(.pairedKey)])
        #expect(machine.receive(.pairedKeyResult(.unable))
            == [.send(.introduction(Self.introduction(files: [(11, 3)], texts: [(13, 5)]))), .setDeadline(.response)])
        return machine
    }

    @Test func senderSendsOneAttachmentAtATimeThenWaitsForTheReceiverToHangUp() {
        var machine = senderAwaitingResponse()
        #expect(machine.receive(.response(.accept)) == [.clearDeadline, .peerAccepted, .sendPayload(13)])
        #expect(machine.payloadFinished(payloadID: 11, success: true) == [], "not the payload in flight")
        #expect(machine.payloadFinished(payloadID: 13, success: true) == [.sendPayload(11)])
        #expect(machine.payloadFinished(payloadID: 11, success: true) == [.setDeadline(.receiverDisconnect)])
        #expect(machine.disconnected() == [.clearDeadline, .finish(.sent(confirmed: true))])
    }

    @Test func senderWhoseReceiverStaysConnectedFinishesUnconfirmed() {
        var machine = senderAwaitingResponse(order: [13])
        _ = machine.receive(.response(.accept))
        _ = machine.payloadFinished(payloadID: 13, success: true)
        #expect(machine.deadlinePassed(.receiverDisconnect) == [.finish(.sent(confirmed: false)), .disconnect(after: .zero)])
    }

    @Test func senderReportsEveryDecline() {
        for status: ProtoSharingResponse.Status in [.reject, .notEnoughSpace, .unsupportedAttachmentType, .timedOut] {
            var machine = senderAwaitingResponse()
            #expect(machine.receive(.response(status)) == [.clearDeadline, .finish(.declined(status)), .disconnect(after: .zero)])
        }
    }

    @Test func senderFailures() {
        var machine = senderAwaitingResponse()
        #expect(failure(machine.deadlinePassed(.response))?.code == .timeout)

        machine = senderAwaitingResponse()
        _ = machine.receive(.response(.accept))
        let failed = machine.payloadFinished(payloadID: 13, success: false)
        #expect(failed.contains(.cancelPayloads([11, 13])))
        #expect(failure(failed)?.message == "sending payload 13 failed")

        machine = senderAwaitingResponse()
        _ = machine.receive(.response(.accept))
        #expect(failure(machine.disconnected())?.message == "the peer disconnected while sending")

        machine = senderAwaitingResponse()
        #expect(failure(machine.receive(.introduction(Self.introduction())))?.code == .invalidFrame)

        machine = senderAwaitingResponse()
        _ = machine.receive(.response(.accept))
        #expect(machine.receive(.cancel)
            == [.clearDeadline, .cancelPayloads([13, 11]), .finish(.canceled(byPeer: true)), .disconnect(after: .zero)])
    }

    @Test func aSessionFinishesOnce() {
        var (machine, _) = acceptingReceiver()
        var finishes = 0
        let inputs: [(inout Machine) -> [Machine.Action]] = [
            { $0.cancel() }, { $0.receive(.cancel) }, { $0.disconnected() }, { $0.deadlinePassed(.decision) },
            { $0.fileStarted(payloadID: 11, totalSize: 3) }, { $0.payloadFinished(payloadID: 11, success: true) },
        ]
        for input in inputs {
            finishes += input(&machine).filter { if case .finish = $0 { true } else { false } }.count
        }
        #expect(finishes == 1)
    }

    func failure(_ actions: [Machine.Action]) -> NearbyError? {
        for action in actions {
            if case .finish(.failed(let error)) = action { return error }
        }
        return nil
    }
}
