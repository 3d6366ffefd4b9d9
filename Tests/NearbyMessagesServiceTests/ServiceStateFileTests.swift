import Foundation
import NearbyMessagesService
import NearbyWire
import Testing

@Suite("Service state file", .timeLimit(.minutes(5)))
struct ServiceStateFileTests {
    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static let entries = [
        ServiceEntry(handle: "pub-0000abcd", kind: .publication, serviceID: "svc", namespace: "", type: "", contentHex: "6869", background: true),
        ServiceEntry(
            handle: "sub-0000abcd", kind: .subscription, serviceID: "svc", namespace: "ns", background: true,
            expiresAt: Date(timeIntervalSince1970: 2_000_000_000)),
    ]

    @Test("no file is an empty state")
    func missing() throws {
        let file = ServiceStateFile(url: try Self.directory().appendingPathComponent("service.json"))
        let loaded = try file.load()
        #expect(loaded.state == ServiceState())
        #expect(loaded.problem == nil)
    }

    @Test("save then load gives the same state; the directory is made; no temporary file stays; mode 0600")
    func roundTrip() throws {
        let directory = try Self.directory().appendingPathComponent("nested/nearby")
        let file = ServiceStateFile(url: directory.appendingPathComponent("service.json"))
        try file.save(ServiceState(entries: Self.entries))
        var state = try file.load().state
        #expect(state.entries == Self.entries)
        state.remove("pub-0000abcd")
        try file.save(state)
        #expect(try file.load().state.entries == [Self.entries[1]])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["service.json"])
        let mode = try FileManager.default.attributesOfItem(atPath: file.url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("a corrupt file (or one of an unknown version) is moved aside with a clear problem, and the state is empty")
    func corrupt() throws {
        for text in ["{\"version\":1,\"entries\":[{\"handle\":", #"{"version":99,"entries":[]}"#, "\u{0}\u{1}garbage"] {
            let directory = try Self.directory()
            let url = directory.appendingPathComponent("service.json")
            try Data(text.utf8).write(to: url)
            let loaded = try ServiceStateFile(url: url).load()
            #expect(loaded.state == ServiceState())
            let problem = try #require(loaded.problem)
            #expect(problem.code == .malformedMessage)
            #expect(problem.message.contains("is not valid") && problem.message.contains("moved it to"), "\(problem.message)")
            let aside = try #require(loaded.movedAside)
            #expect(!FileManager.default.fileExists(atPath: url.path))
            #expect(try Data(contentsOf: aside) == Data(text.utf8))
            // The service can save a fresh state right after.
            try ServiceStateFile(url: url).save(ServiceState(entries: Self.entries))
            #expect(try ServiceStateFile(url: url).load().state.entries == Self.entries)
        }
    }

    @Test("entries whose TTL ran out are told apart from the living")
    func partition() {
        let state = ServiceState(entries: Self.entries)
        let later = state.partitioned(at: Date(timeIntervalSince1970: 2_000_000_001))
        #expect(later.alive.map(\.handle) == ["pub-0000abcd"])
        #expect(later.expired.map(\.handle) == ["sub-0000abcd"])
        #expect(state.partitioned(at: Date(timeIntervalSince1970: 0)).alive.count == 2)
    }
}

/// The state file is anything the disk holds: bounded reads, validated entries, one item per handle (issue 22).
@Suite("Service state file, hostile", .timeLimit(.minutes(1)))
struct ServiceStateFileHostileTests {
    @Test("a file larger than the cap is moved aside without being read whole")
    func oversized() throws {
        let url = try ServiceStateFileTests.directory().appendingPathComponent("service.json")
        let handle = try #require(FileHandle(forWritingAtPath: url.path) ?? {
            FileManager.default.createFile(atPath: url.path, contents: nil)
            return FileHandle(forWritingAtPath: url.path)
        }())
        try handle.truncate(atOffset: UInt64(ServiceStateFile.maximumSize) + 1)  // sparse: costs no disk
        try handle.close()
        let loaded = try ServiceStateFile(url: url).load()
        #expect(loaded.state.entries.isEmpty)
        #expect(loaded.problem?.message.contains("larger than \(ServiceStateFile.maximumSize) bytes") == true)
        #expect(loaded.movedAside != nil && !FileManager.default.fileExists(atPath: url.path))
    }

    @Test("invalid entries and repeated handles are dropped and reported (the file is copied aside); the valid ones are kept")
    func invalidEntries() throws {
        let url = try ServiceStateFileTests.directory().appendingPathComponent("service.json")
        let good = ServiceStateFileTests.entries
        let bad = [
            ServiceEntry(handle: "pub-../../x", kind: .publication, serviceID: "svc", contentHex: "00", background: true),
            ServiceEntry(handle: "sub-0000abcd", kind: .publication, serviceID: "svc", contentHex: "00", background: true),
            ServiceEntry(handle: "pub-0000dead", kind: .publication, serviceID: "", contentHex: "00", background: true),
            ServiceEntry(handle: "pub-0000beef", kind: .publication, serviceID: "svc", contentHex: "zz", background: true),
            ServiceEntry(
                handle: "pub-0000f00d", kind: .publication, serviceID: "svc",
                contentHex: String(repeating: "00", count: 102_401), background: true),
            ServiceEntry(handle: "sub-0000cafe", kind: .subscription, serviceID: "svc", type: "t*", background: true),
            ServiceEntry(handle: "sub-0000babe", kind: .subscription, serviceID: "svc", background: false),
            good[0],  // a repeated handle: the first one wins
        ]
        try ServiceStateFile(url: url).save(ServiceState(entries: good + bad))
        let loaded = try ServiceStateFile(url: url).load()
        #expect(loaded.state.entries == good)
        #expect(loaded.droppedEntries == bad.count)
        let problem = try #require(loaded.problem)
        #expect(problem.code == .malformedMessage && problem.message.contains("\(bad.count) unusable entries"), "\(problem.message)")
        let aside = try #require(loaded.movedAside)
        #expect(FileManager.default.fileExists(atPath: aside.path) && FileManager.default.fileExists(atPath: url.path))
    }
}
