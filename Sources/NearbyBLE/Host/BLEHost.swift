import Logging
import NearbyWire

/// A user-space Bluetooth LE host: HCI command flow, ACL flow control, GAP (advertising, scanning, connections)
/// and L2CAP LE credit-based channels, over one ``HCITransport``.
///
/// One actor owns all host state. Its reader task splits the transport's H4 stream into packets and feeds them
/// in; value-type state machines (``H4Deframer``, ``L2CAPReassembler``, ``KFrameReassembler``) do the parsing.
/// Malformed input from the controller or the peer is logged and dropped (or answered with an L2CAP Command
/// Reject); it never traps. When the transport ends, every pending operation and channel fails with a
/// `.mediumUnavailable` error naming the cause.
public actor BLEHost {
    /// Host settings.
    public struct Configuration: Sendable {
        /// How long to wait for Command Complete / Command Status before failing a command.
        public var commandTimeout: Duration = .seconds(2)
        /// How long an outgoing LE connection may take.
        public var connectTimeout: Duration = .seconds(10)
        /// How long to wait for an L2CAP connection response.
        public var channelOpenTimeout: Duration = .seconds(10)
        /// The MTU, MPS and initial credits this host offers on every credit-based channel.
        public var channelParameters = CreditChannelParameters(mtu: 4096, mps: 1024, credits: 32)
        /// The static random address to use; a fresh one when `nil`.
        public var address: BLEAddress? = nil
        /// Creates the default configuration.
        public init() {}
    }

    private struct PendingCommand {
        let id: Int
        let opcode: HCIOpcode
        let expectsStatus: Bool
        let continuation: CheckedContinuation<[UInt8], any Error>
    }

    private struct Connection {
        let handle: UInt16
        let peer: BLEAddress
        let isCentral: Bool
        var reassembler = L2CAPReassembler()
        var packetsInFlight = 0
    }

    struct ChannelKey: Hashable, Sendable {
        let handle: UInt16
        let localCID: UInt16
    }

    private struct ChannelRecord {
        let key: ChannelKey
        var remoteCID: UInt16
        var peerMTU: Int
        var peerMPS: Int
        var peerCredits: Int
        var localCreditsOutstanding: Int
        var creditsToReturn = 0
        var reassembler: KFrameReassembler
        var inbound: [(sdu: [UInt8], frames: Int)] = []
        var reader: CheckedContinuation<[UInt8]?, any Error>? = nil
        var creditWaiters: [CheckedContinuation<Void, any Error>] = []
        var sendGate = AsyncGate()
        var closedError: NearbyError? = nil
        var sendGateIdle: Bool { sendGate.isIdle }
        var isClosed = false
    }

    private struct PendingOpen {
        let key: ChannelKey
        let continuation: CheckedContinuation<L2CAPChannel, any Error>
    }

    /// The transport to the controller.
    public nonisolated let transport: any HCITransport
    /// The static random address this host uses for advertising and connecting.
    public nonisolated let address: BLEAddress
    private let configuration: Configuration
    private var logger: Logger

    private var deframer = H4Deframer()
    private var readerTask: Task<Void, Never>?
    private var started = false
    private var failure: NearbyError?

    private var commandGate = AsyncGate()
    private var pendingCommand: PendingCommand?
    private var commandCounter = 0

    private var aclMaxDataLength = 27
    private var aclBufferCount = 1
    private var aclCredits = 1
    private var aclWaiters: [CheckedContinuation<Void, any Error>] = []
    private var aclSendGate = AsyncGate()

    /// Whether the controller reports the LE Extended Advertising feature.
    public private(set) var supportsExtendedAdvertising = false

    private var connections: [UInt16: Connection] = [:]
    private var pendingConnect: (peer: BLEAddress, continuation: CheckedContinuation<UInt16, any Error>)?

    private var channels: [ChannelKey: ChannelRecord] = [:]
    private var pendingOpens: [UInt8: PendingOpen] = [:]
    private var servers: [UInt16: @Sendable (L2CAPChannel) -> Void] = [:]
    private var nextSignalIdentifier: UInt8 = 1
    private var nextDynamicPSM: UInt16 = 0x0080

    private var scanHandlers: [Int: @Sendable (AdvertisingReport) -> Void] = [:]
    private var scanHandlerCounter = 0
    private var scanning = false
    private var advertising: (data: [UInt8], extended: Bool)?
    private var failureObservers: [Int: @Sendable (NearbyError) -> Void] = [:]

    /// Creates a host on an open transport; call ``start()`` next.
    public init(transport: any HCITransport, configuration: Configuration = Configuration(), logger: Logger) {
        self.transport = transport
        self.configuration = configuration
        self.address = configuration.address ?? BLEAddress.staticRandom()
        var logger = logger
        logger[metadataKey: "hci"] = "\(transport.description)"
        self.logger = logger
    }

    /// Opens the transport `spec` names and starts a host on it.
    public static func open(
        _ spec: HCITransportSpec, configuration: Configuration = Configuration(), logger: Logger
    ) async throws -> BLEHost {
        let transport = try HCITransportFactory.open(spec)
        let host = BLEHost(transport: transport, configuration: configuration, logger: logger)
        do {
            try await host.start()
        } catch {
            await host.close()
            throw error
        }
        return host
    }

    // MARK: - Lifecycle

    /// Starts reading from the controller and runs the init sequence: Reset, event masks, LE buffer size, LE
    /// features, and LE Set Random Address with this host's static random address.
    /// - Throws: `.mediumUnavailable` when the controller does not answer or the transport fails.
    public func start() async throws {
        guard !started else { return }
        started = true
        let stream = transport.inbound
        readerTask = Task { [weak self] in
            do {
                for try await chunk in stream {
                    guard let self else { return }
                    await self.ingest(chunk)
                }
                await self?.transportEnded(NearbyError(.mediumUnavailable, "the HCI transport was closed"))
            } catch {
                let nearby = error as? NearbyError
                    ?? NearbyError(.mediumUnavailable, "the HCI transport failed", cause: error)
                await self?.transportEnded(nearby)
            }
        }
        do {
            _ = try await execute(HCICommand(.reset))
        } catch {
            throw NearbyError(
                .mediumUnavailable, "the HCI controller at \(transport.description) did not answer HCI_Reset", cause: error)
        }
        _ = try? await execute(.setEventMask())
        _ = try? await execute(.leSetEventMask())
        let le = try await execute(HCICommand(.leReadBufferSize))
        var r = LEByteReader(le, context: "LE Read Buffer Size")
        var length = Int(try r.u16("length"))
        var count = Int(try r.u8("count"))
        if length == 0 || count == 0 {
            let shared = try await execute(HCICommand(.readBufferSize))
            var s = LEByteReader(shared, context: "Read Buffer Size")
            length = Int(try s.u16("ACL length"))
            _ = try s.u8("SCO length")
            count = Int(try s.u16("ACL count"))
        }
        aclMaxDataLength = max(27, length)
        aclBufferCount = max(1, count)
        aclCredits = aclBufferCount
        if let features = try? await execute(HCICommand(.leReadLocalFeatures)), features.count >= 2 {
            supportsExtendedAdvertising = features[1] & 0x10 != 0
        }
        _ = try await execute(.leSetRandomAddress(address))
        logger.debug(
            "HCI host ready",
            metadata: [
                "address": "\(address)", "aclLength": "\(aclMaxDataLength)", "aclBuffers": "\(aclBufferCount)",
                "extendedAdvertising": "\(supportsExtendedAdvertising)",
            ])
    }

    /// Closes the transport; every channel and pending operation fails. Idempotent.
    public func close() async {
        transport.close()
        transportEnded(NearbyError(.mediumUnavailable, "the BLE host was closed"))
        readerTask?.cancel()
    }

    /// Registers a callback for when the host fails (transport lost); returns a token for
    /// ``removeFailureObserver(_:)``. Called at once when the host already failed.
    public func addFailureObserver(_ observer: @escaping @Sendable (NearbyError) -> Void) -> Int {
        scanHandlerCounter += 1
        if let failure { observer(failure) } else { failureObservers[scanHandlerCounter] = observer }
        return scanHandlerCounter
    }

    /// Removes a failure observer.
    public func removeFailureObserver(_ token: Int) {
        failureObservers[token] = nil
    }

    /// `nil` while usable; the error that ended the host otherwise.
    public var failureReason: NearbyError? { failure }

    private func transportEnded(_ error: NearbyError) {
        guard failure == nil else { return }
        failure = error
        logger.warning("BLE host stopped: \(error)")
        if let pending = pendingCommand {
            pendingCommand = nil
            pending.continuation.resume(throwing: error)
        }
        if let connect = pendingConnect {
            pendingConnect = nil
            connect.continuation.resume(throwing: error)
        }
        for waiter in aclWaiters { waiter.resume(throwing: error) }
        aclWaiters = []
        for (_, open) in pendingOpens { open.continuation.resume(throwing: error) }
        pendingOpens = [:]
        for key in Array(channels.keys) { failChannel(key, error) }
        connections = [:]
        scanHandlers = [:]
        let observers = failureObservers.values
        failureObservers = [:]
        for observer in observers { observer(error) }
    }

    private func checkUsable() throws {
        if let failure { throw failure }
    }

    // MARK: - Commands

    /// Sends an HCI command and waits for its Command Complete (returning the return parameters after the status
    /// byte) or Command Status (returning `[]`).
    /// - Throws: `.hciCommandFailed` for a non-zero status, `.timeout` when the controller does not answer within
    ///   `timeout` (default: the configured command timeout), `.mediumUnavailable` when the host has failed.
    @discardableResult
    public func execute(_ command: HCICommand, timeout: Duration? = nil) async throws -> [UInt8] {
        try checkUsable()
        if !commandGate.tryEnter() {
            await withCheckedContinuation { commandGate.enqueue($0) }
        }
        defer { commandGate.leave() }
        try checkUsable()
        commandCounter += 1
        let id = commandCounter
        let limit = timeout ?? configuration.commandTimeout
        let packet = H4Packet.command(command.encoded).encoded
        return try await withCheckedThrowingContinuation { continuation in
            pendingCommand = PendingCommand(
                id: id, opcode: command.opcode, expectsStatus: command.expectsStatus, continuation: continuation)
            do {
                try transport.write(packet)
            } catch {
                pendingCommand = nil
                continuation.resume(throwing: error)
                return
            }
            Task { [weak self] in
                try? await Task.sleep(for: limit)
                await self?.commandTimedOut(id: id)
            }
        }
    }

    private func commandTimedOut(id: Int) {
        guard let pending = pendingCommand, pending.id == id else { return }
        pendingCommand = nil
        logger.debug("HCI command \(pending.opcode) timed out")
        pending.continuation.resume(
            throwing: NearbyError(.timeout, "the HCI controller did not answer command \(pending.opcode)"))
    }

    private func completeCommand(opcode: HCIOpcode, status: UInt8, parameters: [UInt8]) {
        guard let pending = pendingCommand, pending.opcode == opcode else {
            if opcode.rawValue != 0 { logger.debug("unexpected completion of HCI command \(opcode)") }
            return
        }
        pendingCommand = nil
        if status != 0 {
            pending.continuation.resume(
                throwing: NearbyError(
                    .hciCommandFailed,
                    "HCI command \(opcode) failed with status 0x\(String(status, radix: 16))"))
        } else {
            pending.continuation.resume(returning: parameters)
        }
    }

    // MARK: - Inbound

    private func ingest(_ chunk: [UInt8]) {
        deframer.append(chunk)
        while true {
            let packet: H4Packet?
            do {
                packet = try deframer.next()
            } catch {
                let nearby = NearbyError(.mediumUnavailable, "the HCI stream is corrupt", cause: error as? NearbyError)
                transport.close()
                transportEnded(nearby)
                return
            }
            guard let packet else { return }
            switch packet {
            case .event(let bytes):
                do {
                    handle(try HCIEvent(decoding: bytes))
                } catch {
                    logger.notice("dropping malformed HCI event: \(error)")
                }
            case .acl(let bytes):
                do {
                    try handleACL(try ACLPacket(decoding: bytes))
                } catch {
                    logger.notice("dropping malformed ACL data: \(error)")
                }
            default:
                break
            }
        }
    }

    /// Feeds raw H4 bytes as if they came from the controller (for tests of malformed input).
    public func injectFromController(_ bytes: [UInt8]) {
        ingest(bytes)
    }

    private func handle(_ event: HCIEvent) {
        switch event {
        case .commandComplete(_, let opcode, let parameters):
            let status = parameters.first ?? 0
            completeCommand(opcode: opcode, status: status, parameters: Array(parameters.dropFirst()))
        case .commandStatus(let status, _, let opcode):
            completeCommand(opcode: opcode, status: status, parameters: [])
        case .numberOfCompletedPackets(let entries):
            for entry in entries {
                let count = Int(entry.count)
                if var connection = connections[entry.handle] {
                    connection.packetsInFlight = max(0, connection.packetsInFlight - count)
                    connections[entry.handle] = connection
                }
                aclCredits = min(aclBufferCount, aclCredits + count)
            }
            wakeACLWaiters()
        case .disconnectionComplete(let status, let handle, let reason):
            guard status == 0 else { return }
            connectionEnded(handle: handle, reason: reason)
        case .leConnectionComplete(let complete):
            connectionCompleted(complete)
        case .leAdvertisingReports(let reports):
            logger.trace("advertising reports", metadata: ["count": "\(reports.count)", "handlers": "\(scanHandlers.count)", "first": "\(reports.first.map { "\($0.address) \($0.eventType) \($0.data)" } ?? "")"])
            for report in reports {
                for handler in scanHandlers.values { handler(report) }
            }
        case .unhandled(let code, let parameters):
            if code == HCIEvent.Code.leMeta, parameters.first == 0x12, advertising != nil {
                // Advertising Set Terminated (a connection ended it): advertise again.
                Task { await self.resumeAdvertising() }
            }
        }
    }

    private func wakeACLWaiters() {
        while aclCredits > 0, !aclWaiters.isEmpty {
            aclCredits -= 1
            aclWaiters.removeFirst().resume()
        }
    }

    private func connectionCompleted(_ complete: LEConnectionComplete) {
        if complete.isCentral, let pending = pendingConnect {
            pendingConnect = nil
            if complete.status != 0 {
                pending.continuation.resume(
                    throwing: NearbyError(
                        .endpointIoError,
                        "LE connection to \(pending.peer) failed with status 0x\(String(complete.status, radix: 16))"))
                return
            }
            connections[complete.handle] = Connection(handle: complete.handle, peer: complete.peer, isCentral: true)
            pending.continuation.resume(returning: complete.handle)
            return
        }
        guard complete.status == 0 else { return }
        connections[complete.handle] = Connection(
            handle: complete.handle, peer: complete.peer, isCentral: complete.isCentral)
        logger.debug("LE connection from \(complete.peer)", metadata: ["handle": "\(complete.handle)"])
        if !complete.isCentral, advertising != nil {
            Task { await self.resumeAdvertising() }
        }
    }

    private func connectionEnded(handle: UInt16, reason: UInt8) {
        guard let connection = connections.removeValue(forKey: handle) else { return }
        logger.debug(
            "LE connection ended", metadata: ["handle": "\(handle)", "reason": "0x\(String(reason, radix: 16))"])
        // The controller frees the buffers of a closed connection without reporting them.
        aclCredits = min(aclBufferCount, aclCredits + connection.packetsInFlight)
        wakeACLWaiters()
        let error = NearbyError(
            .endpointIoError,
            "the LE connection to \(connection.peer) ended (reason 0x\(String(reason, radix: 16)))")
        for key in channels.keys where key.handle == handle { failChannel(key, error) }
        for (id, open) in pendingOpens where open.key.handle == handle {
            pendingOpens[id] = nil
            open.continuation.resume(throwing: error)
        }
    }

    private func handleACL(_ packet: ACLPacket) throws {
        logger.trace("ACL in", metadata: ["handle": "\(packet.handle)", "boundary": "\(packet.boundary)", "length": "\(packet.data.count)"])
        guard var connection = connections[packet.handle] else {
            throw NearbyError(.malformedHCIPacket, "ACL data for unknown handle \(packet.handle)")
        }
        let pdu = try connection.reassembler.append(packet)
        connections[packet.handle] = connection
        guard let pdu else { return }
        let (cid, payload) = try L2CAPFrame.decode(pdu)
        if cid == L2CAPConstants.leSignalingCID {
            handleSignaling(handle: packet.handle, payload)
        } else {
            try handleKFrame(key: ChannelKey(handle: packet.handle, localCID: cid), payload)
        }
    }

    // MARK: - ACL out

    private func sendPDU(handle: UInt16, _ pdu: [UInt8]) async throws {
        try checkUsable()
        if !aclSendGate.tryEnter() {
            await withCheckedContinuation { aclSendGate.enqueue($0) }
        }
        defer { aclSendGate.leave() }
        for fragment in ACLPacket.fragments(handle: handle, pdu: pdu, maxDataLength: aclMaxDataLength) {
            try checkUsable()
            guard connections[handle] != nil else {
                throw NearbyError(.endpointIoError, "the LE connection \(handle) is gone")
            }
            if aclCredits > 0 {
                aclCredits -= 1
            } else {
                try await withCheckedThrowingContinuation { aclWaiters.append($0) }
                guard connections[handle] != nil else {
                    aclCredits = min(aclBufferCount, aclCredits + 1)
                    wakeACLWaiters()
                    throw NearbyError(.endpointIoError, "the LE connection \(handle) is gone")
                }
            }
            connections[handle]?.packetsInFlight += 1
            try transport.write(H4Packet.acl(fragment.encoded).encoded)
        }
    }

    private func sendSignal(handle: UInt16, _ signal: L2CAPSignal) {
        logger.trace("L2CAP signal out", metadata: ["handle": "\(handle)", "signal": "\(signal)"])
        let pdu = L2CAPFrame.encode(cid: L2CAPConstants.leSignalingCID, payload: signal.encoded)
        Task {
            do {
                try await self.sendPDU(handle: handle, pdu)
            } catch {
                self.logSendFailure(error)
            }
        }
    }

    private func logSendFailure(_ error: any Error) {
        logger.debug("L2CAP signaling send failed: \(error)")
    }

    private func nextIdentifier() -> UInt8 {
        defer { nextSignalIdentifier = nextSignalIdentifier == 255 ? 1 : nextSignalIdentifier + 1 }
        return nextSignalIdentifier
    }

    // MARK: - GAP: scanning

    /// Adds a scan handler, starting scanning with `preset` when it is the first. Returns a token for
    /// ``removeScanHandler(_:)``. Uses extended scanning when the controller supports it, legacy otherwise.
    public func addScanHandler(
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
    public func removeScanHandler(_ token: Int) async {
        scanHandlers[token] = nil
        guard scanHandlers.isEmpty, scanning, failure == nil else { return }
        scanning = false
        if supportsExtendedAdvertising, (try? await execute(.leSetExtendedScanEnable(false))) != nil { return }
        _ = try? await execute(.leSetScanEnable(false))
    }

    // MARK: - GAP: advertising

    /// Starts connectable advertising of `data` (AD structures): legacy ADV_IND (at most 31 bytes) or, with
    /// `extended`, a non-legacy extended advertising set (at most 251 bytes) from this host's random address.
    public func startAdvertising(data: [UInt8], extended: Bool, intervalMillis: Int = 100) async throws {
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

    private func resumeAdvertising() async {
        guard let current = advertising, failure == nil else { return }
        if current.extended {
            _ = try? await execute(.leSetExtendedAdvertisingEnable(true, handle: 1))
        } else {
            _ = try? await execute(.leSetAdvertisingEnable(true))
        }
    }

    /// Stops advertising. Idempotent.
    public func stopAdvertising() async {
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
    public func connect(to peer: BLEAddress) async throws -> UInt16 {
        try checkUsable()
        if let existing = connections.values.first(where: { $0.peer == peer && $0.isCentral }) {
            return existing.handle
        }
        guard pendingConnect == nil else {
            throw NearbyError(.outOfOrderApiCall, "another LE connection attempt is in progress")
        }
        let limit = configuration.connectTimeout
        let handle: UInt16 = try await withCheckedThrowingContinuation { continuation in
            pendingConnect = (peer, continuation)
            Task {
                do {
                    try await self.execute(.leCreateConnection(to: peer))
                } catch {
                    self.failConnect(peer: peer, error)
                    return
                }
                try? await Task.sleep(for: limit)
                await self.connectTimedOut(peer: peer)
            }
        }
        logger.debug("LE connected to \(peer)", metadata: ["handle": "\(handle)"])
        return handle
    }

    private func failConnect(peer: BLEAddress, _ error: any Error) {
        guard let pending = pendingConnect, pending.peer == peer else { return }
        pendingConnect = nil
        pending.continuation.resume(throwing: error)
    }

    private func connectTimedOut(peer: BLEAddress) async {
        guard let pending = pendingConnect, pending.peer == peer else { return }
        pendingConnect = nil
        pending.continuation.resume(throwing: NearbyError(.timeout, "LE connection to \(peer) timed out"))
        _ = try? await execute(.leCreateConnectionCancel)
    }

    /// Disconnects an LE connection.
    public func disconnect(handle: UInt16) async {
        guard connections[handle] != nil, failure == nil else { return }
        _ = try? await execute(.disconnect(handle: handle))
    }

    // MARK: - L2CAP servers and channels

    /// Registers a credit-based channel server on `psm` (a dynamic one from 0x80 when `nil`); every accepted
    /// channel is passed to `onChannel`. Returns the PSM.
    public func listen(psm: UInt16? = nil, onChannel: @escaping @Sendable (L2CAPChannel) -> Void) throws -> UInt16 {
        try checkUsable()
        let chosen: UInt16
        if let psm {
            guard servers[psm] == nil else { throw NearbyError(.invalidArgument, "PSM \(psm) is already in use") }
            chosen = psm
        } else {
            while servers[nextDynamicPSM] != nil { nextDynamicPSM += 1 }
            chosen = nextDynamicPSM
            nextDynamicPSM += 1
        }
        servers[chosen] = onChannel
        return chosen
    }

    /// Removes the server on `psm`; open channels stay open.
    public func stopListening(psm: UInt16) {
        servers[psm] = nil
    }

    private func allocateCID(handle: UInt16) -> UInt16? {
        let used = Set(channels.keys.filter { $0.handle == handle }.map(\.localCID))
            .union(pendingOpens.values.filter { $0.key.handle == handle }.map(\.key.localCID))
        return (L2CAPConstants.firstDynamicCID...L2CAPConstants.lastDynamicCID).first { !used.contains($0) }
    }

    private func makeRecord(key: ChannelKey, remoteCID: UInt16, peer: CreditChannelParameters) -> ChannelRecord {
        let ours = configuration.channelParameters
        return ChannelRecord(
            key: key, remoteCID: remoteCID, peerMTU: Int(peer.mtu), peerMPS: Int(peer.mps),
            peerCredits: Int(peer.credits), localCreditsOutstanding: Int(ours.credits),
            reassembler: KFrameReassembler(mtu: Int(ours.mtu), mps: Int(ours.mps)))
    }

    private func makeChannel(_ record: ChannelRecord) -> L2CAPChannel {
        L2CAPChannel(
            host: self, handle: record.key.handle, localCID: record.key.localCID, remoteCID: record.remoteCID,
            peer: connections[record.key.handle]?.peer ?? address, peerMTU: record.peerMTU, peerMPS: record.peerMPS)
    }

    /// Opens a credit-based channel to `psm` on an existing LE connection.
    /// - Throws: `.l2capChannelFailed` when the peer refuses, `.timeout` when it does not answer.
    public func openChannel(handle: UInt16, psm: UInt16) async throws -> L2CAPChannel {
        try checkUsable()
        guard connections[handle] != nil else { throw NearbyError(.endpointIoError, "no LE connection \(handle)") }
        guard let cid = allocateCID(handle: handle) else {
            throw NearbyError(.l2capChannelFailed, "no free L2CAP channel IDs on connection \(handle)")
        }
        let identifier = nextIdentifier()
        let ours = configuration.channelParameters
        let key = ChannelKey(handle: handle, localCID: cid)
        let limit = configuration.channelOpenTimeout
        return try await withCheckedThrowingContinuation { continuation in
            pendingOpens[identifier] = PendingOpen(key: key, continuation: continuation)
            sendSignal(
                handle: handle,
                .leCreditConnectionRequest(
                    identifier: identifier, psm: psm, sourceCID: cid, mtu: ours.mtu, mps: ours.mps, credits: ours.credits))
            Task { [weak self] in
                try? await Task.sleep(for: limit)
                await self?.openTimedOut(identifier: identifier, key: key)
            }
        }
    }

    private func openTimedOut(identifier: UInt8, key: ChannelKey) {
        guard let open = pendingOpens[identifier], open.key == key else { return }
        pendingOpens[identifier] = nil
        open.continuation.resume(throwing: NearbyError(.timeout, "the peer did not answer the L2CAP connection request"))
    }

    private func handleSignaling(handle: UInt16, _ payload: [UInt8]) {
        let signal: L2CAPSignal
        do {
            signal = try L2CAPSignal(decoding: payload)
        } catch {
            logger.notice("rejecting malformed L2CAP signaling: \(error)")
            if payload.count >= 2, payload[1] != 0 {
                sendSignal(
                    handle: handle,
                    .commandReject(identifier: payload[1], reason: L2CAPSignal.RejectReason.notUnderstood, data: []))
            }
            return
        }
        logger.trace("L2CAP signal in", metadata: ["handle": "\(handle)", "signal": "\(signal)"])
        switch signal {
        case .leCreditConnectionRequest(let id, let psm, let scid, let mtu, let mps, let credits):
            acceptChannel(handle: handle, identifier: id, psm: psm, sourceCID: scid,
                          peer: CreditChannelParameters(mtu: mtu, mps: mps, credits: credits))
        case .leCreditConnectionResponse(let id, let dcid, let mtu, let mps, let credits, let result):
            guard let open = pendingOpens.removeValue(forKey: id) else { return }
            let peer = CreditChannelParameters(mtu: mtu, mps: mps, credits: credits)
            guard result == L2CAPConnectionResult.success else {
                open.continuation.resume(
                    throwing: NearbyError(
                        .l2capChannelFailed, "the peer refused the L2CAP channel (result 0x\(String(result, radix: 16)))"))
                return
            }
            guard peer.isValid, (L2CAPConstants.firstDynamicCID...L2CAPConstants.lastDynamicCID).contains(dcid) else {
                open.continuation.resume(
                    throwing: NearbyError(.malformedL2CAPPacket, "the peer answered with invalid channel parameters"))
                sendSignal(handle: handle, .disconnectionRequest(identifier: nextIdentifier(), destinationCID: dcid, sourceCID: open.key.localCID))
                return
            }
            let record = makeRecord(key: open.key, remoteCID: dcid, peer: peer)
            channels[open.key] = record
            open.continuation.resume(returning: makeChannel(record))
        case .flowControlCredit(_, let cid, let credits):
            let key = channels.values.first(where: { $0.key.handle == handle && $0.remoteCID == cid })?.key
                ?? ChannelKey(handle: handle, localCID: cid)
            guard var record = channels[key] else { return }
            record.peerCredits += Int(credits)
            if record.peerCredits > Int(L2CAPConstants.maximumCredits) {
                channels[key] = record
                logger.notice("peer exceeded the credit limit; closing channel")
                closeChannelNow(key, error: NearbyError(.malformedL2CAPPacket, "the peer granted more than 65535 credits"))
                return
            }
            let waiters = record.creditWaiters
            record.creditWaiters = []
            channels[key] = record
            for waiter in waiters { waiter.resume() }
        case .disconnectionRequest(let id, let dcid, let scid):
            let key = ChannelKey(handle: handle, localCID: dcid)
            guard let record = channels[key], record.remoteCID == scid else {
                sendSignal(handle: handle, .commandReject(identifier: id, reason: L2CAPSignal.RejectReason.invalidCID, data: [UInt8](dcidBytes(dcid, scid))))
                return
            }
            sendSignal(handle: handle, .disconnectionResponse(identifier: id, destinationCID: dcid, sourceCID: scid))
            failChannel(key, nil)
        case .disconnectionResponse:
            break
        case .commandReject(let id, let reason, _):
            if let open = pendingOpens.removeValue(forKey: id) {
                open.continuation.resume(
                    throwing: NearbyError(.l2capChannelFailed, "the peer rejected the L2CAP request (reason \(reason))"))
            }
        case .connectionParameterUpdateRequest(let id, _):
            sendSignal(handle: handle, .connectionParameterUpdateResponse(identifier: id, result: 0x0001))
        case .connectionParameterUpdateResponse:
            break
        case .unknown(_, let id, _):
            sendSignal(handle: handle, .commandReject(identifier: id, reason: L2CAPSignal.RejectReason.notUnderstood, data: []))
        }
    }

    private func dcidBytes(_ dcid: UInt16, _ scid: UInt16) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendLE16(scid)
        bytes.appendLE16(dcid)
        return bytes
    }

    private func acceptChannel(
        handle: UInt16, identifier: UInt8, psm: UInt16, sourceCID: UInt16, peer: CreditChannelParameters
    ) {
        let ours = configuration.channelParameters
        func refuse(_ result: UInt16) {
            sendSignal(
                handle: handle,
                .leCreditConnectionResponse(
                    identifier: identifier, destinationCID: 0, mtu: ours.mtu, mps: ours.mps, credits: 0, result: result))
        }
        guard let server = servers[psm] else { return refuse(L2CAPConnectionResult.psmNotSupported) }
        guard (L2CAPConstants.firstDynamicCID...L2CAPConstants.lastDynamicCID).contains(sourceCID) else {
            return refuse(L2CAPConnectionResult.invalidSourceCID)
        }
        guard !channels.values.contains(where: { $0.key.handle == handle && $0.remoteCID == sourceCID }) else {
            return refuse(L2CAPConnectionResult.sourceCIDAlreadyAllocated)
        }
        guard peer.isValid else { return refuse(L2CAPConnectionResult.unacceptableParameters) }
        guard let cid = allocateCID(handle: handle) else { return refuse(L2CAPConnectionResult.noResources) }
        let key = ChannelKey(handle: handle, localCID: cid)
        let record = makeRecord(key: key, remoteCID: sourceCID, peer: peer)
        channels[key] = record
        sendSignal(
            handle: handle,
            .leCreditConnectionResponse(
                identifier: identifier, destinationCID: cid, mtu: ours.mtu, mps: ours.mps, credits: ours.credits,
                result: L2CAPConnectionResult.success))
        logger.debug("accepted L2CAP channel", metadata: ["psm": "\(psm)", "cid": "\(cid)", "peerMTU": "\(peer.mtu)", "peerMPS": "\(peer.mps)"])
        server(makeChannel(record))
    }

    private func handleKFrame(key: ChannelKey, _ payload: [UInt8]) throws {
        guard var record = channels[key], !record.isClosed else {
            throw NearbyError(.malformedL2CAPPacket, "data for unknown L2CAP channel \(key.localCID)")
        }
        record.localCreditsOutstanding -= 1
        if record.localCreditsOutstanding < 0 {
            channels[key] = record
            closeChannelNow(key, error: NearbyError(.malformedL2CAPPacket, "the peer sent a K-frame without credits"))
            return
        }
        do {
            guard let complete = try record.reassembler.append(payload) else {
                // Frames of an unfinished SDU are credited back at once (memory is bounded by our MTU), so an SDU
                // needing more K-frames than our initial credits cannot deadlock.
                channels[key] = record
                returnCredits(key, 1)
                return
            }
            // The last frame of an SDU is credited back when the reader takes the SDU: queued SDUs are bounded
            // by our initial credits.
            if let reader = record.reader {
                record.reader = nil
                channels[key] = record
                returnCredits(key, 1)
                reader.resume(returning: complete.sdu)
                return
            }
            record.inbound.append((complete.sdu, 1))
            channels[key] = record
        } catch {
            channels[key] = record
            closeChannelNow(key, error: error as? NearbyError ?? NearbyError(.malformedL2CAPPacket, "\(error)"))
        }
    }

    /// Gives `count` credits back to the peer, batched: they are sent once the peer holds at most half of our
    /// initial credits.
    private func returnCredits(_ key: ChannelKey, _ count: Int) {
        guard var record = channels[key], !record.isClosed else { return }
        record.creditsToReturn += count
        let initial = Int(configuration.channelParameters.credits)
        if record.localCreditsOutstanding <= initial / 2 {
            let grant = record.creditsToReturn
            record.localCreditsOutstanding += grant
            record.creditsToReturn = 0
            channels[key] = record
            sendSignal(handle: key.handle, .flowControlCredit(identifier: nextIdentifier(), cid: key.localCID, credits: UInt16(grant)))
        } else {
            channels[key] = record
        }
    }

    // MARK: - Channel operations (called by L2CAPChannel)

    func receiveSDU(_ key: ChannelKey) async throws -> [UInt8]? {
        guard var record = channels[key] else { return nil }
        if !record.inbound.isEmpty {
            let next = record.inbound.removeFirst()
            channels[key] = record
            returnCredits(key, next.frames)
            return next.sdu
        }
        if record.isClosed {
            channels[key] = nil
            if let error = record.closedError { throw error }
            return nil
        }
        guard record.reader == nil else {
            throw NearbyError(.outOfOrderApiCall, "two concurrent reads on one L2CAP channel")
        }
        return try await withCheckedThrowingContinuation { continuation in
            channels[key]?.reader = continuation
        }
    }

    func sendSDU(_ key: ChannelKey, _ sdu: [UInt8]) async throws {
        guard let record = channels[key], !record.isClosed else {
            throw channels[key]?.closedError ?? NearbyError(.endpointIoError, "the L2CAP channel is closed")
        }
        guard sdu.count <= record.peerMTU else {
            throw NearbyError(.invalidArgument, "SDU of \(sdu.count) bytes exceeds the peer's MTU \(record.peerMTU)")
        }
        if !channels[key]!.sendGate.tryEnter() {
            await withCheckedContinuation { channels[key]?.sendGate.enqueue($0) ?? $0.resume() }
        }
        defer { channels[key]?.sendGate.leave() }
        for segment in KFrameSegmenter.segments(sdu: sdu, mps: record.peerMPS) {
            while true {
                guard let current = channels[key], !current.isClosed else {
                    throw channels[key]?.closedError ?? NearbyError(.endpointIoError, "the L2CAP channel closed")
                }
                if current.peerCredits > 0 { break }
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    channels[key]?.creditWaiters.append(continuation)
                }
            }
            channels[key]!.peerCredits -= 1
            try await sendPDU(handle: key.handle, L2CAPFrame.encode(cid: record.remoteCID, payload: segment))
        }
    }

    /// The number of credits the peer has currently granted on a channel (for tests and diagnostics).
    func peerCredits(_ key: ChannelKey) -> Int? { channels[key]?.peerCredits }

    func closeChannel(_ key: ChannelKey, disconnectLink: Bool) async {
        guard let record = channels[key], !record.isClosed else { return }
        if failure == nil, connections[key.handle] != nil {
            sendSignal(handle: key.handle, .disconnectionRequest(identifier: nextIdentifier(), destinationCID: record.remoteCID, sourceCID: key.localCID))
        }
        failChannel(key, nil)
        if let record = channels[key], record.inbound.isEmpty, record.sendGateIdle { channels[key] = nil }
        if disconnectLink, connections[key.handle]?.isCentral == true,
            !channels.keys.contains(where: { $0.handle == key.handle })
        {
            // Let the disconnection request go out first.
            try? await Task.sleep(for: .milliseconds(50))
            await disconnect(handle: key.handle)
        }
    }

    private func closeChannelNow(_ key: ChannelKey, error: NearbyError) {
        guard let record = channels[key], !record.isClosed else { return }
        if failure == nil, connections[key.handle] != nil {
            sendSignal(handle: key.handle, .disconnectionRequest(identifier: nextIdentifier(), destinationCID: record.remoteCID, sourceCID: key.localCID))
        }
        failChannel(key, error)
    }

    /// Marks a channel closed: the reader gets what is buffered then `nil` (or `error`), writers fail.
    private func failChannel(_ key: ChannelKey, _ error: NearbyError?) {
        guard var record = channels[key], !record.isClosed else { return }
        record.isClosed = true
        record.closedError = error
        let reader = record.reader
        record.reader = nil
        let waiters = record.creditWaiters
        record.creditWaiters = []
        channels[key] = record
        let writeError = error ?? NearbyError(.endpointIoError, "the L2CAP channel closed")
        for waiter in waiters { waiter.resume(throwing: writeError) }
        if let reader {
            if let error { reader.resume(throwing: error) } else { reader.resume(returning: nil) }
        }
    }
}
