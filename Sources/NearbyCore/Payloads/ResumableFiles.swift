#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NearbySecurity
import NearbyWire

/// Auto-resume across a restart of the receiving process (docs/LINK-SAFETY.md): beside the temporary file of a FILE
/// payload from a swift-nearby sender, a *resume record* (`.nearby-PID-N.partial.resume`, 0600) says which payload
/// it is and holds a token only that sender can reproduce. When the process dies, the next engine that starts on
/// the receive directory keeps such partial files for the reconnect window instead of deleting them; a sender that
/// comes back within it (on a new connection) names the payload and its token, and the transfer goes on from the
/// file's size.
package struct ResumeRecord: Codable, Sendable, Hashable {
    /// The payload's ID (the sender keeps it across the reconnect).
    package var payloadID: Int64
    /// The sender's endpoint ID.
    package var senderEndpointID: String
    /// The file's sanitized name and folder (as the receive directory's file store made them).
    package var fileName: String
    package var folder: [String]
    /// The announced size (−1 unknown).
    package var totalSize: Int64
    /// ``ResumableFiles/token(key:payloadID:)``, hex.
    package var token: String

    /// Creates a record.
    package init(
        payloadID: Int64, senderEndpointID: String, fileName: String, folder: [String], totalSize: Int64, token: String
    ) {
        self.payloadID = payloadID
        self.senderEndpointID = senderEndpointID
        self.fileName = fileName
        self.folder = folder
        self.totalSize = totalSize
        self.token = token
    }

    /// The record's file name for a temporary file name.
    static func name(for temporaryName: String) -> String { temporaryName + suffix }
    /// How a record's name ends.
    static let suffix = ".resume"
}

/// The partial files a restarted engine keeps for senders that may come back, until its reconnect window passes.
package final class ResumableFiles: Sendable {
    /// A kept partial file and its record.
    package struct Kept: Sendable {
        /// The temporary file, relative to the receive directory: its folder and name.
        package var folder: [String]
        package var temporaryName: String
        package var record: ResumeRecord
    }

    private let kept: LockedValue<[Int64: Kept]>
    private let directory: URL

    /// Files kept in `directory` (from ``PartialFiles/removeStale(in:keepingResumableFor:)``).
    package init(directory: URL, kept: [Kept]) {
        self.directory = directory
        self.kept = LockedValue(Dictionary(kept.map { ($0.record.payloadID, $0) }, uniquingKeysWith: { first, _ in first }))
    }

    /// Adds files kept by the start-up sweep, which runs in the background (``NearbyEngine``): a sender that comes
    /// back before it ended starts its file again instead of resuming.
    package func add(_ more: [Kept]) {
        kept.withLock { kept in
            for entry in more where kept[entry.record.payloadID] == nil { kept[entry.record.payloadID] = entry }
        }
    }

    /// How many partial files are kept now.
    package var count: Int { kept.withLock { $0.count } }

    /// The token that proves a sender is the one whose payload `payloadID` the record is about: HMAC-SHA256 under the
    /// connection's reconnect key (`PeerExtension.reconnectKey`) over `"swift-nearby resume"` and the ID (8 bytes,
    /// big-endian).
    package static func token(key: [UInt8], payloadID: Int64) -> [UInt8] {
        let id = withUnsafeBytes(of: UInt64(bitPattern: payloadID).bigEndian) { Array($0) }
        return CryptoPrimitives.hmacSHA256(key: key, Array("swift-nearby resume".utf8) + id)
    }

    /// Takes the kept file of `payloadID` if `token` proves the sender (compared in constant time); it is then the
    /// caller's.
    package func claim(_ payloadID: Int64, token: [UInt8]) -> Kept? {
        kept.withLock { kept in
            guard let entry = kept[payloadID], let expected = try? Hex.decode(entry.record.token),
                CryptoPrimitives.constantTimeEquals(expected, token)
            else { return nil }
            kept[payloadID] = nil
            return entry
        }
    }

    /// The window passed: deletes every file not claimed (and its record); returns how many.
    @discardableResult
    package func expire() -> Int {
        let left = kept.withLock { kept -> [Kept] in
            defer { kept = [:] }
            return Array(kept.values)
        }
        for entry in left {
            let folder = entry.folder.reduce(directory) { $0.appendingPathComponent($1) }
            unlink(folder.appendingPathComponent(entry.temporaryName).path)
            unlink(folder.appendingPathComponent(ResumeRecord.name(for: entry.temporaryName)).path)
        }
        return left.count
    }

    /// Writes `record` beside the temporary file `temporaryName` in `folder` of `directory` (created exclusively,
    /// mode 0600, the last component never followed); failures only lose the chance to resume.
    static func write(_ record: ResumeRecord, beside temporaryName: String, folder: [String], in directory: URL) {
        guard let data = try? JSONEncoder().encode(record) else { return }
        let path = folder.reduce(directory) { $0.appendingPathComponent($1) }
            .appendingPathComponent(ResumeRecord.name(for: temporaryName)).path
        let descriptor = open(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = data.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
    }

    /// Deletes the record beside `temporaryName` in `folder`, if any.
    static func remove(beside temporaryName: String, folder: [String], in directory: URL) {
        let path = folder.reduce(directory) { $0.appendingPathComponent($1) }
            .appendingPathComponent(ResumeRecord.name(for: temporaryName)).path
        unlink(path)
    }
}
