import Foundation
import NearbyWire

#if canImport(Glibc)
import Glibc
#endif

/// What the service saves: the background publications and subscriptions (Google's "save the background setting,
/// restore on launch").
public struct ServiceState: Codable, Sendable, Hashable {
    /// The format version this build writes and reads.
    public static let currentVersion = 1

    /// The format version.
    public var version: Int
    /// The background publications and subscriptions, in the order they were made.
    public var entries: [ServiceEntry]

    /// Creates a state.
    public init(entries: [ServiceEntry] = []) {
        version = Self.currentVersion
        self.entries = entries
    }

    /// Adds `entry`, or replaces the one with its handle.
    public mutating func upsert(_ entry: ServiceEntry) {
        if let index = entries.firstIndex(where: { $0.handle == entry.handle }) {
            entries[index] = entry
        } else {
            entries.append(entry)
        }
    }

    /// Removes the entry named `handle`; returns whether there was one.
    @discardableResult
    public mutating func remove(_ handle: String) -> Bool {
        let before = entries.count
        entries.removeAll { $0.handle == handle }
        return entries.count != before
    }

    /// The entries still alive at `now`, and those whose TTL ran out.
    public func partitioned(at now: Date) -> (alive: [ServiceEntry], expired: [ServiceEntry]) {
        (entries.filter { ($0.expiresAt ?? .distantFuture) > now }, entries.filter { ($0.expiresAt ?? .distantFuture) <= now })
    }
}

/// The state file: JSON, written atomically (a temporary file in the same directory, then `rename`), readable only
/// by its owner.
public struct ServiceStateFile: Sendable {
    /// The file.
    public let url: URL

    /// The state file at `url`.
    public init(url: URL) {
        self.url = url
    }

    /// The largest state file read, in bytes: ``ServiceLimits/maxItems`` (64) publications of 100 KiB are about
    /// 13 MiB.
    public static let maximumSize = 16 * 1024 * 1024

    /// The outcome of ``load()``.
    public struct Loaded: Sendable {
        /// The state read (empty when there was no file, or it was unreadable); only valid entries, each handle once.
        public var state: ServiceState
        /// Why the file could not be used (or not all of it), when it could not; it was then moved (or copied) to
        /// ``movedAside``.
        public var problem: NearbyError?
        /// Where an unusable file was moved, or a file with unusable entries copied.
        public var movedAside: URL?
        /// How many entries were dropped (invalid, or a handle seen before); the caller saves the state without
        /// them.
        public var droppedEntries = 0
    }

    /// Reads the state. No file is an empty state. A file larger than ``maximumSize``, or that is not a valid state
    /// (or of an unknown version), is moved aside to `NAME.corrupt-TIMESTAMP` and reported in ``Loaded/problem``
    /// (code `.malformedMessage`); the state is then empty. Entries that do not pass ``ServiceEntry/validate()``,
    /// and later entries with a handle already seen, are dropped and reported (the file is copied aside first); the
    /// others are kept. Only a file that exists but cannot be read at all throws.
    /// - Throws: `NearbyError` with code `.invalidArgument` when the file cannot be read.
    public func load() throws(NearbyError) -> Loaded {
        guard FileManager.default.fileExists(atPath: url.path) else { return Loaded(state: ServiceState()) }
        guard let data = try Self.read(url.path, atMost: Self.maximumSize) else {
            return moveAside(NearbyError(.malformedMessage, "it is larger than \(Self.maximumSize) bytes"))
        }
        let state: ServiceState
        do throws(NearbyError) {
            state = try ServiceCodec.decode(ServiceState.self, from: data)
            guard state.version == ServiceState.currentVersion else {
                throw NearbyError(.malformedMessage, "unknown state version \(state.version)")
            }
        } catch {
            return moveAside(error)
        }
        var kept = ServiceState()
        var seen = Set<String>()
        var reasons: [String] = []
        for entry in state.entries {
            do throws(NearbyError) {
                try entry.validate()
                guard seen.insert(entry.handle).inserted else {
                    throw NearbyError(.malformedMessage, "\(entry.handle) appears twice")
                }
                kept.entries.append(entry)
            } catch {
                reasons.append(error.message)
            }
        }
        guard !reasons.isEmpty else { return Loaded(state: kept) }
        let aside = asideURL()
        let copied = (try? FileManager.default.copyItem(at: url, to: aside)) != nil
        let problem = NearbyError(
            .malformedMessage,
            "the state file \(url.path) has \(reasons.count) unusable entries (\(reasons.prefix(3).joined(separator: "; "))"
                + "\(reasons.count > 3 ? "; …" : "")); dropped them\(copied ? ", the file was copied to \(aside.path)" : "")")
        return Loaded(state: kept, problem: problem, movedAside: copied ? aside : nil, droppedEntries: reasons.count)
    }

    private func asideURL() -> URL {
        url.deletingLastPathComponent().appendingPathComponent(
            "\(url.lastPathComponent).corrupt-\(Int(Date().timeIntervalSince1970))-\(UUID().uuidString.prefix(4))")
    }

    private func moveAside(_ error: NearbyError) -> Loaded {
        let aside = asideURL()
        let moved = rename(url.path, aside.path) == 0
        let outcome = moved ? "moved it to \(aside.path) and started empty" : "started empty"
        let problem = NearbyError(.malformedMessage, "the state file \(url.path) is not valid (\(error.message)); \(outcome)")
        return Loaded(state: ServiceState(), problem: problem, movedAside: moved ? aside : nil)
    }

    /// The bytes of the file at `path`, or `nil` when it has more than `limit`; never reads more than `limit` + 1.
    private static func read(_ path: String, atMost limit: Int) throws(NearbyError) -> Data? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            throw NearbyError(.invalidArgument, "cannot read the state file \(path): errno \(errno)")
        }
        defer { close(fd) }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= limit {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw NearbyError(.invalidArgument, "cannot read the state file \(path): errno \(errno)")
            }
            bytes += chunk[..<count]
        }
        return bytes.count > limit ? nil : Data(bytes)
    }

    /// Writes `state`: to a temporary file beside the state file, flushed, then renamed over it, so a reader sees
    /// the old or the new state, never part of one. The directory is made (mode 0700) when missing.
    /// - Throws: `NearbyError` with code `.invalidArgument` naming the path.
    public func save(_ state: ServiceState) throws(NearbyError) {
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            let data = try encoder.encode(state)
            let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw NearbyError(.invalidArgument, "cannot create \(temporary.path): errno \(errno)") }
            let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd) == 0
            close(fd)
            guard written == data.count, synced else {
                throw NearbyError(.invalidArgument, "cannot write \(temporary.path): errno \(errno)")
            }
            guard rename(temporary.path, url.path) == 0 else {
                throw NearbyError(.invalidArgument, "cannot rename \(temporary.path) to \(url.path): errno \(errno)")
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            if let nearby = error as? NearbyError { throw nearby }
            throw NearbyError(.invalidArgument, "cannot save the state file \(url.path): \(error.localizedDescription)")
        }
    }
}
