import NearbyWire

/// L2CAP servers and credit-based channels: the host performs what ``L2CAPSignalling`` decides and keeps only the
/// suspended callers (openers, readers, writers waiting for credits).
extension BLEHost {
    /// Registers a credit-based channel server on `psm` (a dynamic one from 0x80 when `nil`); every accepted
    /// channel is passed to `onChannel`. Returns the PSM.
    package func listen(psm: UInt16? = nil, onChannel: @escaping @Sendable (L2CAPChannel) -> Void) throws -> UInt16 {
        try checkUsable()
        let chosen = try signalling.listen(psm: psm)
        servers[chosen] = onChannel
        return chosen
    }

    /// Removes the server on `psm`; open channels stay open.
    package func stopListening(psm: UInt16) {
        signalling.stopListening(psm: psm)
        servers[psm] = nil
    }

    /// Opens a credit-based channel to `psm` on an existing LE connection.
    /// - Throws: `.l2capChannelFailed` when the peer refuses, `.timeout` when it does not answer.
    package func openChannel(handle: UInt16, psm: UInt16) async throws -> L2CAPChannel {
        try checkUsable()
        guard connections[handle] != nil else { throw NearbyError(.endpointIoError, "no LE connection \(handle)") }
        let (identifier, actions) = try signalling.open(handle: handle, psm: psm)
        return try await withCheckedThrowingContinuation { continuation in
            openWaiters[identifier] = continuation
            perform(actions)
        }
    }

    func makeChannel(_ info: CreditChannelInfo) -> L2CAPChannel {
        L2CAPChannel(
            host: self, handle: info.key.handle, localCID: info.key.localCID, remoteCID: info.remoteCID,
            peer: connections[info.key.handle]?.peer ?? address, peerMTU: info.peerMTU, peerMPS: info.peerMPS)
    }

    func perform(_ actions: [L2CAPSignalling.Action]) {
        for action in actions {
            switch action {
            case .send(let handle, let signal):
                sendSignal(handle: handle, signal)
            case .scheduleOpenTimeout(let identifier, let delay):
                schedule(.channelOpen(identifier), after: delay)
            case .cancelOpenTimeout(let identifier):
                timers.cancel(.channelOpen(identifier))
            case .opened(let identifier, let info):
                openWaiters.removeValue(forKey: identifier)?.resume(returning: makeChannel(info))
            case .openFailed(let identifier, let error):
                openWaiters.removeValue(forKey: identifier)?.resume(throwing: error)
            case .accepted(let psm, let info):
                logger.debug(
                    "accepted L2CAP channel",
                    metadata: ["psm": "\(psm)", "cid": "\(info.key.localCID)", "peerMTU": "\(info.peerMTU)", "peerMPS": "\(info.peerMPS)"])
                servers[psm]?(makeChannel(info))
            case .deliver(let key, let sdu):
                readers.removeValue(forKey: key)?.resume(returning: sdu)
            case .wakeWriters(let key):
                for waiter in creditWaiters.removeValue(forKey: key) ?? [] { waiter.resume() }
            case .closed(let key, let error, _):
                let writeError = error ?? NearbyError(.endpointIoError, "the L2CAP channel closed")
                for waiter in creditWaiters.removeValue(forKey: key) ?? [] { waiter.resume(throwing: writeError) }
                if let reader = readers.removeValue(forKey: key) {
                    if let error { reader.resume(throwing: error) } else { reader.resume(returning: nil) }
                }
            case .dropped(let reason):
                logger.notice("\(reason)")
            }
        }
    }

    // MARK: - Channel operations (called by L2CAPChannel)

    func receiveSDU(_ key: L2CAPChannelKey) async throws -> [UInt8]? {
        guard let (outcome, actions) = signalling.read(key) else { return nil }
        perform(actions)
        switch outcome {
        case .sdu(let sdu):
            return sdu
        case .closed(let error):
            if let error { throw error }
            return nil
        case .busy:
            throw NearbyError(.outOfOrderApiCall, "two concurrent reads on one L2CAP channel")
        case .wait:
            return try await withCheckedThrowingContinuation { continuation in
                readers[key] = continuation
            }
        }
    }

    func sendSDU(_ key: L2CAPChannelKey, _ sdu: [UInt8]) async throws {
        guard let channel = signalling.channel(key), !channel.isClosed else {
            throw signalling.channel(key)?.closedError ?? NearbyError(.endpointIoError, "the L2CAP channel is closed")
        }
        guard sdu.count <= channel.info.peerMTU else {
            throw NearbyError(.invalidArgument, "SDU of \(sdu.count) bytes exceeds the peer's MTU \(channel.info.peerMTU)")
        }
        if !sendGates[key, default: AsyncGate()].tryEnter() {
            await withCheckedContinuation { sendGates[key, default: AsyncGate()].enqueue($0) }
        }
        defer {
            sendGates[key]?.leave()
            if sendGates[key]?.isIdle == true { sendGates[key] = nil }
        }
        for segment in KFrameSegmenter.segments(sdu: sdu, mps: channel.info.peerMPS) {
            while !signalling.takeCredit(key) {
                guard let current = signalling.channel(key), !current.isClosed else {
                    throw signalling.channel(key)?.closedError ?? NearbyError(.endpointIoError, "the L2CAP channel closed")
                }
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    creditWaiters[key, default: []].append(continuation)
                }
            }
            try await sendPDU(handle: key.handle, L2CAPFrame.encode(cid: channel.info.remoteCID, payload: segment))
        }
    }

    /// The number of credits the peer has currently granted on a channel (for tests and diagnostics).
    func peerCredits(_ key: L2CAPChannelKey) -> Int? { signalling.channel(key)?.peerCredits }

    func closeChannel(_ key: L2CAPChannelKey, disconnectLink: Bool) async {
        // A channel the peer or the link already closed is only forgotten here (its CIDs are free again).
        guard let channel = signalling.channel(key) else { return }
        let wasOpen = !channel.isClosed
        perform(signalling.closeLocally(key))
        guard wasOpen else { return }
        if disconnectLink, connections[key.handle]?.isCentral == true, !signalling.hasChannels(onHandle: key.handle) {
            // Let the disconnection request go out first.
            try? await clock.sleep(for: .milliseconds(50))
            await disconnect(handle: key.handle)
        }
    }
}
