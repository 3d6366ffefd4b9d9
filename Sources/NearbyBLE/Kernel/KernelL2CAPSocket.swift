#if canImport(Glibc)
import Glibc
#endif
import NearbyWire

/// The Linux kernel's L2CAP sockets (`AF_BLUETOOTH`, `BTPROTO_L2CAP`, `SOCK_SEQPACKET`) for LE credit-based
/// channels: thin, non-blocking system-call wrappers that turn `errno` into `NearbyError`.
///
/// The constants and the layout of `struct sockaddr_l2` come from the headers of `libbluetooth-dev`
/// (`<bluetooth/bluetooth.h>`, `<bluetooth/l2cap.h>`, BlueZ 5.x); they are kernel ABI and never change, so they
/// are spelled here instead of importing the headers through a C module.
package enum KernelL2CAPSocket {
    /// `AF_BLUETOOTH` (`<bluetooth/bluetooth.h>`).
    static let addressFamily: Int32 = 31
    /// `BTPROTO_L2CAP` (`<bluetooth/bluetooth.h>`).
    static let l2capProtocol: Int32 = 0
    /// `SOL_BLUETOOTH` (`<bluetooth/bluetooth.h>`).
    static let solBluetooth: Int32 = 274
    /// `BT_SECURITY` (`<bluetooth/bluetooth.h>`): takes `struct bt_security { uint8_t level; uint8_t key_size; }`.
    static let btSecurity: Int32 = 4
    /// `BT_SNDMTU` (`<bluetooth/bluetooth.h>`): the peer's MTU (read-only for LE CoC).
    static let btSendMTU: Int32 = 12
    /// `BT_RCVMTU` (`<bluetooth/bluetooth.h>`): our MTU, set before connect or listen.
    static let btReceiveMTU: Int32 = 13
    /// `BDADDR_LE_PUBLIC` (`<bluetooth/bluetooth.h>`).
    static let leAddressPublic: UInt8 = 0x01
    /// `BDADDR_LE_RANDOM` (`<bluetooth/bluetooth.h>`).
    static let leAddressRandom: UInt8 = 0x02
    /// `sizeof(struct sockaddr_l2)` (`<bluetooth/l2cap.h>`): family u16, psm u16 (little endian), bdaddr 6 bytes
    /// (least significant first, as in HCI), cid u16, bdaddr_type u8, padded to 14.
    static let addressLength = 14

    /// The security levels of `BT_SECURITY`.
    package enum SecurityLevel: UInt8, Sendable {
        /// `BT_SECURITY_LOW`: no encryption, no pairing (Nearby's L2CAP channels authenticate with UKEY2 above).
        case low = 1
        /// `BT_SECURITY_MEDIUM`: encrypted (unauthenticated pairing).
        case medium = 2
        /// `BT_SECURITY_HIGH`: encrypted and authenticated.
        case high = 3
    }

    /// A `struct sockaddr_l2` for an LE address (all zeros: `BDADDR_ANY`) and PSM.
    static func socketAddress(_ address: BLEAddress?, psm: UInt16) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: addressLength)
        bytes[0] = UInt8(addressFamily)
        bytes[2] = UInt8(psm & 0xFF)
        bytes[3] = UInt8(psm >> 8)
        if let address { bytes.replaceSubrange(4..<10, with: address.bytes) }
        bytes[12] = address?.kind == .public || address == nil ? leAddressPublic : leAddressRandom
        return bytes
    }

    /// The address and PSM in a `struct sockaddr_l2`.
    static func decode(_ bytes: [UInt8]) -> (address: BLEAddress?, psm: UInt16) {
        guard bytes.count >= 13 else { return (nil, 0) }
        let psm = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
        let kind: BLEAddress.Kind = bytes[12] == leAddressRandom ? .random : .public
        return (BLEAddress(hciBytes: Array(bytes[4..<10]), kind: kind), psm)
    }

    /// An error for a failed system call, from `errno`.
    static func failure(_ call: String, _ code: Int32 = errno, _ kind: NearbyError.Code = .endpointIoError) -> NearbyError {
        NearbyError(kind, "\(call) on an L2CAP socket failed: \(String(cString: strerror(code))) (errno \(code))")
    }

    /// A new non-blocking, close-on-exec L2CAP socket with the security level set; ``bind(_:local:psm:receiveMTU:)``
    /// next.
    /// - Throws: `.mediumUnavailable` when the kernel has no Bluetooth (`EAFNOSUPPORT`) or forbids the socket.
    static func open(security: SecurityLevel) throws -> Int32 {
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = Glibc.socket(addressFamily, type, l2capProtocol)
        guard fd >= 0 else {
            let code = errno
            if code == EAFNOSUPPORT || code == EPROTONOSUPPORT {
                throw NearbyError(
                    .mediumUnavailable,
                    "this kernel has no Bluetooth L2CAP sockets (socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP): \(String(cString: strerror(code))))")
            }
            throw failure("socket", code, .mediumUnavailable)
        }
        do {
            var level: [UInt8] = [security.rawValue, 0]
            try check(setsockopt(fd, solBluetooth, btSecurity, &level, socklen_t(level.count)), "setsockopt(BT_SECURITY)")
        } catch {
            Glibc.close(fd)
            throw error
        }
        enlargeReceiveBuffer(fd)
        return fd
    }

    /// The receive buffer asked for on every channel socket.
    static let receiveBufferBytes: Int32 = 4 << 20

    /// Asks for a ``receiveBufferBytes`` receive buffer (`SO_RCVBUFFORCE` when the process may, else `SO_RCVBUF`,
    /// which the kernel caps at `net.core.rmem_max`); failures are ignored (the default buffer stays).
    ///
    /// Why: an SDU of an LE credit-based channel that does not fit in the socket's receive buffer is dropped by the
    /// kernel without a trace (the peer's next SDUs arrive), even though the peer had credits for it. Each SDU is
    /// charged as the sum of its fragments' buffers (one per ACL packet: a 1 KiB SDU in 27-byte ACL packets costs
    /// tens of KiB), so the default buffer holds few SDUs, and a reader that falls behind loses data; the D2D
    /// sequence check then drops the connection (the BlueZ rig's test j saw it in the slow QEMU guest). A larger
    /// buffer makes that rarer; whether it rules it out depends on how the kernel grants credits.
    static func enlargeReceiveBuffer(_ fd: Int32) {
        var size = receiveBufferBytes
        let length = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, length) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, length)
        }
    }

    /// Binds `fd` to the adapter `local` (any adapter when `nil`) with an LE address type and `psm` (0: a dynamic
    /// PSM when listening), then sets our MTU (`BT_RCVMTU`, which the kernel accepts only once the socket is LE).
    static func bind(_ fd: Int32, local: BLEAddress?, psm: UInt16, receiveMTU: UInt16) throws {
        var address = socketAddress(local, psm: psm)
        let result = address.withUnsafeMutableBytes { raw in
            Glibc.bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(addressLength))
        }
        try check(result, "bind(psm \(psm))")
        var mtu = receiveMTU
        try check(setsockopt(fd, solBluetooth, btReceiveMTU, &mtu, socklen_t(MemoryLayout<UInt16>.size)), "setsockopt(BT_RCVMTU)")
    }

    /// The PSM `fd` is bound to (`getsockname`).
    static func boundPSM(_ fd: Int32) throws -> UInt16 {
        var bytes = [UInt8](repeating: 0, count: addressLength)
        var length = socklen_t(addressLength)
        let result = bytes.withUnsafeMutableBytes { raw in
            getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        try check(result, "getsockname")
        return decode(bytes).psm
    }

    /// Starts a non-blocking connect to `psm` at `peer`: `true` when it completed at once, `false` while in progress.
    static func startConnect(_ fd: Int32, to peer: BLEAddress, psm: UInt16) throws -> Bool {
        var address = socketAddress(peer, psm: psm)
        let result = address.withUnsafeMutableBytes { raw in
            Glibc.connect(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(addressLength))
        }
        if result == 0 { return true }
        let code = errno
        if code == EINPROGRESS || code == EAGAIN { return false }
        throw failure("connect to \(peer) psm \(psm)", code)
    }

    /// The pending error of `fd` (`SO_ERROR`): 0 when a non-blocking connect succeeded.
    static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
        return value
    }

    /// Accepts one channel: its descriptor (made non-blocking and close-on-exec) and peer, or `nil` when none is waiting.
    static func accept(_ fd: Int32) throws -> (fd: Int32, peer: BLEAddress?)? {
        var bytes = [UInt8](repeating: 0, count: addressLength)
        var length = socklen_t(addressLength)
        let child = bytes.withUnsafeMutableBytes { raw in
            Glibc.accept(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        if child >= 0 {
            // Glibc's Swift module has no accept4: set the flags right after.
            _ = fcntl(child, F_SETFD, FD_CLOEXEC)
            _ = fcntl(child, F_SETFL, fcntl(child, F_GETFL) | O_NONBLOCK)
            enlargeReceiveBuffer(child)
            return (child, decode(bytes).address)
        }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR || code == ECONNABORTED { return nil }
        throw failure("accept", code)
    }

    /// A 16-bit `SOL_BLUETOOTH` option (`BT_SNDMTU`, `BT_RCVMTU`).
    static func mtu(_ fd: Int32, option: Int32) throws -> Int {
        var value: UInt16 = 0
        var length = socklen_t(MemoryLayout<UInt16>.size)
        try check(getsockopt(fd, solBluetooth, option, &value, &length), option == btSendMTU ? "getsockopt(BT_SNDMTU)" : "getsockopt(BT_RCVMTU)")
        return Int(value)
    }

    private static func check(_ result: Int32, _ call: String) throws {
        if result != 0 { throw failure(call) }
    }
}
