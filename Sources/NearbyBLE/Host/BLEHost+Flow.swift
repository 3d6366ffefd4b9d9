import NearbyWire

/// HCI commands and ACL data: the host performs what ``HCICommandFlow`` and ``ACLFlowControl`` decide.
extension BLEHost {
    /// Sends an HCI command and waits for its Command Complete (returning the return parameters after the status
    /// byte) or Command Status (returning `[]`). Commands wait for the controller's command credits, oldest first.
    /// - Throws: `.hciCommandFailed` for a non-zero status, `.timeout` when the controller does not answer within
    ///   `timeout` (default: the configured command timeout), `.mediumUnavailable` when the host has failed.
    @discardableResult
    package func execute(_ command: HCICommand, timeout: Duration? = nil) async throws -> [UInt8] {
        try checkUsable()
        let limit = timeout ?? configuration.commandTimeout
        return try await withCheckedThrowingContinuation { continuation in
            let (id, actions) = commands.submit(command, timeout: limit)
            commandWaiters[id] = continuation
            perform(actions)
        }
    }

    func perform(_ actions: [HCICommandFlow.Action]) {
        for action in actions {
            switch action {
            case .write(let id, let packet):
                do {
                    try transport.write(packet)
                } catch {
                    let nearby = error as? NearbyError
                        ?? NearbyError(.endpointIoError, "cannot write to the HCI transport", cause: error)
                    perform(commands.writeFailed(id, nearby))
                }
            case .scheduleTimeout(let id, let delay):
                schedule(.command(id), after: delay)
            case .cancelTimeout(let id):
                timers.cancel(.command(id))
            case .succeed(let id, let parameters):
                commandWaiters.removeValue(forKey: id)?.resume(returning: parameters)
            case .fail(let id, let error):
                if error.code == .timeout { logger.debug("\(error)") }
                commandWaiters.removeValue(forKey: id)?.resume(throwing: error)
            }
        }
    }

    /// Sends one L2CAP PDU on connection `handle`; returns once every ACL fragment was handed to the controller.
    func sendPDU(handle: UInt16, _ pdu: [UInt8]) async throws {
        try checkUsable()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let (ticket, actions) = acl.send(handle: handle, pdu: pdu)
            aclWaiters[ticket] = continuation
            perform(actions)
        }
    }

    /// Sends one signalling command without waiting for it to leave.
    func sendSignal(handle: UInt16, _ signal: L2CAPSignal) {
        logger.trace("L2CAP signal out", metadata: ["handle": "\(handle)", "signal": "\(signal)"])
        let pdu = L2CAPFrame.encode(cid: L2CAPConstants.leSignalingCID, payload: signal.encoded)
        perform(acl.send(handle: handle, pdu: pdu).1)
    }

    func perform(_ actions: [ACLFlowControl.Action]) {
        var writeError: NearbyError?
        for action in actions {
            switch action {
            case .write(let packet):
                guard writeError == nil else { continue }
                do {
                    try transport.write(packet)
                } catch {
                    writeError = NearbyError(.mediumUnavailable, "writing ACL data to the HCI transport failed", cause: error)
                }
            case .sent(let ticket):
                if let writeError {
                    aclWaiters.removeValue(forKey: ticket)?.resume(throwing: writeError)
                } else {
                    aclWaiters.removeValue(forKey: ticket)?.resume()
                }
            case .failed(let ticket, let error):
                if let waiter = aclWaiters.removeValue(forKey: ticket) {
                    waiter.resume(throwing: error)
                } else {
                    logger.debug("L2CAP signaling send failed: \(error)")
                }
            }
        }
        if let writeError {
            // The pipe to the controller is broken: nothing more can be sent or received.
            transport.close()
            transportEnded(writeError)
        }
    }
}
