import NearbyWire

/// L2CAP LE signalling and every credit-based channel of a host, as a value-type state machine.
///
/// It answers the peer's signalling (LE Credit Based Connection Request, Flow Control Credit, Disconnection,
/// Connection Parameter Update, anything unknown or malformed with Command Reject), opens channels we request,
/// allocates CIDs, PSMs and signal identifiers, and keeps each channel's ``CreditChannel`` state. The host
/// performs the returned ``Action``s: send signals, start or stop open timeouts, resume openers, readers and
/// writers, and hand accepted channels to servers.
package struct L2CAPSignalling: Sendable {
    /// What the host must do.
    package enum Action: Sendable {
        /// Send this signalling command on connection `handle`.
        case send(handle: UInt16, L2CAPSignal)
        /// Start the timeout of our connection request `identifier`; call ``openTimedOut(_:)`` when it fires.
        case scheduleOpenTimeout(identifier: UInt8, after: Duration)
        /// Stop the timeout of connection request `identifier`.
        case cancelOpenTimeout(identifier: UInt8)
        /// Our connection request `identifier` succeeded.
        case opened(identifier: UInt8, CreditChannelInfo)
        /// Our connection request `identifier` failed.
        case openFailed(identifier: UInt8, NearbyError)
        /// We accepted the peer's channel on `psm`: hand it to that server.
        case accepted(psm: UInt16, CreditChannelInfo)
        /// Resume the channel's waiting reader with this SDU.
        case deliver(L2CAPChannelKey, [UInt8])
        /// The peer granted credits: resume the channel's waiting writers.
        case wakeWriters(L2CAPChannelKey)
        /// The channel closed: its waiting reader gets `error` (or the end for `nil`) if `readerWaiting`, its
        /// writers fail.
        case closed(L2CAPChannelKey, NearbyError?, readerWaiting: Bool)
        /// Something the peer sent was dropped (for the log).
        case dropped(String)
    }

    private struct PendingOpen: Sendable {
        let key: L2CAPChannelKey
    }

    /// The MTU, MPS and initial credits we offer on every channel.
    package let ours: CreditChannelParameters
    /// How long the peer has to answer our connection request.
    package let openTimeout: Duration
    private(set) var channels: [L2CAPChannelKey: CreditChannel] = [:]
    private var pendingOpens: [UInt8: PendingOpen] = [:]
    private var servers: Set<UInt16> = []
    private var nextIdentifier: UInt8 = 1
    private var nextDynamicPSM: UInt16 = 0x0080

    /// Creates the machine offering `ours` on every channel.
    package init(ours: CreditChannelParameters, openTimeout: Duration) {
        self.ours = ours
        self.openTimeout = openTimeout
    }

    /// The channel `key`, if open or closed with SDUs still queued.
    package func channel(_ key: L2CAPChannelKey) -> CreditChannel? { channels[key] }

    /// Whether any channel (open, or closed with SDUs still queued) uses connection `handle`.
    package func hasChannels(onHandle handle: UInt16) -> Bool { channels.keys.contains { $0.handle == handle } }

    // MARK: - Servers

    /// Registers a server on `psm` (a dynamic one from 0x80 when `nil`); returns the PSM.
    /// - Throws: `.invalidArgument` when `psm` is taken.
    package mutating func listen(psm: UInt16?) throws -> UInt16 {
        if let psm {
            guard !servers.contains(psm) else { throw NearbyError(.invalidArgument, "PSM \(psm) is already in use") }
            servers.insert(psm)
            return psm
        }
        while servers.contains(nextDynamicPSM) { nextDynamicPSM += 1 }
        defer { nextDynamicPSM += 1 }
        servers.insert(nextDynamicPSM)
        return nextDynamicPSM
    }

    /// Removes the server on `psm`; open channels stay open.
    package mutating func stopListening(psm: UInt16) {
        servers.remove(psm)
    }

    // MARK: - Opening

    /// Requests a channel to `psm` on connection `handle`; the answer arrives as ``Action/opened(identifier:_:)``
    /// or ``Action/openFailed(identifier:_:)`` with the returned identifier.
    /// - Throws: `.l2capChannelFailed` when no CID is free.
    package mutating func open(handle: UInt16, psm: UInt16) throws -> (identifier: UInt8, actions: [Action]) {
        guard let cid = allocateCID(handle: handle) else {
            throw NearbyError(.l2capChannelFailed, "no free L2CAP channel IDs on connection \(handle)")
        }
        let identifier = takeIdentifier()
        pendingOpens[identifier] = PendingOpen(key: L2CAPChannelKey(handle: handle, localCID: cid))
        let request = L2CAPSignal.leCreditConnectionRequest(
            identifier: identifier, psm: psm, sourceCID: cid, mtu: ours.mtu, mps: ours.mps, credits: ours.credits)
        return (identifier, [.scheduleOpenTimeout(identifier: identifier, after: openTimeout), .send(handle: handle, request)])
    }

    /// The peer did not answer connection request `identifier` in time.
    package mutating func openTimedOut(_ identifier: UInt8) -> [Action] {
        guard pendingOpens.removeValue(forKey: identifier) != nil else { return [] }
        return [.openFailed(identifier: identifier, NearbyError(.timeout, "the peer did not answer the L2CAP connection request"))]
    }

    // MARK: - Inbound

    /// Feeds one L2CAP PDU's payload that arrived on `cid` of connection `handle`.
    package mutating func receive(handle: UInt16, cid: UInt16, _ payload: [UInt8]) -> [Action] {
        if cid == L2CAPConstants.leSignalingCID { return receiveSignal(handle: handle, payload) }
        let key = L2CAPChannelKey(handle: handle, localCID: cid)
        guard var channel = channels[key], !channel.isClosed else {
            return [.dropped("data for unknown L2CAP channel \(cid)")]
        }
        do {
            let (outcome, grant) = try channel.receive(payload)
            channels[key] = channel
            var actions = grantActions(key, grant)
            if case .deliver(let sdu) = outcome { actions.append(.deliver(key, sdu)) }
            return actions
        } catch {
            channels[key] = channel
            return closeWithDisconnect(key, error as? NearbyError ?? NearbyError(.malformedL2CAPPacket, "\(error)"))
        }
    }

    private mutating func receiveSignal(handle: UInt16, _ payload: [UInt8]) -> [Action] {
        let signal: L2CAPSignal
        do {
            signal = try L2CAPSignal(decoding: payload)
        } catch {
            var actions: [Action] = [.dropped("malformed L2CAP signalling: \(error)")]
            if payload.count >= 2, payload[1] != 0 {
                let reject = L2CAPSignal.commandReject(
                    identifier: payload[1], reason: L2CAPSignal.RejectReason.notUnderstood, data: [])
                actions.append(.send(handle: handle, reject))
            }
            return actions
        }
        switch signal {
        case .leCreditConnectionRequest(let id, let psm, let scid, let mtu, let mps, let credits):
            return accept(
                handle: handle, identifier: id, psm: psm, sourceCID: scid,
                peer: CreditChannelParameters(mtu: mtu, mps: mps, credits: credits))
        case .leCreditConnectionResponse(let id, let dcid, let mtu, let mps, let credits, let result):
            guard let open = pendingOpens.removeValue(forKey: id) else { return [] }
            let peer = CreditChannelParameters(mtu: mtu, mps: mps, credits: credits)
            let cancel = Action.cancelOpenTimeout(identifier: id)
            guard result == L2CAPConnectionResult.success else {
                let error = NearbyError(
                    .l2capChannelFailed, "the peer refused the L2CAP channel (result 0x\(String(result, radix: 16)))")
                return [cancel, .openFailed(identifier: id, error)]
            }
            guard peer.isValid, Self.isDynamic(dcid) else {
                let error = NearbyError(.malformedL2CAPPacket, "the peer answered with invalid channel parameters")
                let disconnect = L2CAPSignal.disconnectionRequest(
                    identifier: takeIdentifier(), destinationCID: dcid, sourceCID: open.key.localCID)
                return [cancel, .openFailed(identifier: id, error), .send(handle: handle, disconnect)]
            }
            let channel = CreditChannel(key: open.key, remoteCID: dcid, peer: peer, ours: ours)
            channels[open.key] = channel
            return [cancel, .opened(identifier: id, channel.info)]
        case .flowControlCredit(_, let cid, let credits):
            let key = channels.values.first(where: { $0.info.key.handle == handle && $0.info.remoteCID == cid && !$0.isClosed })?.info.key
                ?? L2CAPChannelKey(handle: handle, localCID: cid)
            guard var channel = channels[key] else { return [] }
            do {
                try channel.addPeerCredits(credits)
                channels[key] = channel
                return [.wakeWriters(key)]
            } catch {
                channels[key] = channel
                return closeWithDisconnect(key, error as? NearbyError ?? NearbyError(.malformedL2CAPPacket, "\(error)"))
            }
        case .disconnectionRequest(let id, let dcid, let scid):
            let key = L2CAPChannelKey(handle: handle, localCID: dcid)
            guard let channel = channels[key], channel.info.remoteCID == scid else {
                var data: [UInt8] = []
                data.appendLE16(scid)
                data.appendLE16(dcid)
                let reject = L2CAPSignal.commandReject(identifier: id, reason: L2CAPSignal.RejectReason.invalidCID, data: data)
                return [.send(handle: handle, reject)]
            }
            let response = L2CAPSignal.disconnectionResponse(identifier: id, destinationCID: dcid, sourceCID: scid)
            return [.send(handle: handle, response)] + close(key, nil)
        case .disconnectionResponse, .connectionParameterUpdateResponse:
            return []
        case .commandReject(let id, let reason, _):
            guard pendingOpens.removeValue(forKey: id) != nil else { return [] }
            let error = NearbyError(.l2capChannelFailed, "the peer rejected the L2CAP request (reason \(reason))")
            return [.cancelOpenTimeout(identifier: id), .openFailed(identifier: id, error)]
        case .connectionParameterUpdateRequest(let id, _):
            return [.send(handle: handle, .connectionParameterUpdateResponse(identifier: id, result: 0x0001))]
        case .unknown(_, let id, _):
            let reject = L2CAPSignal.commandReject(identifier: id, reason: L2CAPSignal.RejectReason.notUnderstood, data: [])
            return [.send(handle: handle, reject)]
        }
    }

    private mutating func accept(
        handle: UInt16, identifier: UInt8, psm: UInt16, sourceCID: UInt16, peer: CreditChannelParameters
    ) -> [Action] {
        let ours = self.ours
        func refuse(_ result: UInt16) -> [Action] {
            [.send(
                handle: handle,
                .leCreditConnectionResponse(
                    identifier: identifier, destinationCID: 0, mtu: ours.mtu, mps: ours.mps, credits: 0, result: result))]
        }
        guard servers.contains(psm) else { return refuse(L2CAPConnectionResult.psmNotSupported) }
        guard Self.isDynamic(sourceCID) else { return refuse(L2CAPConnectionResult.invalidSourceCID) }
        // Only open channels count: a closed one's source CID is free again for the peer.
        guard !channels.values.contains(where: { $0.info.key.handle == handle && $0.info.remoteCID == sourceCID && !$0.isClosed })
        else {
            return refuse(L2CAPConnectionResult.sourceCIDAlreadyAllocated)
        }
        guard peer.isValid else { return refuse(L2CAPConnectionResult.unacceptableParameters) }
        guard let cid = allocateCID(handle: handle) else { return refuse(L2CAPConnectionResult.noResources) }
        let key = L2CAPChannelKey(handle: handle, localCID: cid)
        let channel = CreditChannel(key: key, remoteCID: sourceCID, peer: peer, ours: ours)
        channels[key] = channel
        let response = L2CAPSignal.leCreditConnectionResponse(
            identifier: identifier, destinationCID: cid, mtu: ours.mtu, mps: ours.mps, credits: ours.credits,
            result: L2CAPConnectionResult.success)
        return [.send(handle: handle, response), .accepted(psm: psm, channel.info)]
    }

    // MARK: - Channel operations

    /// A reader asks for the next SDU of `key`; `nil` for an unknown channel (closed and drained).
    package mutating func read(_ key: L2CAPChannelKey) -> (CreditChannel.ReadOutcome, [Action])? {
        guard var channel = channels[key] else { return nil }
        let (outcome, grant) = channel.read()
        if case .closed = outcome {
            channels[key] = nil
        } else {
            channels[key] = channel
        }
        return (outcome, grantActions(key, grant))
    }

    /// Takes one of the peer's credits on `key` to send a K-frame; `false` when none is left.
    package mutating func takeCredit(_ key: L2CAPChannelKey) -> Bool {
        channels[key]?.takeCredit() ?? false
    }

    /// The channel's owner is done with `key`: if still open, a Disconnection Request goes out and it closes
    /// cleanly (its reader gets the end, its writers fail). Either way it is forgotten at once, queued SDUs and
    /// all, so its CIDs are free again. A channel the peer or the link already closed stays in the table (for
    /// its reader's error) only until its owner calls this.
    package mutating func closeLocally(_ key: L2CAPChannelKey) -> [Action] {
        guard let channel = channels[key] else { return [] }
        var actions: [Action] = []
        if !channel.isClosed {
            let request = L2CAPSignal.disconnectionRequest(
                identifier: takeIdentifier(), destinationCID: channel.info.remoteCID, sourceCID: key.localCID)
            actions = [Action.send(handle: key.handle, request)] + close(key, nil)
        }
        channels[key] = nil
        return actions
    }

    /// Connection `handle` ended: its channels close with `error`, its pending requests fail.
    package mutating func connectionEnded(_ handle: UInt16, _ error: NearbyError) -> [Action] {
        var actions: [Action] = []
        for key in channels.keys.sorted(by: { $0.localCID < $1.localCID }) where key.handle == handle {
            actions += close(key, error)
        }
        for (id, open) in pendingOpens.sorted(by: { $0.key < $1.key }) where open.key.handle == handle {
            pendingOpens[id] = nil
            actions += [.cancelOpenTimeout(identifier: id), .openFailed(identifier: id, error)]
        }
        return actions
    }

    /// The host stopped: every channel and pending request fails with `error`.
    package mutating func failAll(_ error: NearbyError) -> [Action] {
        var actions: [Action] = []
        for (id, _) in pendingOpens.sorted(by: { $0.key < $1.key }) {
            actions += [.cancelOpenTimeout(identifier: id), .openFailed(identifier: id, error)]
        }
        pendingOpens = [:]
        for key in channels.keys.sorted(by: { ($0.handle, $0.localCID) < ($1.handle, $1.localCID) }) {
            actions += close(key, error)
        }
        return actions
    }

    // MARK: - Helpers

    private mutating func close(_ key: L2CAPChannelKey, _ error: NearbyError?) -> [Action] {
        guard var channel = channels[key], !channel.isClosed else { return [] }
        let readerWaiting = channel.close(error)
        channels[key] = channel
        return [.closed(key, error, readerWaiting: readerWaiting)]
    }

    private mutating func closeWithDisconnect(_ key: L2CAPChannelKey, _ error: NearbyError) -> [Action] {
        guard let channel = channels[key], !channel.isClosed else { return [] }
        let request = L2CAPSignal.disconnectionRequest(
            identifier: takeIdentifier(), destinationCID: channel.info.remoteCID, sourceCID: key.localCID)
        return [.dropped("closing L2CAP channel \(key.localCID): \(error)"), .send(handle: key.handle, request)]
            + close(key, error)
    }

    private mutating func grantActions(_ key: L2CAPChannelKey, _ grant: Int) -> [Action] {
        guard grant > 0 else { return [] }
        let signal = L2CAPSignal.flowControlCredit(identifier: takeIdentifier(), cid: key.localCID, credits: UInt16(grant))
        return [.send(handle: key.handle, signal)]
    }

    private mutating func takeIdentifier() -> UInt8 {
        defer { nextIdentifier = nextIdentifier == 255 ? 1 : nextIdentifier + 1 }
        return nextIdentifier
    }

    private func allocateCID(handle: UInt16) -> UInt16? {
        let used = Set(channels.keys.filter { $0.handle == handle }.map(\.localCID))
            .union(pendingOpens.values.filter { $0.key.handle == handle }.map(\.key.localCID))
        return (L2CAPConstants.firstDynamicCID...L2CAPConstants.lastDynamicCID).first { !used.contains($0) }
    }

    private static func isDynamic(_ cid: UInt16) -> Bool {
        (L2CAPConstants.firstDynamicCID...L2CAPConstants.lastDynamicCID).contains(cid)
    }
}
