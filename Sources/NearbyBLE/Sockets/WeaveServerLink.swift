import NearbyWire

/// The server end of one client's Weave GATT socket (``BLEMessageLink``): packets arrive as writes to `…0101`
/// (fed in by ``WeaveGATTService`` in order) and leave as indications on `…0102`. A write is answered once its
/// packet was taken and fewer than ``inboxLimit`` messages wait for the reader, so a slow reader holds the client
/// back. Closing ends the client's LE connection.
package actor WeaveServerLink: BLEMessageLink {
    /// Messages waiting for the reader before writes go unanswered.
    package static let inboxLimit = 8

    /// Always ``BleSocketMachine/Path/gatt``.
    package nonisolated let path: BleSocketMachine.Path = .gatt
    /// The client.
    package nonisolated let peerDescription: String
    /// The client's connection.
    package nonisolated let peer: GATTPeer
    private let server: any BLEGATTServerHandle
    private var machine: WeaveConnection
    private var inbox: [[UInt8]] = []
    private var reader: CheckedContinuation<[UInt8]?, any Error>?
    private var writePending = false
    private var writeGate = AsyncGate()
    private var ended = false
    private var failure: NearbyError?

    /// A link for `peer`'s socket, before its connection request.
    package init(server: any BLEGATTServerHandle, peer: GATTPeer, maxPacketSize: Int) {
        self.server = server
        self.peer = peer
        self.peerDescription = "\(peer.address)"
        self.machine = WeaveConnection(role: .server, maxPacketSize: maxPacketSize)
    }

    /// Takes one packet the client wrote; returns `true` when it completed the Weave handshake (the socket is
    /// ready for the socket layer). Answers the write when there is room.
    package func receivePacket(_ value: [UInt8], needsResponse: Bool) async -> Bool {
        var becameConnected = false
        var outgoing: [[UInt8]] = []
        for action in machine.receive(value) {
            switch action {
            case .send(let packet):
                if !machine.isClosed { outgoing.append(packet) }  // an error packet: the LE disconnection says it
            case .connected:
                becameConnected = true
            case .deliver(let message):
                if let reader {
                    self.reader = nil
                    reader.resume(returning: message)
                } else {
                    inbox.append(message)
                }
            case .closed(let error):
                end(error.code == .endpointIoError ? nil : error)
            }
        }
        if machine.isClosed {
            await server.disconnect(peer)
            return false
        }
        // The write is answered before any indication goes out: the client confirms indications only once its write
        // returned (as a CoreBluetooth peripheral does it, the confirm packet follows the write response).
        if needsResponse {
            if inbox.count < Self.inboxLimit {
                await server.respondToWrite(peer)
            } else {
                writePending = true
            }
        }
        for packet in outgoing {
            do {
                try await indicate(packet)
            } catch {
                end(error as? NearbyError ?? NearbyError(.endpointIoError, "indication failed", cause: error))
                await server.disconnect(peer)
                return false
            }
        }
        return becameConnected && !ended
    }

    /// The client's LE connection ended.
    package func peerDisconnected() {
        end(nil)
    }

    private func end(_ error: NearbyError?) {
        guard !ended else { return }
        ended = true
        failure = error
        if let reader {
            self.reader = nil
            if let error { reader.resume(throwing: error) } else { reader.resume(returning: nil) }
        }
    }

    private func indicate(_ packet: [UInt8]) async throws {
        if !writeGate.tryEnter() {
            await withCheckedContinuation { writeGate.enqueue($0) }
        }
        defer { writeGate.leave() }
        try await server.indicate(packet, of: NearbyGATTUUIDs.weaveServerToClient, to: peer)
    }

    /// Sends one message as indications of the negotiated packet size.
    package func sendMessage(_ message: [UInt8]) async throws {
        if !writeGate.tryEnter() {
            await withCheckedContinuation { writeGate.enqueue($0) }
        }
        defer { writeGate.leave() }
        guard !ended, machine.isConnected else {
            throw failure ?? NearbyError(.endpointIoError, "the Weave socket to \(peerDescription) is closed")
        }
        // A failed indication leaves the counters ahead of what the client saw: the socket is unusable after it.
        do {
            for packet in machine.packets(for: message) {
                try await server.indicate(packet, of: NearbyGATTUUIDs.weaveServerToClient, to: peer)
            }
        } catch {
            end(error as? NearbyError ?? NearbyError(.endpointIoError, "a Weave indication failed", cause: error))
            await server.disconnect(peer)
            throw error
        }
    }

    /// The next message; `nil` once the client's connection ended.
    package func receiveMessage() async throws -> [UInt8]? {
        if !inbox.isEmpty {
            let message = inbox.removeFirst()
            if writePending, inbox.count < Self.inboxLimit {
                writePending = false
                await server.respondToWrite(peer)
            }
            return message
        }
        if ended {
            if let failure { throw failure }
            return nil
        }
        guard reader == nil else { throw NearbyError(.outOfOrderApiCall, "two concurrent reads on one Weave socket") }
        return try await withCheckedThrowingContinuation { reader = $0 }
    }

    /// Ends the client's LE connection. Idempotent.
    package func close() async {
        guard !ended else { return }
        end(nil)
        await server.disconnect(peer)
    }
}
