import NearbyWire

/// The Quick Share frame sequence of one connection, as a value type that returns actions (no I/O, no clock, no
/// randomness: the caller passes them in).
///
/// Both roles start once the Nearby Connections connection is up (``connected()``): each side sends its
/// PAIRED_KEY_ENCRYPTION, answers the peer's with PAIRED_KEY_RESULT (UNABLE: there are no account certificates),
/// and reads the peer's result (FAIL ends the session). Then:
/// - **receiver**: reads the INTRODUCTION, refuses it (limits, disk space) or asks the user; sends RESPONSE ACCEPT
///   or REJECT; takes the announced payloads (files, texts, Wi-Fi passwords, matched by payload ID) and, when all
///   arrived, disconnects.
/// - **sender**: sends the INTRODUCTION, reads the RESPONSE, sends the attachments one at a time (texts, then files,
///   then Wi-Fi networks, as Google's sender does), then waits up to 60 s for the receiver to disconnect.
///
/// CANCEL is taken in every phase. A frame out of order, an undecodable frame, a payload that was not announced or
/// whose size differs from its announcement, and a deadline passing end the session with a clear error. Unknown
/// frame types (certificate info, progress updates, bindings) are ignored. After ``Action/finish(_:)`` the machine
/// is done: later input yields nothing.
package struct QuickShareSessionMachine: Sendable {
    /// Which side of the share this is.
    package enum Role: Sendable, Equatable {
        /// The receiving side (the advertiser).
        case receiver(limits: QuickShareLimits)
        /// The sending side: the introduction to send and the payload IDs to send after ACCEPT, in order.
        case sender(introduction: ProtoSharingIntroduction, payloadOrder: [Int64])
    }

    /// The phase deadlines (Google's values).
    package enum Deadline: Sendable, Hashable {
        /// Each read of the paired key exchange: 15 s.
        case pairedKey
        /// The receiver waits for the INTRODUCTION: 15 s.
        case introduction
        /// The receiver's user decides: 60 s, then TIMED_OUT.
        case decision
        /// The sender waits for the RESPONSE: 60 s.
        case response
        /// The sender waits for the receiver to disconnect after the last payload: 60 s.
        case receiverDisconnect

        /// How long the phase may take.
        package var duration: Duration {
            switch self {
            case .pairedKey, .introduction: .seconds(15)
            case .decision, .response, .receiverDisconnect: .seconds(60)
            }
        }
    }

    /// How a session ended.
    package enum Outcome: Sendable, Equatable {
        /// Receiver: every announced attachment arrived.
        case received
        /// Sender: every attachment was sent; `confirmed` when the receiver then disconnected (it does so once it
        /// has everything), false when it stayed connected past the deadline.
        case sent(confirmed: Bool)
        /// Receiver: the local user rejected the offer.
        case rejected
        /// Receiver: the offer broke a limit or did not fit on disk, and was refused with this status.
        case refused(QuickShareRefusal)
        /// Sender: the receiver answered with this non-ACCEPT status.
        case declined(ProtoSharingResponse.Status)
        /// One side cancelled.
        case canceled(byPeer: Bool)
        /// The protocol broke, a deadline passed, a payload failed or the connection ended early.
        case failed(NearbyError)
    }

    /// Something the caller must do, in order.
    package enum Action: Sendable, Equatable {
        /// Send this frame as a BYTES payload.
        case send(QuickShareFrame)
        /// Receiver: show the offer to the user and call ``decide(accept:)``.
        case askUser(QuickShareOffer)
        /// Receiver: the announced payloads may now arrive (set up where files go before the ACCEPT is sent).
        case expectPayloads(QuickShareOffer)
        /// Sender: the receiver accepted the introduction.
        case peerAccepted
        /// Sender: send the attachment whose payload has this ID.
        case sendPayload(Int64)
        /// Cancel these payloads in the engine (either direction).
        case cancelPayloads([Int64])
        /// Receiver: a text arrived.
        case deliverText(QuickShareText, String)
        /// Receiver: Wi-Fi credentials arrived.
        case deliverWifiCredentials(QuickShareWifiCredentials)
        /// Receiver: a file arrived (the caller knows where it was written).
        case deliverFile(QuickShareFile)
        /// Arm the phase deadline (replacing any earlier one).
        case setDeadline(Deadline)
        /// Disarm the phase deadline.
        case clearDeadline
        /// The session is over: report the outcome.
        case finish(Outcome)
        /// Disconnect after this long, unless the peer does first (zero: now).
        case disconnect(after: Duration)
    }

    enum State: Sendable, Equatable {
        case idle
        case awaitingPeerKey
        case awaitingPeerResult
        case awaitingIntroduction
        case awaitingDecision(QuickShareOffer)
        case receiving(QuickShareOffer, pending: Set<Int64>, started: Set<Int64>)
        case awaitingResponse
        case sending(remaining: [Int64], current: Int64)
        case awaitingReceiverDisconnect
        case finished
    }

    /// How long a refusing or rejecting receiver stays connected so its RESPONSE arrives (Google: 2 s).
    package static let rejectionLinger: Duration = .seconds(2)
    /// How long a cancelling side waits for the peer to hang up first (Google: 5 s).
    package static let cancelLinger: Duration = .seconds(5)

    package let role: Role
    private(set) var state: State = .idle
    private let pairedKeyEncryption: QuickShareFrame

    /// A machine for `role` that sends `pairedKeyEncryption` (see ``QuickShareFrame/randomPairedKeyEncryption(using:)``).
    package init(role: Role, pairedKeyEncryption: QuickShareFrame) {
        self.role = role
        self.pairedKeyEncryption = pairedKeyEncryption
    }

    private var isReceiver: Bool {
        if case .receiver = role { return true }
        return false
    }

    /// Whether the session has ended.
    package var isFinished: Bool { state == .finished }

    // MARK: - Inputs

    /// The Nearby Connections connection is up (both sides accepted).
    package mutating func connected() -> [Action] {
        guard state == .idle else { return [] }
        state = .awaitingPeerKey
        return [.send(pairedKeyEncryption), .setDeadline(.pairedKey)]
    }

    /// A BYTES payload arrived: an attachment the receiver expects, or else a frame. `freeSpace` is the number of
    /// bytes the receive directory can still take (nil: unknown), used when the payload is an INTRODUCTION.
    package mutating func receivedBytes(payloadID: Int64, _ bytes: [UInt8], freeSpace: Int64? = nil) -> [Action] {
        if case .receiving(let offer, var pending, let started) = state, pending.contains(payloadID) {
            if let text = offer.texts.first(where: { $0.payloadID == payloadID }) {
                pending.remove(payloadID)
                state = .receiving(offer, pending: pending, started: started)
                return [.deliverText(text, String(decoding: bytes, as: UTF8.self))] + finishIfComplete()
            }
            if let network = offer.wifiNetworks.first(where: { $0.payloadID == payloadID }) {
                guard let password = try? ProtoSharingWifiPassword(serializedBytes: bytes) else {
                    return violation("the password of Wi-Fi network payload \(payloadID) is not a WifiPassword message")
                }
                pending.remove(payloadID)
                state = .receiving(offer, pending: pending, started: started)
                let credentials = QuickShareWifiCredentials(
                    network: network, password: password.password, isHidden: password.hiddenSsid)
                return [.deliverWifiCredentials(credentials)] + finishIfComplete()
            }
            return violation("file payload \(payloadID) arrived as bytes")
        }
        guard state != .finished else { return [] }
        let frame: QuickShareFrame
        do {
            frame = try QuickShareFrame(decoding: bytes)
        } catch {
            return fail(error)
        }
        return receive(frame, freeSpace: freeSpace)
    }

    /// A decoded frame (``receivedBytes(payloadID:_:freeSpace:)`` decodes and calls this).
    package mutating func receive(_ frame: QuickShareFrame, freeSpace: Int64? = nil) -> [Action] {
        if case .ignored = frame { return [] }
        if frame == .cancel {
            return cancelled(byPeer: true)
        }
        switch (state, frame) {
        case (.awaitingPeerKey, .pairedKeyEncryption):
            state = .awaitingPeerResult
            return [.send(.pairedKeyResult(.unable)), .setDeadline(.pairedKey)]
        case (.awaitingPeerResult, .pairedKeyResult(let status)):
            if status == .fail {
                return fail(NearbyError(
                    .authenticationFailed,
                    "the peer failed the paired key verification (a phone does this unless its visibility is Everyone)"))
            }
            switch role {
            case .receiver:
                state = .awaitingIntroduction
                return [.setDeadline(.introduction)]
            case .sender(let introduction, _):
                state = .awaitingResponse
                return [.send(.introduction(introduction)), .setDeadline(.response)]
            }
        case (.awaitingIntroduction, .introduction(let introduction)):
            guard case .receiver(let limits) = role else { break }
            switch QuickShareOfferValidator.validate(introduction, limits: limits) {
            case .failure(let refusal):
                return refuse(refusal)
            case .success(let offer):
                if let freeSpace, offer.totalFileBytes >= freeSpace {
                    return refuse(QuickShareRefusal(
                        status: .notEnoughSpace,
                        reason: "the share needs \(offer.totalFileBytes) bytes, the receive directory has \(max(0, freeSpace)) to spare"))
                }
                state = .awaitingDecision(offer)
                return [.askUser(offer), .setDeadline(.decision)]
            }
        case (.awaitingResponse, .response(let status)):
            guard case .sender(_, let order) = role else { break }
            guard status == .accept else {
                state = .finished
                return [.clearDeadline, .finish(.declined(status)), .disconnect(after: .zero)]
            }
            guard let first = order.first else {
                state = .awaitingReceiverDisconnect
                return [.peerAccepted, .setDeadline(.receiverDisconnect)]
            }
            state = .sending(remaining: Array(order.dropFirst()), current: first)
            return [.clearDeadline, .peerAccepted, .sendPayload(first)]
        default:
            break
        }
        return violation("\(frame.name) arrived \(phaseDescription)")
    }

    /// Receiver: the local user's decision on the offer.
    package mutating func decide(accept: Bool) -> [Action] {
        guard case .awaitingDecision(let offer) = state else { return [] }
        guard accept else {
            state = .finished
            return [
                .clearDeadline, .send(.response(.reject)), .finish(.rejected), .disconnect(after: Self.rejectionLinger),
            ]
        }
        state = .receiving(offer, pending: Set(offer.payloadIDs), started: [])
        return [.clearDeadline, .expectPayloads(offer), .send(.response(.accept))]
    }

    /// Receiver: the engine started receiving a FILE payload of `totalSize` bytes.
    package mutating func fileStarted(payloadID: Int64, totalSize: Int64) -> [Action] {
        guard case .receiving(let offer, let pending, var started) = state else {
            guard state != .finished else { return [] }
            return violation("file payload \(payloadID) arrived \(phaseDescription)", cancel: [payloadID])
        }
        guard pending.contains(payloadID), let file = offer.files.first(where: { $0.payloadID == payloadID }),
            !started.contains(payloadID)
        else {
            return violation("file payload \(payloadID) was not announced", cancel: [payloadID])
        }
        guard totalSize == file.size else {
            return violation(
                "file payload \(payloadID) has \(totalSize) bytes, its introduction said \(file.size)", cancel: [payloadID])
        }
        started.insert(payloadID)
        state = .receiving(offer, pending: pending, started: started)
        return []
    }

    /// A payload in either direction ended: complete (`success`), or failed or cancelled.
    package mutating func payloadFinished(payloadID: Int64, success: Bool) -> [Action] {
        switch state {
        case .receiving(let offer, var pending, let started) where pending.contains(payloadID):
            guard success else {
                return fail(NearbyError(.endpointIoError, "payload \(payloadID) did not arrive complete"))
            }
            guard started.contains(payloadID), let file = offer.files.first(where: { $0.payloadID == payloadID }) else {
                return violation("payload \(payloadID) completed without starting as an announced file")
            }
            pending.remove(payloadID)
            state = .receiving(offer, pending: pending, started: started)
            return [.deliverFile(file)] + finishIfComplete()
        case .sending(let remaining, let current) where current == payloadID:
            guard success else {
                return fail(NearbyError(.endpointIoError, "sending payload \(payloadID) failed"))
            }
            guard let next = remaining.first else {
                state = .awaitingReceiverDisconnect
                return [.setDeadline(.receiverDisconnect)]
            }
            state = .sending(remaining: Array(remaining.dropFirst()), current: next)
            return [.sendPayload(next)]
        case .awaitingPeerKey, .awaitingPeerResult, .awaitingIntroduction, .awaitingDecision:
            // A receiver that has not accepted yet expects no payload at all.
            guard isReceiver else { return [] }
            return violation("payload \(payloadID) arrived \(phaseDescription)", cancel: [payloadID])
        default:
            return []
        }
    }

    /// The local user cancels the share.
    package mutating func cancel() -> [Action] {
        cancelled(byPeer: false)
    }

    /// The connection ended (the peer hung up, or the link broke); `cause` is the engine's error when it ended the
    /// connection itself (a broken frame, a timeout).
    package mutating func disconnected(cause: NearbyError? = nil) -> [Action] {
        switch state {
        case .finished:
            return []
        case .awaitingReceiverDisconnect:
            state = .finished
            return [.clearDeadline, .finish(.sent(confirmed: true))]
        default:
            let what = phaseDescription
            state = .finished
            let error = cause.map { NearbyError($0.code, "the connection ended \(what): \($0.message)", cause: $0) }
            return [.clearDeadline, .finish(.failed(error ?? NearbyError(.endpointIoError, "the peer disconnected \(what)")))]
        }
    }

    /// The phase deadline `deadline` passed.
    package mutating func deadlinePassed(_ deadline: Deadline) -> [Action] {
        switch (state, deadline) {
        case (.awaitingPeerKey, .pairedKey), (.awaitingPeerResult, .pairedKey):
            return fail(NearbyError(.timeout, "the peer did not finish the paired key exchange within 15 s"))
        case (.awaitingIntroduction, .introduction):
            return fail(NearbyError(.timeout, "the sender sent no introduction within 15 s"))
        case (.awaitingDecision, .decision):
            state = .finished
            return [
                .send(.response(.timedOut)),
                .finish(.failed(NearbyError(.timeout, "nobody accepted or rejected the share within 60 s"))),
                .disconnect(after: Self.rejectionLinger),
            ]
        case (.awaitingResponse, .response):
            return fail(NearbyError(.timeout, "the receiver did not answer within 60 s"))
        case (.awaitingReceiverDisconnect, .receiverDisconnect):
            state = .finished
            return [.finish(.sent(confirmed: false)), .disconnect(after: .zero)]
        default:
            return []
        }
    }

    // MARK: - Helpers

    private var phaseDescription: String {
        switch state {
        case .idle: "before the connection was up"
        case .awaitingPeerKey: "while waiting for PAIRED_KEY_ENCRYPTION"
        case .awaitingPeerResult: "while waiting for PAIRED_KEY_RESULT"
        case .awaitingIntroduction: "while waiting for INTRODUCTION"
        case .awaitingDecision: "while the user decides"
        case .receiving: "while receiving"
        case .awaitingResponse: "while waiting for RESPONSE"
        case .sending: "while sending"
        case .awaitingReceiverDisconnect: "before the receiver confirmed"
        case .finished: "after the share ended"
        }
    }

    private var pendingPayloads: [Int64] {
        switch state {
        case .receiving(_, let pending, _): pending.sorted()
        case .sending(let remaining, let current): [current] + remaining
        default: []
        }
    }

    private mutating func finishIfComplete() -> [Action] {
        guard case .receiving(_, let pending, _) = state, pending.isEmpty else { return [] }
        state = .finished
        return [.finish(.received), .disconnect(after: .zero)]
    }

    private mutating func refuse(_ refusal: QuickShareRefusal) -> [Action] {
        state = .finished
        return [
            .clearDeadline, .send(.response(refusal.status)), .finish(.refused(refusal)),
            .disconnect(after: Self.rejectionLinger),
        ]
    }

    private mutating func cancelled(byPeer: Bool) -> [Action] {
        switch state {
        case .finished:
            return []
        case .idle:
            state = .finished
            return [.finish(.canceled(byPeer: byPeer)), .disconnect(after: .zero)]
        default:
            let payloads = pendingPayloads
            state = .finished
            var actions: [Action] = [.clearDeadline]
            if !byPeer { actions.append(.send(.cancel)) }
            if !payloads.isEmpty { actions.append(.cancelPayloads(payloads)) }
            actions += [.finish(.canceled(byPeer: byPeer)), .disconnect(after: byPeer ? .zero : Self.cancelLinger)]
            return actions
        }
    }

    private mutating func violation(_ message: String, cancel extra: [Int64] = []) -> [Action] {
        fail(NearbyError(.invalidFrame, "Quick Share protocol violation: \(message)"), cancel: extra)
    }

    private mutating func fail(_ error: NearbyError, cancel extra: [Int64] = []) -> [Action] {
        let payloads = Array(Set(pendingPayloads + extra)).sorted()
        state = .finished
        var actions: [Action] = [.clearDeadline]
        if !payloads.isEmpty { actions.append(.cancelPayloads(payloads)) }
        actions += [.finish(.failed(error)), .disconnect(after: .zero)]
        return actions
    }
}

extension QuickShareSessionMachine.Outcome {
    /// Outcomes are equal when their cases and values are; failures compare by error code and message.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.received, .received), (.rejected, .rejected): true
        case (.sent(let a), .sent(let b)): a == b
        case (.refused(let a), .refused(let b)): a == b
        case (.declined(let a), .declined(let b)): a == b
        case (.canceled(let a), .canceled(let b)): a == b
        case (.failed(let a), .failed(let b)): a.code == b.code && a.message == b.message
        default: false
        }
    }
}
