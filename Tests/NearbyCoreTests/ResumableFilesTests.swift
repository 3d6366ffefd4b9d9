import Foundation
import NearbyCore
import NearbyWire
import Testing

/// Partial files kept across a restart of the receiving process for senders that come back (docs/LINK-SAFETY.md).
@Suite("Partial files kept for resuming", .timeLimit(.minutes(1)))
struct ResumableFilesTests {
    /// A process ID that runs nothing now.
    static func deadPID() -> Int32 {
        var pid: Int32 = 4_194_000
        while kill(pid, 0) == 0 || errno != ESRCH { pid -= 1 }
        return pid
    }

    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-resumable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func record(_ id: Int64, key: [UInt8]) -> ResumeRecord {
        ResumeRecord(
            payloadID: id, senderEndpointID: "SNDR", fileName: "photo.jpg", folder: [], totalSize: 1000,
            token: Hex.encode(ResumableFiles.token(key: key, payloadID: id)))
    }

    @Test("A dead process's partial file with a fresh record is kept; one without, and a lone record, go")
    func keepsRecordedPartials() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pid = Self.deadPID()
        let key = [UInt8](repeating: 7, count: 32)
        let recorded = ".nearby-\(pid)-1.partial", unrecorded = ".nearby-\(pid)-3.partial"
        try Data(repeating: 1, count: 100).write(to: directory.appendingPathComponent(recorded))
        try JSONEncoder().encode(Self.record(41, key: key)).write(to: directory.appendingPathComponent(recorded + ".resume"))
        try JSONEncoder().encode(Self.record(42, key: key))
            .write(to: directory.appendingPathComponent(".nearby-\(pid)-2.partial.resume"))
        try Data(repeating: 2, count: 10).write(to: directory.appendingPathComponent(unrecorded))

        let (removed, kept) = PartialFiles.removeStale(in: directory, keepingResumableFor: .seconds(30))
        #expect(removed == 2)
        #expect(kept.map(\.temporaryName) == [recorded] && kept.first?.record.payloadID == 41)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(left == [recorded, recorded + ".resume"])

        let files = ResumableFiles(directory: directory, kept: kept)
        #expect(files.claim(41, token: ResumableFiles.token(key: [UInt8](repeating: 8, count: 32), payloadID: 41)) == nil)
        #expect(files.claim(41, token: ResumableFiles.token(key: key, payloadID: 42)) == nil)
        #expect(files.claim(41, token: ResumableFiles.token(key: key, payloadID: 41))?.temporaryName == recorded)
        #expect(files.claim(41, token: ResumableFiles.token(key: key, payloadID: 41)) == nil, "claimed once")
    }

    @Test("Without a window, or once it passed, nothing is kept")
    func expires() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pid = Self.deadPID()
        let key = [UInt8](repeating: 7, count: 32)
        for index in 1...2 {
            let name = ".nearby-\(pid)-\(index).partial"
            try Data(repeating: 1, count: 100).write(to: directory.appendingPathComponent(name))
            try JSONEncoder().encode(Self.record(Int64(index), key: key)).write(to: directory.appendingPathComponent(name + ".resume"))
        }
        let (_, kept) = PartialFiles.removeStale(in: directory, keepingResumableFor: .seconds(30))
        #expect(kept.count == 2)
        let files = ResumableFiles(directory: directory, kept: kept)
        #expect(files.expire() == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)

        let name = ".nearby-\(pid)-5.partial"
        try Data(repeating: 1, count: 100).write(to: directory.appendingPathComponent(name))
        try JSONEncoder().encode(Self.record(5, key: key)).write(to: directory.appendingPathComponent(name + ".resume"))
        let (removed, none) = PartialFiles.removeStale(in: directory, keepingResumableFor: .zero)
        #expect(none.isEmpty && removed == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }
}
