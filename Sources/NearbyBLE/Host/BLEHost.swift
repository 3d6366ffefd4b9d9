import Logging
import NearbyCore
import NearbyWire

/// A user-space Bluetooth LE host: HCI command flow, ACL flow control, GAP (advertising, scanning, connections)
/// and L2CAP LE credit-based channels, over one ``HCITransport``.
///
/// One actor owns all host state, and it only performs what value-type state machines decide:
/// ``HCICommandFlow`` (command credits, answers, timeouts), ``ACLFlowControl`` (controller buffers, per-connection
/// queues, fragmentation and reassembly) and ``L2CAPSignalling`` (signalling and credit-based channels). Its reader
/// task splits the transport's H4 stream into packets (``H4Deframer``) and feeds them in. Timers sleep on the
/// host's clock. Malformed input from the controller or the peer is logged and dropped (or answered with an L2CAP
/// Command Reject); it never traps. When the transport ends, every pending operation and channel fails with a
/// `.mediumUnavailable` error naming the cause.
package actor BLEHost {
    /// Host settings.
    package struct Configuration: Sendable {
        /// How long to wait for Command Complete / Command Status before failing a command.
        package var commandTimeout: Duration = .seconds(2)
        /// How long an outgoing LE connection may take.
        package var connectTimeout: Duration = .seconds(10)
        /// How long to wait for an L2CAP connection response.
        package var channelOpenTimeout: Duration = .seconds(10)
        /// The MTU, MPS and initial credits this host offers on every credit-based channel.
        package var channelParameters = CreditChannelParameters(mtu: 4096, mps: 1024, credits: 32)
        /// The static random address to use; a fresh one when `nil`.
        package var address: BLEAddress? = nil
        /// Creates the default configuration.
        package init() {}
    }

    struct Connection {
        let handle: UInt16
        let peer: BLEAddress
        let isCentral: Bool
    }

    /// The transport to the controller.
    package nonisolated let transport: any HCITransport
    /// The static random address this host uses for advertising and connecting.
    package nonisolated let address: BLEAddress
    let configuration: Configuration
    let clock: NearbyClock
    var logger: Logger

    private var deframer = H4Deframer()
    private var readerTask: Task<Void, Never>?
    /// The host's one-shot work started from an event or a call (advertising again after a connection ended it,
    /// LE Create Connection): `close()` cancels the scope and awaits their end (after the transport ended, every
    /// HCI command they wait for fails at once, so they end promptly).
    let oneShots = TaskScope()
    private var started = false
    var failure: NearbyError?
    var timers = HostTimers()

    var commands = HCICommandFlow()
    var commandWaiters: [HCICommandFlow.CommandID: CheckedContinuation<[UInt8], any Error>] = [:]

    var acl = ACLFlowControl()
    var aclWaiters: [ACLFlowControl.Ticket: CheckedContinuation<Void, any Error>] = [:]

    var signalling: L2CAPSignalling
    var openWaiters: [UInt8: CheckedContinuation<L2CAPChannel, any Error>] = [:]
    var readers: [L2CAPChannelKey: CheckedContinuation<[UInt8]?, any Error>] = [:]
    var creditWaiters: [L2CAPChannelKey: [CheckedContinuation<Void, any Error>]] = [:]
    var sendGates: [L2CAPChannelKey: AsyncGate] = [:]
    var servers: [UInt16: @Sendable (L2CAPChannel) -> Void] = [:]

    /// Whether the controller reports the LE Extended Advertising feature.
    package internal(set) var supportsExtendedAdvertising = false

    var attBearers: [UInt16: ATTBearer] = [:]
    var attWaiters: [UInt16: [ATTClientQueue.RequestID: CheckedContinuation<ATTPDU, any Error>]] = [:]
    var gattDatabase: GATTDatabase?
    var gattEvents: AsyncStream<GATTServerEvent>.Continuation?
    var indicationWaiters: [UInt16: CheckedContinuation<Void, any Error>] = [:]
    var indicationGates: [UInt16: AsyncGate] = [:]
    var gattSubscribers: [UInt16: [UInt16: AsyncStream<[UInt8]>.Continuation]] = [:]

    var connections: [UInt16: Connection] = [:]
    var disconnectWaiters: [UInt16: [CheckedContinuation<Void, Never>]] = [:]
    var pendingConnect: (peer: BLEAddress, continuation: CheckedContinuation<UInt16, any Error>)?

    var scanHandlers: [Int: @Sendable (AdvertisingReport) -> Void] = [:]
    var scanHandlerCounter = 0
    var scanning = false
    var advertising: (data: [UInt8], extended: Bool)?
    private var failureObservers: [Int: @Sendable (NearbyError) -> Void] = [:]

    /// Creates a host on an open transport; call ``start()`` next.
    package init(transport: any HCITransport, configuration: Configuration = Configuration(), logger: Logger) {
        self.init(transport: transport, configuration: configuration, clock: .continuous, logger: logger)
    }

    /// Creates a host whose timers (command, connect and channel-open timeouts) sleep on `clock`.
    package init(transport: any HCITransport, configuration: Configuration, clock: NearbyClock, logger: Logger) {
        self.transport = transport
        self.configuration = configuration
        self.clock = clock
        self.address = configuration.address ?? BLEAddress.staticRandom()
        self.signalling = L2CAPSignalling(ours: configuration.channelParameters, openTimeout: configuration.channelOpenTimeout)
        var logger = logger
        logger[metadataKey: "hci"] = "\(transport.description)"
        self.logger = logger
    }

    /// Opens the transport `spec` names and starts a host on it.
    package static func open(
        _ spec: HCITransportSpec, configuration: Configuration = Configuration(), logger: Logger
    ) async throws -> BLEHost {
        let transport = try await HCITransportFactory.connect(spec)
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
    package func start() async throws {
        guard !started else { return }
        started = true
        let stream = transport.inbound
        // Owner: `readerTask`; `close()` cancels it (without awaiting it). It ends when the transport's stream ends
        // or fails, or when cancelled.
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
        acl.setBufferSize(length: length, count: count)
        if let features = try? await execute(HCICommand(.leReadLocalFeatures)), features.count >= 2 {
            supportsExtendedAdvertising = features[1] & 0x10 != 0
        }
        _ = try await execute(.leSetRandomAddress(address))
        logger.debug(
            "HCI host ready",
            metadata: [
                "address": "\(address)", "aclLength": "\(acl.maxDataLength)", "aclBuffers": "\(acl.bufferCount)",
                "extendedAdvertising": "\(supportsExtendedAdvertising)",
            ])
    }

    /// Closes the transport; every channel and pending operation fails. Idempotent.
    package func close() async {
        transport.close()
        transportEnded(NearbyError(.mediumUnavailable, "the BLE host was closed"))
        readerTask?.cancel()
        await oneShots.shutdown()
    }

    /// Registers a callback for when the host fails (transport lost); returns a token for
    /// ``removeFailureObserver(_:)``. Called at once when the host already failed.
    package func addFailureObserver(_ observer: @escaping @Sendable (NearbyError) -> Void) -> Int {
        scanHandlerCounter += 1
        if let failure { observer(failure) } else { failureObservers[scanHandlerCounter] = observer }
        return scanHandlerCounter
    }

    /// Removes a failure observer.
    package func removeFailureObserver(_ token: Int) {
        failureObservers[token] = nil
    }

    /// `nil` while usable; the error that ended the host otherwise.
    package var failureReason: NearbyError? { failure }

    func transportEnded(_ error: NearbyError) {
        guard failure == nil else { return }
        failure = error
        logger.warning("BLE host stopped: \(error)")
        perform(commands.failAll(error))
        if let connect = pendingConnect {
            pendingConnect = nil
            connect.continuation.resume(throwing: error)
        }
        perform(acl.failAll(error))
        perform(signalling.failAll(error))
        for handle in Array(attBearers.keys) { attConnectionEnded(handle: handle, error) }
        gattEvents?.finish()
        gattEvents = nil
        timers.cancelAll()
        for waiter in disconnectWaiters.values.joined() { waiter.resume() }
        disconnectWaiters = [:]
        connections = [:]
        scanHandlers = [:]
        let observers = failureObservers.values
        failureObservers = [:]
        for observer in observers { observer(error) }
    }

    func checkUsable() throws {
        if let failure { throw failure }
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

    private func handle(_ event: HCIEvent) {
        switch event {
        case .commandComplete(_, let opcode, _), .commandStatus(_, _, let opcode):
            guard let actions = commands.receive(event) else {
                logger.debug("unexpected completion of HCI command \(opcode)")
                return
            }
            perform(actions)
        case .numberOfCompletedPackets(let entries):
            perform(acl.completed(entries))
        case .disconnectionComplete(let status, let handle, let reason):
            guard status == 0 else { return }
            connectionEnded(handle: handle, reason: reason)
        case .leConnectionComplete(let complete):
            connectionCompleted(complete)
        case .leAdvertisingReports(let reports):
            logger.trace("advertising reports", metadata: ["count": "\(reports.count)", "handlers": "\(scanHandlers.count)"])
            for report in reports {
                for handler in scanHandlers.values { handler(report) }
            }
        case .unhandled(let code, let parameters):
            if code == HCIEvent.Code.leMeta, parameters.first == 0x12, advertising != nil {
                // Advertising Set Terminated (a connection ended it): advertise again (in `oneShots`).
                oneShots.spawn { await self.resumeAdvertising() }
            }
        }
    }

    private func handleACL(_ packet: ACLPacket) throws {
        logger.trace("ACL in", metadata: ["handle": "\(packet.handle)", "boundary": "\(packet.boundary)", "length": "\(packet.data.count)"])
        guard let pdu = try acl.receive(packet) else { return }
        let (cid, payload) = try L2CAPFrame.decode(pdu)
        if cid == ATTBearer.cid {
            receiveATT(handle: packet.handle, payload)
            return
        }
        perform(signalling.receive(handle: packet.handle, cid: cid, payload))
    }

    // MARK: - Timers

    /// Starts `timer`: after `delay` on the host's clock, ``timerFired(_:generation:)`` runs.
    func schedule(_ timer: HostTimers.Timer, after delay: Duration) {
        let clock = self.clock
        timers.start(timer) { generation in
            // Owner: `timers`, which cancels it when the timer is restarted or cancelled and in `transportEnded`
            // (so `close()`); it ends when its sleep ends or is cancelled.
            Task { [weak self] in
                do { try await clock.sleep(for: delay) } catch { return }
                await self?.timerFired(timer, generation: generation)
            }
        }
    }

    private func timerFired(_ timer: HostTimers.Timer, generation: Int) async {
        guard timers.fired(timer, generation: generation) else { return }
        switch timer {
        case .command(let id):
            perform(commands.timedOut(id))
        case .connect(let peer):
            await connectTimedOut(peer: peer)
        case .channelOpen(let identifier):
            perform(signalling.openTimedOut(identifier))
        case .att(let handle, let id):
            attTimedOut(handle: handle, id: id)
        case .indication(let handle):
            indicationTimedOut(handle: handle)
        case .disconnect(let handle):
            disconnectTimedOut(handle: handle)
        }
    }
}
