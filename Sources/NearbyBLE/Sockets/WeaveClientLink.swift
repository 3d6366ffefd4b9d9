import NearbyWire

/// The client end of a Weave GATT socket (``BLEMessageLink``): it writes packets with response to the server's
/// `…0101` characteristic and reads packets from indications on `…0102`, which it confirms only as its reader takes
/// them, so a slow reader holds the server back. Closing disconnects the LE link (a Weave client has no goodbye of
/// its own).
package actor WeaveClientLink: BLEMessageLink {
    /// Always ``BleSocketMachine/Path/gatt``.
    package nonisolated let path: BleSocketMachine.Path = .gatt
    /// The peer.
    package nonisolated let peerDescription: String
    private let gatt: any BLEGATTClientConnection
    private let writeCharacteristic: GATTRemoteCharacteristic
    private var indications: AsyncStream<[UInt8]>.AsyncIterator
    private var machine: WeaveConnection
    private var inbox: [[UInt8]] = []
    private var writeGate = AsyncGate()
    private var reading = false
    private var closed = false
    private var failure: NearbyError?

    private init(gatt: any BLEGATTClientConnection, write: GATTRemoteCharacteristic, indications: AsyncStream<[UInt8]>, mtu: Int) {
        self.gatt = gatt
        self.peerDescription = "\(gatt.peer)"
        self.writeCharacteristic = write
        self.indications = indications.makeAsyncIterator()
        self.machine = WeaveConnection(role: .client, maxPacketSize: mtu - 3)
    }

    /// Sets up the socket on a GATT connection: exchanges the ATT MTU, finds the Weave characteristics, enables
    /// indications (before the first write, as stock Samsung phones do), and runs the Weave handshake. The LE link
    /// is disconnected when anything fails.
    /// - Throws: `.mediumUnavailable` when the peer serves no Weave socket, `.timeout` when the handshake takes
    ///   longer than `timeout`, or the GATT or Weave error.
    package static func connect(_ gatt: any BLEGATTClientConnection, timeout: Duration = .seconds(5)) async throws -> WeaveClientLink {
        do {
            return try await withThrowingTaskGroup(of: WeaveClientLink?.self) { group in
                group.addTask {
                    let mtu = try await gatt.exchangeMTU()
                    let characteristics = try await gatt.discoverCharacteristics(service: NearbyGATTUUIDs.service)
                    guard let write = characteristics.first(where: { $0.uuid == NearbyGATTUUIDs.weaveClientToServer }),
                        let indicate = characteristics.first(where: { $0.uuid == NearbyGATTUUIDs.weaveServerToClient })
                    else {
                        throw NearbyError(.mediumUnavailable, "\(gatt.peer) serves no Weave socket on 0xFEF3")
                    }
                    let stream = try await gatt.subscribeToIndications(indicate)
                    let link = WeaveClientLink(gatt: gatt, write: write, indications: stream, mtu: mtu)
                    try await link.handshake()
                    return link
                }
                group.addTask {
                    try? await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let link = first else {
                    // The LE disconnection ends the setup's GATT requests, so the group's other task ends too.
                    await gatt.disconnect()
                    throw NearbyError(.timeout, "the Weave socket to \(gatt.peer) took longer than \(timeout) to open")
                }
                return link
            }
        } catch {
            await gatt.disconnect()
            throw error
        }
    }

    /// Writes the connection request and reads indications until the confirm, at the same time: a server may
    /// answer the write only after its confirm was confirmed (the Bumble peer does), so the write must not hold
    /// the reading back.
    private func handshake() async throws {
        var request: [[UInt8]] = []
        for case .send(let packet) in machine.start() { request.append(packet) }
        async let written: Void = write(request)
        do {
            while !machine.isConnected {
                guard try await pull() else {
                    throw failure ?? NearbyError(.endpointIoError, "\(peerDescription) closed the Weave socket during its handshake")
                }
            }
        } catch {
            await gatt.disconnect()  // ends the write too
            _ = try? await written
            throw error
        }
        try await written
    }

    /// Takes one indication: feeds it to the machine, confirms it, performs the actions. `false` at the end.
    private func pull() async throws -> Bool {
        if machine.isClosed { return false }
        var iterator = indications
        let value = await iterator.next(isolation: self)
        indications = iterator
        guard let value else {
            closed = true
            return false
        }
        let actions = machine.receive(value)
        await gatt.confirmIndication()
        try await perform(actions)
        return true
    }

    private func perform(_ actions: [WeaveConnection.Action]) async throws {
        for action in actions {
            switch action {
            case .send(let packet):
                try await write([packet])
            case .connected:
                break
            case .deliver(let message):
                inbox.append(message)
            case .closed(let error):
                // The peer's error packet is how a Weave server ends a socket: a clean end for the reader.
                if error.code != .endpointIoError { failure = error }
            }
        }
    }

    private func write(_ packets: [[UInt8]]) async throws {
        if !writeGate.tryEnter() {
            await withCheckedContinuation { writeGate.enqueue($0) }
        }
        defer { writeGate.leave() }
        for packet in packets {
            try await gatt.write(packet, to: writeCharacteristic)
        }
    }

    /// Sends one message as Weave data packets of the negotiated size.
    package func sendMessage(_ message: [UInt8]) async throws {
        if !writeGate.tryEnter() {
            await withCheckedContinuation { writeGate.enqueue($0) }
        }
        defer { writeGate.leave() }
        guard !closed, machine.isConnected else {
            throw failure ?? NearbyError(.endpointIoError, "the Weave socket to \(peerDescription) is closed")
        }
        // Numbered inside the gate, so packets leave in counter order. A failed write leaves the counters ahead of
        // what the server saw: the socket is unusable after it.
        do {
            for packet in machine.packets(for: message) {
                try await gatt.write(packet, to: writeCharacteristic)
            }
        } catch {
            failure = failure ?? (error as? NearbyError ?? NearbyError(.endpointIoError, "a Weave write failed", cause: error))
            closed = true
            await gatt.disconnect()
            throw error
        }
    }

    /// The next message; `nil` when the server ended the socket or the LE link ended.
    package func receiveMessage() async throws -> [UInt8]? {
        guard !reading else { throw NearbyError(.outOfOrderApiCall, "two concurrent reads on one Weave socket") }
        reading = true
        defer { reading = false }
        while inbox.isEmpty {
            if let failure { throw failure }
            guard !closed, try await pull() else {
                if let failure { throw failure }
                return nil
            }
        }
        return inbox.removeFirst()
    }

    /// Disconnects the LE link. Idempotent.
    package func close() async {
        guard !closed else { return }
        closed = true
        await gatt.disconnect()
    }
}
