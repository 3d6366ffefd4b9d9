import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The user at the other end of a Unix socket, from the kernel (`SO_PEERCRED`): the service serves only its own
/// user, and a client talks only to a service of its own user.
enum PeerCredentials {
    /// The effective uid of the process at the other end of `channel` when it connected (or listened); `nil` when
    /// the kernel does not say (not a Unix socket).
    static func uid(of channel: any Channel) async -> uid_t? {
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        let credentials: Credentials? = try? await provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(soPeerCred)
        ).get()
        return credentials?.uid
    }

    /// `struct ucred` (Glibc hides it without `_GNU_SOURCE`): the layout `SO_PEERCRED` fills.
    private struct Credentials: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// `SO_PEERCRED` (17 on Linux).
    private static let soPeerCred: Int32 = 17

    /// Whether `channel`'s peer runs as this process's effective user.
    static func isSameUser(_ channel: any Channel) async -> (same: Bool, uid: uid_t?) {
        let uid = await uid(of: channel)
        return (uid == geteuid(), uid)
    }
}
