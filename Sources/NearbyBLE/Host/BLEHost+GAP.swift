import NearbyWire

/// GAP: scanning, advertising and LE connections.
extension BLEHost {
    // MARK: - GAP: scanning

    /// Adds a scan handler, starting scanning with `preset` when it is the first. Returns a token for
    /// ``removeScanHandler(_:)``. Uses extended scanning when the controller supports it, legacy otherwise.
    package func addScanHandler(
        preset: ScanPreset = .lowLatency, _ handler: @escaping @Sendable (AdvertisingReport) -> Void
    ) async throws -> Int {
        try checkUsable()
        scanHandlerCounter += 1
        let token = scanHandlerCounter
        scanHandlers[token] = handler
        if !scanning {
            scanning = true
            logger.debug("starting to scan", metadata: ["interval": "\(preset.interval)", "window": "\(preset.window)"])
            do {
                try await enableScanning(preset)
            } catch {
                scanning = false
                scanHandlers[token] = nil
                throw error
            }
        }
        return token
    }

    private func enableScanning(_ preset: ScanPreset) async throws {
        if supportsExtendedAdvertising,
            (try? await execute(.leSetExtendedScanParameters(active: preset.active, interval: preset.interval, window: preset.window))) != nil
        {
            try await execute(.leSetExtendedScanEnable(true))
            return
        }
        try await execute(.leSetScanParameters(active: preset.active, interval: preset.interval, window: preset.window))
        try await execute(.leSetScanEnable(true))
    }

    /// Removes a scan handler; scanning stops with the last one.
    package func removeScanHandler(_ token: Int) async {
        scanHandlers[token] = nil
        guard scanHandlers.isEmpty, scanning, failure == nil else { return }
        scanning = false
        if supportsExtendedAdvertising, (try? await execute(.leSetExtendedScanEnable(false))) != nil { return }
        _ = try? await execute(.leSetScanEnable(false))
    }

    // MARK: - GAP: advertising

    /// Starts connectable advertising of `data` (AD structures): legacy ADV_IND (at most 31 bytes) or, with
    /// `extended`, a non-legacy extended advertising set (at most 251 bytes) from this host's random address.
    package func startAdvertising(data: [UInt8], extended: Bool, intervalMillis: Int = 100) async throws {
        try checkUsable()
        if advertising != nil { await stopAdvertising() }
        let units = UInt32(max(20, intervalMillis)) * 8 / 5
        if extended {
            guard data.count <= 251 else {
                throw NearbyError(.invalidArgument, "extended advertising data is at most 251 bytes here, got \(data.count)")
            }
            try await execute(.leSetExtendedAdvertisingParameters(handle: 1, interval: units))
            try await execute(.leSetAdvertisingSetRandomAddress(handle: 1, address))
            try await execute(.leSetExtendedAdvertisingData(handle: 1, data))
            try await execute(.leSetExtendedAdvertisingEnable(true, handle: 1))
        } else {
            guard data.count <= 31 else {
                throw NearbyError(.invalidArgument, "legacy advertising data is at most 31 bytes, got \(data.count)")
            }
            try await execute(.leSetAdvertisingParameters(interval: UInt16(min(units, 0x4000))))
            try await execute(.leSetAdvertisingData(data))
            try await execute(.leSetAdvertisingEnable(true))
        }
        advertising = (data, extended)
    }

    func resumeAdvertising() async {
        guard let current = advertising, failure == nil else { return }
        if current.extended {
            _ = try? await execute(.leSetExtendedAdvertisingEnable(true, handle: 1))
        } else {
            _ = try? await execute(.leSetAdvertisingEnable(true))
        }
    }

    /// Stops advertising. Idempotent.
    package func stopAdvertising() async {
        guard let current = advertising else { return }
        advertising = nil
        guard failure == nil else { return }
        if current.extended {
            _ = try? await execute(.leSetExtendedAdvertisingEnable(false, handle: 1))
            _ = try? await execute(.leRemoveAdvertisingSet(handle: 1))
        } else {
            _ = try? await execute(.leSetAdvertisingEnable(false))
        }
    }

    // MARK: - GAP: connections

    /// Connects to `peer` as central; returns the connection handle.
    /// - Throws: `.timeout` when the peer does not connect within the configured connect timeout (the attempt is
    ///   cancelled), `.outOfOrderApiCall` when another connect is in progress.
    package func connect(to peer: BLEAddress) async throws -> UInt16 {
        try checkUsable()
        if let existing = connections.values.first(where: { $0.peer == peer && $0.isCentral }) {
            return existing.handle
        }
        guard pendingConnect == nil else {
            throw NearbyError(.outOfOrderApiCall, "another LE connection attempt is in progress")
        }
        let handle: UInt16 = try await withCheckedThrowingContinuation { continuation in
            pendingConnect = (peer, continuation)
            // In `oneShots`: it ends when LE Create Connection is answered, times out or fails (the host failed or
            // was closed). A closed host's scope runs nothing: the attempt fails at once then.
            let started = oneShots.spawn {
                do {
                    try await self.execute(.leCreateConnection(to: peer))
                } catch {
                    await self.failConnect(peer: peer, error)
                    return
                }
                await self.connectCommandAccepted(peer: peer)
            }
            if !started { failConnect(peer: peer, failure ?? NearbyError(.mediumUnavailable, "the BLE host was closed")) }
        }
        logger.debug("LE connected to \(peer)", metadata: ["handle": "\(handle)"])
        return handle
    }

    /// LE Create Connection was accepted: the attempt now waits at most the connect timeout for the connection.
    private func connectCommandAccepted(peer: BLEAddress) {
        guard pendingConnect?.peer == peer else { return }
        schedule(.connect(peer), after: configuration.connectTimeout)
    }

    private func failConnect(peer: BLEAddress, _ error: any Error) {
        guard let pending = pendingConnect, pending.peer == peer else { return }
        pendingConnect = nil
        timers.cancel(.connect(peer))
        pending.continuation.resume(throwing: error)
    }

    func connectTimedOut(peer: BLEAddress) async {
        guard let pending = pendingConnect, pending.peer == peer else { return }
        pendingConnect = nil
        pending.continuation.resume(throwing: NearbyError(.timeout, "LE connection to \(peer) timed out"))
        _ = try? await execute(.leCreateConnectionCancel)
    }

    /// Disconnects an LE connection and waits (at most 2 s) until the controller reports it ended, so that a new
    /// connection to the same peer is not mistaken for the old one.
    package func disconnect(handle: UInt16) async {
        guard connections[handle] != nil, failure == nil else { return }
        guard (try? await execute(.disconnect(handle: handle))) != nil, connections[handle] != nil else { return }
        await withCheckedContinuation { continuation in
            disconnectWaiters[handle, default: []].append(continuation)
            schedule(.disconnect(handle: handle), after: .seconds(2))
        }
    }

    func disconnectTimedOut(handle: UInt16) {
        for waiter in disconnectWaiters.removeValue(forKey: handle) ?? [] { waiter.resume() }
    }

    // MARK: - GAP: connection events

    func connectionCompleted(_ complete: LEConnectionComplete) {
        if complete.isCentral, let pending = pendingConnect {
            pendingConnect = nil
            timers.cancel(.connect(pending.peer))
            if complete.status != 0 {
                pending.continuation.resume(
                    throwing: NearbyError(
                        .endpointIoError,
                        "LE connection to \(pending.peer) failed with status 0x\(String(complete.status, radix: 16))"))
                return
            }
            connections[complete.handle] = Connection(handle: complete.handle, peer: complete.peer, isCentral: true)
            acl.connectionOpened(complete.handle)
            pending.continuation.resume(returning: complete.handle)
            return
        }
        guard complete.status == 0 else { return }
        connections[complete.handle] = Connection(
            handle: complete.handle, peer: complete.peer, isCentral: complete.isCentral)
        acl.connectionOpened(complete.handle)
        logger.debug("LE connection from \(complete.peer)", metadata: ["handle": "\(complete.handle)"])
        if !complete.isCentral, advertising != nil {
            oneShots.spawn { await self.resumeAdvertising() }
        }
    }

    func connectionEnded(handle: UInt16, reason: UInt8) {
        timers.cancel(.disconnect(handle: handle))
        for waiter in disconnectWaiters.removeValue(forKey: handle) ?? [] { waiter.resume() }
        guard let connection = connections.removeValue(forKey: handle) else { return }
        logger.debug(
            "LE connection ended", metadata: ["handle": "\(handle)", "reason": "0x\(String(reason, radix: 16))"])
        let error = NearbyError(
            .endpointIoError,
            "the LE connection to \(connection.peer) ended (reason 0x\(String(reason, radix: 16)))")
        perform(acl.connectionClosed(handle, error))
        perform(signalling.connectionEnded(handle, error))
        attConnectionEnded(handle: handle, error)
        gattEvents?.yield(.disconnected(GATTPeer(connection: handle, address: connection.peer)))
    }
}
