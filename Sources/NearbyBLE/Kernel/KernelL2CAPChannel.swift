#if canImport(Glibc)
import Glibc
#endif
import NearbyCore
import NearbyWire

/// An L2CAP LE credit-based channel carried by the kernel: a connected `SOCK_SEQPACKET` L2CAP socket, one SDU per
/// `read`/`write`. Credits are the kernel's business: it makes `write` wait (`EAGAIN`, then `POLLOUT`) while the
/// peer grants none. On the receiving side it may grant credits beyond what the socket's receive buffer holds and
/// then drops the SDUs that do not fit, so the socket asks for a large buffer
/// (``KernelL2CAPSocket/enlargeReceiveBuffer(_:)``) and SDUs are read off it as soon as they arrive
/// (``KernelSDUDrain``), not when ``receive()`` is called.
package final class KernelL2CAPChannel: L2CAPSDUChannel {
    /// The peer's address.
    package let peer: BLEAddress
    /// The largest SDU the peer accepts (`BT_SNDMTU`).
    package let peerMTU: Int
    /// The largest SDU we accept (`BT_RCVMTU`): the size of each read.
    package let receiveMTU: Int
    private let descriptor: KernelDescriptor
    /// Reads SDUs off the socket as soon as the kernel has them (see ``KernelSDUDrain`` for why).
    private let drain: KernelSDUDrain

    /// Wraps a connected socket; reads its MTUs.
    package init(descriptor: KernelDescriptor, peer: BLEAddress) throws {
        self.descriptor = descriptor
        self.peer = peer
        self.peerMTU = try KernelL2CAPSocket.mtu(descriptor.fd, option: KernelL2CAPSocket.btSendMTU)
        self.receiveMTU = max(23, try KernelL2CAPSocket.mtu(descriptor.fd, option: KernelL2CAPSocket.btReceiveMTU))
        self.drain = KernelSDUDrain(descriptor: descriptor, receiveMTU: receiveMTU, peer: peer)
    }

    /// `PEER kernel socket fd N`.
    package var channelDescription: String { "\(peer) kernel socket fd \(descriptor.fd)" }

    /// Writes one SDU, waiting while the kernel has no credits or buffer for it.
    package func send(_ sdu: [UInt8]) async throws {
        guard sdu.count <= peerMTU else {
            throw NearbyError(.invalidArgument, "SDU of \(sdu.count) bytes exceeds the peer's MTU \(peerMTU)")
        }
        while true {
            guard !descriptor.isClosed else { throw NearbyError(.endpointIoError, "the L2CAP channel to \(peer) is closed") }
            let written = sdu.withUnsafeBytes { Glibc.write(descriptor.fd, $0.baseAddress, $0.count) }
            if written == sdu.count { return }
            if written >= 0 {
                throw NearbyError(.endpointIoError, "the kernel took \(written) of \(sdu.count) bytes of one SDU to \(peer)")
            }
            let code = errno
            switch code {
            case EAGAIN, EWOULDBLOCK:
                try await descriptor.waitWritable()
            case EINTR:
                continue
            default:
                throw KernelL2CAPSocket.failure("write to \(peer)", code)
            }
        }
    }

    /// The next SDU; `nil` once the peer or ``close()`` closed the channel and every SDU that arrived before was
    /// read. The SDUs were read off the socket when they arrived (``KernelSDUDrain``); the peer's last writes before
    /// it disconnected are among them.
    package func receive() async throws -> [UInt8]? {
        if descriptor.isClosed { return nil }
        return try await drain.next()
    }

    /// Disconnects the channel. Idempotent.
    package func close() async {
        drain.stop()
        descriptor.close()
    }
}

/// Kernel L2CAP LE credit-based channels: servers on a PSM and client connections.
package enum KernelL2CAP {
    /// Socket settings.
    package struct Options: Sendable, Hashable {
        /// Our MTU (`BT_RCVMTU`): the largest SDU we accept.
        package var receiveMTU: UInt16 = 4096
        /// `BT_SECURITY`: low (no pairing) by default; UKEY2 secures Nearby above L2CAP.
        package var security: KernelL2CAPSocket.SecurityLevel = .low
        /// The adapter's address to bind to; any adapter when `nil`.
        package var localAddress: BLEAddress? = nil

        /// The defaults.
        package init() {}
    }

    /// Connects to `psm` at `peer` (its LE address type decides `BDADDR_LE_PUBLIC` or `BDADDR_LE_RANDOM`).
    /// - Throws: `.l2capChannelFailed`-like `.endpointIoError` naming the kernel's reason (refused, timed out),
    ///   `.mediumUnavailable` without kernel Bluetooth.
    package static func connect(to peer: BLEAddress, psm: UInt16, options: Options = .init()) async throws -> KernelL2CAPChannel {
        let fd = try KernelL2CAPSocket.open(security: options.security)
        let descriptor = KernelDescriptor(fd: fd)
        do {
            try KernelL2CAPSocket.bind(fd, local: options.localAddress, psm: 0, receiveMTU: options.receiveMTU)
            if !(try KernelL2CAPSocket.startConnect(fd, to: peer, psm: psm)) {
                try await descriptor.waitWritable()
                let code = KernelL2CAPSocket.pendingError(fd)
                if code != 0 { throw KernelL2CAPSocket.failure("connect to \(peer) psm \(psm)", code) }
            }
            return try KernelL2CAPChannel(descriptor: descriptor, peer: peer)
        } catch {
            descriptor.close()
            throw error
        }
    }

    /// Listens on `psm` (a dynamic PSM, 0x80…0xFF, when `nil`) and passes every accepted channel to `onChannel`
    /// until the server is stopped.
    package static func listen(
        psm: UInt16?, options: Options = .init(), onChannel: @escaping @Sendable (KernelL2CAPChannel) -> Void,
        onError: @escaping @Sendable (NearbyError) -> Void = { _ in }
    ) throws -> BLEL2CAPServer {
        let fd = try KernelL2CAPSocket.open(security: options.security)
        let descriptor = KernelDescriptor(fd: fd)
        let chosen: UInt16
        do {
            try KernelL2CAPSocket.bind(fd, local: options.localAddress, psm: psm ?? 0, receiveMTU: options.receiveMTU)
            guard Glibc.listen(fd, 8) == 0 else { throw KernelL2CAPSocket.failure("listen") }
            chosen = try KernelL2CAPSocket.boundPSM(fd)
        } catch {
            descriptor.close()
            throw error
        }
        // Owner: the returned server, whose stop closes the descriptor and awaits this task; it ends when the
        // descriptor is closed (the wait for a connection then throws) or accepting fails.
        let task = Task {
            while !descriptor.isClosed {
                do {
                    guard let accepted = try KernelL2CAPSocket.accept(fd) else {
                        try await descriptor.waitReadable()
                        continue
                    }
                    let (child, peer) = accepted
                    let childDescriptor = KernelDescriptor(fd: child)
                    do {
                        onChannel(try KernelL2CAPChannel(
                            descriptor: childDescriptor, peer: peer ?? BLEAddress(hciBytes: [0, 0, 0, 0, 0, 0], kind: .public)!))
                    } catch {
                        childDescriptor.close()
                        onError(error as? NearbyError ?? KernelL2CAPSocket.failure("accept", EIO))
                    }
                } catch {
                    if descriptor.isClosed { return }
                    onError(error as? NearbyError ?? KernelL2CAPSocket.failure("accept", EIO))
                    return
                }
            }
        }
        return BLEL2CAPServer(psm: chosen) {
            descriptor.close()
            await task.value
        }
    }
}
