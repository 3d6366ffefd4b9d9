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
        ServiceEntry(handle: "pub-1", kind: .publication, serviceID: "svc", namespace: "", type: "", contentHex: "6869", background: true),
        ServiceEntry(
            handle: "sub-1", kind: .subscription, serviceID: "svc", namespace: "ns", background: true,
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
        state.remove("pub-1")
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
        #expect(later.alive.map(\.handle) == ["pub-1"])
        #expect(later.expired.map(\.handle) == ["sub-1"])
        #expect(state.partitioned(at: Date(timeIntervalSince1970: 0)).alive.count == 2)
    }
}
