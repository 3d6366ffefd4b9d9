import Foundation
import Glibc
import NearbyCore
import NearbySecurity
import NearbyWire

/// A hostile peer on a raw socket: it completes the connection handshake as a discoverer would, then floods
/// KEEP_ALIVE frames (each of which asks for an ack) and never reads, with a tiny receive buffer. The advertiser's
/// acks pile up in its socket until its writes block.
final class StallingPeer: Sendable {
    private struct Flood {
        var framesSent = 0
        /// Set once a send found the advertiser's receive buffer full (the advertiser stopped reading us).
        var blocked = false
        /// Set when the connection failed (the advertiser closed it).
        var closedByPeer = false
        var stop = false
    }

    private let client: RawTCPClient
    private var descriptor: Int32 { client.descriptor }
    private final class FloodState: Sendable {
        let value = LockedValue(Flood())
        func withLock<Result>(_ body: (inout Flood) -> Result) -> Result { value.withLock { body(&$0) } }
    }

    private let flood = FloodState()
    private var floodState: FloodState { flood }
    private let secure = LockedValue<D2DSecureChannel?>(nil)

    private init(client: RawTCPClient) { self.client = client }

    /// Connects to 127.0.0.1:`port` with a receive buffer of (about) `receiveBuffer` bytes, sends a connection
    /// request asking for the given keep-alive settings, and runs UKEY2 to completion.
    static func connectAndHandshake(
        port: Int, receiveBuffer: Int32 = 4096, keepAliveIntervalMillis: Int32, keepAliveTimeoutMillis: Int32
    ) async throws -> StallingPeer {
        let client = try await RawTCPClient.connect(port: port, receiveBuffer: receiveBuffer)
        // Sends give up after 200 ms so the flood can notice that the advertiser stopped reading.
        client.setSendTimeout(0.2)
        let peer = StallingPeer(client: client)
        let request = OfflineFrames.connectionRequest(.init(
            endpointID: "STAL", endpointInfo: Array("staller".utf8), nonce: 4321, mediums: [.wifiLan],
            keepAliveIntervalMillis: keepAliveIntervalMillis, keepAliveTimeoutMillis: keepAliveTimeoutMillis))
        var ukey2 = Ukey2Client()
        try client.sendFrame(OfflineFrames.serialize(request))
        try client.sendFrame(try ukey2.start())
        let serverInit = try await client.readFrame(timeout: 10)
        guard case .sendAndComplete(let finished, let result) = ukey2.receive(serverInit) else {
            throw IntegrationFailure("the advertiser's ServerInit does not satisfy an honest UKEY2 client")
        }
        try client.sendFrame(finished)
        peer.secure.withLock { $0 = result.makeSecureChannel() }
        return peer
    }

    /// Accepts the connection on our side (the plaintext CONNECTION_RESPONSE).
    func accept() throws {
        try client.sendFrame(OfflineFrames.serialize(OfflineFrames.connectionResponse(accept: true)))
    }

    /// Starts flooding KEEP_ALIVE frames on a thread of its own: encrypted once the connection is up
    /// (`encrypted`), plaintext while decisions are pending. Runs until the connection fails or ``close()``.
    func startFlood(encrypted: Bool) {
        let descriptor = self.descriptor
        let peer = self
        let initial = encrypted ? secure.withLock { $0 } : nil
        let thread = Thread {
            let flood = peer.floodState
            var channel = initial
            var sequence: UInt32 = 0
            while !flood.withLock({ $0.stop }) {
                let serialized = OfflineFrames.serialize(OfflineFrames.keepAlive(ack: false, sequenceNumber: sequence))
                sequence &+= 1
                guard let body = try? (channel != nil ? channel!.encode(serialized) : serialized),
                    let framed = try? LengthPrefixFraming.frame(body)
                else { return }
                var offset = 0
                while offset < framed.count {
                    if flood.withLock({ $0.stop }) { return }
                    let written = framed[offset...].withUnsafeBytes {
                        Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    if written >= 0 {
                        offset += written
                        continue
                    }
                    switch errno {
                    case EINTR:
                        continue
                    case EAGAIN:
                        flood.withLock { $0.blocked = true }
                    default:
                        flood.withLock { $0.closedByPeer = true }
                        return
                    }
                }
                flood.withLock { $0.framesSent += 1 }
            }
        }
        thread.start()
    }

    /// Whether a send found the advertiser no longer reading.
    var isBlocked: Bool { flood.withLock { $0.blocked } }
    /// Whether the advertiser closed the connection under the flood.
    var wasClosedByPeer: Bool { flood.withLock { $0.closedByPeer } }
    /// Frames flooded so far.
    var framesSent: Int { flood.withLock { $0.framesSent } }

    /// The bytes the other end of this connection has queued in its kernel send buffer (`tx_queue` of its socket
    /// in `/proc/net/tcp` or `/proc/net/tcp6`); `nil` when the socket is not found.
    func peerSendQueue() -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { return nil }
        let ourPort = Int(UInt16(bigEndian: address.sin_port))
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 4, let remotePort = fields[2].split(separator: ":").last.flatMap({ Int($0, radix: 16) }),
                    remotePort == ourPort,
                    let queue = fields[4].split(separator: ":").first.flatMap({ Int($0, radix: 16) })
                else { continue }
                return queue
            }
        }
        return nil
    }

    /// Stops the flood and closes the socket.
    func close() {
        flood.withLock { $0.stop = true }
        // Unblocks a send in progress; the flood thread then sees `stop`.
        shutdown(descriptor, Int32(SHUT_RDWR))
        client.close()
    }
}
