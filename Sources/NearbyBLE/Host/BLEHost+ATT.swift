import NearbyWire

/// ATT on the fixed channel 0x0004: the host routes the peer's requests to this side's ``GATTServer`` and the
/// answers to its requests to the connection's ``ATTClientQueue``, and performs what they decide.
extension BLEHost {
    // MARK: - Routing

    func receiveATT(handle: UInt16, _ payload: [UInt8]) {
        guard connections[handle] != nil else { return }
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU(decoding: payload)
        } catch {
            logger.notice("dropping malformed ATT PDU: \(error)")
            if let opcode = payload.first, ATTPDU.isRequest(opcode) {
                sendATT(handle: handle, .errorResponse(requestOpcode: opcode, handle: 0, error: ATTPDU.ErrorCode.invalidPDU))
            }
            return
        }
        logger.trace("ATT in", metadata: ["handle": "\(handle)", "opcode": "\(pdu.opcode)"])
        var bearer = attBearers[handle] ?? ATTBearer()
        let toServer = ATTPDU.isRequest(pdu.opcode) || pdu.opcode == ATTPDU.Opcode.writeCommand
            || pdu.opcode == ATTPDU.Opcode.confirmation
        if toServer {
            guard let database = gattDatabase else {
                attBearers[handle] = bearer
                answerWithoutDatabase(handle: handle, pdu)
                return
            }
            var server = bearer.server ?? GATTServer(database: database, localMTU: Self.localATTMTU)
            if bearer.server == nil { server.setMTU(bearer.mtu) }
            server.database = database
            let actions = server.receive(pdu)
            bearer.mtu = server.mtu
            bearer.server = server
            attBearers[handle] = bearer
            perform(serverActions: actions, handle: handle)
        } else {
            let actions = bearer.client.receive(pdu)
            attBearers[handle] = bearer
            perform(clientActions: actions, handle: handle)
        }
    }

    /// Without a published database the host still answers an MTU exchange and refuses everything else.
    private func answerWithoutDatabase(handle: UInt16, _ pdu: ATTPDU) {
        switch pdu {
        case .exchangeMTURequest(let mtu):
            attBearers[handle]?.mtu = max(ATTPDU.defaultMTU, min(Int(mtu), Self.localATTMTU))
            sendATT(handle: handle, .exchangeMTUResponse(mtu: UInt16(Self.localATTMTU)))
        case .writeCommand, .confirmation:
            break
        default:
            sendATT(handle: handle, .errorResponse(
                requestOpcode: pdu.opcode, handle: 0, error: ATTPDU.ErrorCode.attributeNotFound))
        }
    }

    /// The receive MTU this host offers on ATT.
    static var localATTMTU: Int { 517 }

    func sendATT(handle: UInt16, _ pdu: ATTPDU) {
        let frame = L2CAPFrame.encode(cid: ATTBearer.cid, payload: pdu.encodedBytes)
        perform(acl.send(handle: handle, pdu: frame).1)
    }

    func attConnectionEnded(handle: UInt16, _ error: NearbyError) {
        guard var bearer = attBearers.removeValue(forKey: handle) else {
            indicationWaiters.removeValue(forKey: handle)?.resume(throwing: error)
            return
        }
        let actions = bearer.client.failAll(error)
        perform(clientActions: actions, handle: handle)
        attWaiters[handle] = nil
        timers.cancel(.indication(handle: handle))
        indicationWaiters.removeValue(forKey: handle)?.resume(throwing: error)
        indicationGates[handle] = nil
        for subscriber in (gattSubscribers.removeValue(forKey: handle) ?? [:]).values { subscriber.finish() }
    }

    // MARK: - Server

    /// Publishes a GATT server with `services` on every LE connection (replacing any published before); the
    /// stream carries what clients do with it until ``unpublishGATT()`` or the host ends.
    package func publishGATT(_ services: [GATTServiceDefinition]) throws -> AsyncStream<GATTServerEvent> {
        try checkUsable()
        gattEvents?.finish()
        let (stream, continuation) = AsyncStream.makeStream(of: GATTServerEvent.self)
        gattDatabase = GATTDatabase(services: services)
        gattEvents = continuation
        for handle in Array(attBearers.keys) { attBearers[handle]?.server = nil }
        return stream
    }

    /// Removes the published GATT server.
    package func unpublishGATT() {
        gattDatabase = nil
        gattEvents?.finish()
        gattEvents = nil
        for handle in Array(attBearers.keys) { attBearers[handle]?.server = nil }
    }

    /// Changes the value clients read from the characteristic `uuid` of the published server.
    package func updateGATTValue(_ value: [UInt8], of uuid: BLEUUID) {
        gattDatabase?.setValue(value, of: uuid)
    }

    /// Answers the write with response `peer` is waiting on.
    package func respondToWrite(_ peer: GATTPeer) {
        guard connections[peer.connection] != nil else { return }
        sendATT(handle: peer.connection, .writeResponse)
    }

    /// Indicates `value` of characteristic `uuid` to `peer` and waits for its confirmation (one indication at a
    /// time per connection, as ATT requires).
    /// - Throws: `.endpointIoError` when the client has not enabled indications or the connection ended, `.timeout`
    ///   when it does not confirm within 30 s.
    package func indicate(_ value: [UInt8], of uuid: BLEUUID, to peer: GATTPeer) async throws {
        try checkUsable()
        let handle = peer.connection
        if !indicationGates[handle, default: AsyncGate()].tryEnter() {
            await withCheckedContinuation { indicationGates[handle, default: AsyncGate()].enqueue($0) }
        }
        defer {
            indicationGates[handle]?.leave()
            if indicationGates[handle]?.isIdle == true { indicationGates[handle] = nil }
        }
        guard connections[handle] != nil, let bearer = attBearers[handle], let server = bearer.server,
            let valueHandle = server.database.valueHandle(of: uuid), server.indicationsEnabled(valueHandle: valueHandle)
        else {
            throw NearbyError(.endpointIoError, "\(peer) has not enabled indications of \(uuid)")
        }
        guard value.count <= bearer.mtu - 3 else {
            throw NearbyError(.invalidArgument, "an indication of \(value.count) bytes exceeds the ATT MTU \(bearer.mtu)")
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            indicationWaiters[handle] = continuation
            schedule(.indication(handle: handle), after: .seconds(30))
            sendATT(handle: handle, .indication(handle: valueHandle, value: value))
        }
    }

    /// The ATT MTU of a connection (23 until exchanged).
    package func attMTU(connection: UInt16) -> Int {
        attBearers[connection]?.mtu ?? ATTPDU.defaultMTU
    }

    private func perform(serverActions actions: [GATTServer.Action], handle: UInt16) {
        let peer = GATTPeer(connection: handle, address: connections[handle]?.peer ?? address)
        for action in actions {
            switch action {
            case .send(let pdu):
                sendATT(handle: handle, pdu)
            case .written(let uuid, let value, let needsResponse):
                gattEvents?.yield(.written(peer, uuid: uuid, value: value, needsResponse: needsResponse))
            case .subscriptionChanged(let uuid, let indications, _):
                gattEvents?.yield(.subscriptionChanged(peer, uuid: uuid, indications: indications))
            case .confirmed:
                timers.cancel(.indication(handle: handle))
                indicationWaiters.removeValue(forKey: handle)?.resume()
            }
        }
    }

    func indicationTimedOut(handle: UInt16) {
        indicationWaiters.removeValue(forKey: handle)?.resume(
            throwing: NearbyError(.timeout, "the GATT client did not confirm an indication within 30 s"))
    }

    // MARK: - Client

    /// Sends one ATT request on `connection` and returns the server's response.
    /// - Throws: `.gattRequestFailed` for an ATT Error Response, `.timeout` after the ATT transaction timeout,
    ///   `.endpointIoError` when the connection ended.
    package func attRequest(connection: UInt16, _ request: ATTPDU) async throws -> ATTPDU {
        try checkUsable()
        guard connections[connection] != nil else { throw NearbyError(.endpointIoError, "no LE connection \(connection)") }
        return try await withCheckedThrowingContinuation { continuation in
            var bearer = attBearers[connection] ?? ATTBearer()
            let (id, actions) = bearer.client.submit(request)
            attBearers[connection] = bearer
            attWaiters[connection, default: [:]][id] = continuation
            perform(clientActions: actions, handle: connection)
        }
    }

    func perform(clientActions actions: [ATTClientQueue.Action], handle: UInt16) {
        for action in actions {
            switch action {
            case .send(let pdu):
                sendATT(handle: handle, pdu)
            case .complete(let id, let pdu):
                attWaiters[handle]?.removeValue(forKey: id)?.resume(returning: pdu)
            case .fail(let id, let error):
                attWaiters[handle]?.removeValue(forKey: id)?.resume(throwing: error)
            case .scheduleTimeout(let id, let delay):
                schedule(.att(handle: handle, id: id), after: delay)
            case .cancelTimeout(let id):
                timers.cancel(.att(handle: handle, id: id))
            case .value(let valueHandle, let value, _):
                gattSubscribers[handle]?[valueHandle]?.yield(value)
            }
        }
    }

    func attTimedOut(handle: UInt16, id: ATTClientQueue.RequestID) {
        guard var bearer = attBearers[handle] else { return }
        let actions = bearer.client.timedOut(id)
        attBearers[handle] = bearer
        perform(clientActions: actions, handle: handle)
    }

    /// Exchanges ATT MTUs with the server on `connection`; returns the connection's ATT MTU.
    @discardableResult
    package func exchangeATTMTU(connection: UInt16) async throws -> Int {
        let response = try await attRequest(connection: connection, .exchangeMTURequest(mtu: UInt16(Self.localATTMTU)))
        guard case .exchangeMTUResponse(let serverMTU) = response else {
            throw NearbyError(.malformedATTPDU, "unexpected answer to an MTU exchange")
        }
        let mtu = max(ATTPDU.defaultMTU, min(Int(serverMTU), Self.localATTMTU))
        attBearers[connection]?.mtu = mtu
        attBearers[connection]?.server?.setMTU(mtu)
        return mtu
    }

    /// Confirms the indication the server on `connection` is waiting on (after its value was taken).
    package func confirmIndication(connection: UInt16) {
        guard connections[connection] != nil else { return }
        sendATT(handle: connection, .confirmation)
    }

    /// Delivers the values the server on `connection` indicates or notifies for `valueHandle` (after this side
    /// wrote its CCCD); the stream ends with the connection.
    package func valueUpdates(connection: UInt16, valueHandle: UInt16) -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        if connections[connection] == nil {
            continuation.finish()
        } else {
            gattSubscribers[connection, default: [:]][valueHandle]?.finish()
            gattSubscribers[connection, default: [:]][valueHandle] = continuation
        }
        return stream
    }
}
