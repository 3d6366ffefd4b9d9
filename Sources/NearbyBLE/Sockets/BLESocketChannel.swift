import NearbyCore
import NearbyWire

/// An `EndpointChannel` over a BLE data path with the BLE socket layer that Android's Nearby Connections speaks
/// (``BleSocketMachine``): the client's introduction (after the L2CAP command handshake on L2CAP), hash-prefixed
/// data packets each carrying one `[u32 length][frame]` of the Nearby stream, acknowledgements on L2CAP, and a
/// disconnection packet when closed.
///
/// Make one with ``connect(link:serviceID:timeout:)`` (client; returns once the socket is established) or
/// ``server(link:serviceIDHashes:)`` (server; established on the first read).
package actor BLESocketChannel: EndpointChannel {
    /// Always `MediumKind.ble`.
    package nonisolated let medium: MediumKind = .ble
    /// The peer and the data path.
    package nonisolated let peerDescription: String
    /// The data path.
    package nonisolated let link: any BLEMessageLink

    private var machine: BleSocketMachine
    private var reader = IncrementalFrameReader()
    private var reading = false
    private var closed = false
    private var peerDisconnected = false

    private init(link: any BLEMessageLink, machine: BleSocketMachine) {
        self.link = link
        self.machine = machine
        self.peerDescription = "\(link.peerDescription) (\(link.path == .gatt ? "GATT" : "L2CAP") socket)"
    }

    /// The client side: runs the handshake for `serviceID` on `link` and returns the established socket.
    /// - Throws: `.timeout` when the peer does not answer within `timeout`, `.connectionRejected` when it refuses,
    ///   `.malformedBLESocketPacket` for a protocol error; the link is closed then.
    package static func connect(
        link: any BLEMessageLink, serviceID: String, timeout: Duration = .seconds(5)
    ) async throws -> BLESocketChannel {
        let machine = BleSocketMachine.client(path: link.path, serviceIDHash: BleSocketPacket.serviceIDHash(serviceID))
        return try await establish(BLESocketChannel(link: link, machine: machine), timeout: timeout)
    }

    /// The server side for a link a client just opened: the handshake (the L2CAP command exchange, the client's
    /// introduction of one of these services) runs on the first ``readFrame()``, so no task is needed for it; the
    /// engine's connection-request deadline bounds it (closing the channel ends it).
    package static func server(link: any BLEMessageLink, serviceIDHashes: Set<[UInt8]>) -> BLESocketChannel {
        BLESocketChannel(link: link, machine: .server(path: link.path, acceptedServiceIDHashes: serviceIDHashes))
    }

    /// A client socket whose handshake is taken as done (nothing is sent or awaited first): for a link whose peer
    /// reads the data packets without answering the handshake, as the stalled-peer tests and benchmarks do.
    package static func assumingEstablished(link: any BLEMessageLink, serviceID: String) async -> BLESocketChannel {
        BLESocketChannel(
            link: link,
            machine: .establishedClient(path: link.path, serviceIDHash: BleSocketPacket.serviceIDHash(serviceID)))
    }

    private static func establish(_ channel: BLESocketChannel, timeout: Duration) async throws -> BLESocketChannel {
        do {
            try await withDeadline(timeout, channel.link) { try await channel.handshake() }
            return channel
        } catch {
            await channel.link.close()
            throw error
        }
    }

    /// Runs `body`; when `timeout` passes first the link is closed (which ends the body's read) and `.timeout` is
    /// thrown. Both child tasks end before this returns.
    private static func withDeadline(
        _ timeout: Duration, _ link: any BLEMessageLink, _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            guard let finished = try await group.next(), finished else {
                await link.close()
                throw NearbyError(.timeout, "the BLE socket handshake with \(link.peerDescription) took longer than \(timeout)")
            }
        }
    }

    private func handshake() async throws {
        try await perform(machine.start())
        while !machine.isEstablished {
            guard let message = try await link.receiveMessage() else {
                throw NearbyError(.endpointIoError, "\(peerDescription) closed during the BLE socket handshake")
            }
            try await perform(machine.receive(message))
            if peerDisconnected {
                throw NearbyError(.endpointIoError, "\(peerDescription) disconnected during the BLE socket handshake")
            }
        }
    }

    /// Performs the machine's actions: sends, stream bytes into the frame reader, the end.
    private func perform(_ actions: [BleSocketMachine.Action]) async throws {
        for action in actions {
            switch action {
            case .send(let message):
                try await link.sendMessage(message)
            case .established:
                break
            case .deliver(let bytes):
                reader.append(bytes)
            case .disconnected:
                peerDisconnected = true
            case .fail(let error):
                throw error
            }
        }
    }

    /// Reads the next frame body; `nil` when the peer disconnected or closed between frames, or after ``close()``.
    package func readFrame() async throws -> [UInt8]? {
        guard !reading else { throw NearbyError(.outOfOrderApiCall, "readFrame() while another read is pending") }
        reading = true
        defer { reading = false }
        if !machine.isEstablished, !closed {
            try await handshake()
        }
        while true {
            if closed { return nil }
            if let body = try reader.nextFrame() { return body }
            if peerDisconnected { return try endOfStream() }
            guard let message = try await link.receiveMessage() else { return try endOfStream() }
            try await perform(machine.receive(message))
        }
    }

    private func endOfStream() throws -> [UInt8]? {
        if reader.isAtFrameBoundary || closed { return nil }
        throw NearbyError(.invalidFraming, "the BLE socket to \(peerDescription) ended inside a frame")
    }

    /// Writes one frame as one data packet.
    package func writeFrame(_ body: [UInt8]) async throws {
        let framed = try LengthPrefixFraming.frame(body)
        guard !closed, !machine.isClosed else {
            throw NearbyError(.endpointIoError, "the BLE socket to \(peerDescription) is closed")
        }
        guard machine.isEstablished else {
            throw NearbyError(.outOfOrderApiCall, "a frame written to \(peerDescription) before the peer introduced itself")
        }
        try await link.sendMessage(machine.dataMessage(framed))
    }

    /// Sends the disconnection packet (best effort, for at most half a second: a peer that grants no credits must
    /// not hold the close) and closes the link. Idempotent.
    package func close() async {
        guard !closed else { return }
        closed = true
        let link = self.link
        let goodbye: [[UInt8]] = machine.disconnect().compactMap { if case .send(let m) = $0 { m } else { nil } }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for message in goodbye { try? await link.sendMessage(message) }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(500))
            }
            _ = await group.next()
            // Closing the link ends a send still waiting for credits, so the group's other task ends too.
            await link.close()
            group.cancelAll()
        }
    }
}
