import Foundation
import Glibc
@testable import NearbyCore
import NearbyWire
import Testing

/// The file store against a receive directory an attacker prepared: symbolic links where folders, final names and
/// temporary names go, names that try to climb out, failures that must not leak descriptors.
struct ReceivedFileStoreTests {
    /// A fresh `root/inbox` (the receive directory) and `root/outside` (must stay untouched).
    private struct Layout {
        let root: URL
        var inbox: URL { root.appendingPathComponent("inbox") }
        var outside: URL { root.appendingPathComponent("outside") }

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-store-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("inbox"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: root.appendingPathComponent("outside"), withIntermediateDirectories: true)
            try Data("precious".utf8).write(to: root.appendingPathComponent("outside/target"))
        }

        func link(_ name: String, to destination: URL) throws {
            try FileManager.default.createSymbolicLink(
                atPath: inbox.appendingPathComponent(name).path, withDestinationPath: destination.path)
        }

        /// Everything under `outside`, with contents, to compare before and after.
        func outsideSnapshot() throws -> [String: Data] {
            var result: [String: Data] = [:]
            for name in try FileManager.default.subpathsOfDirectory(atPath: outside.path) {
                let url = outside.appendingPathComponent(name)
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                    result[name] = try Data(contentsOf: url)
                } else {
                    result[name] = Data()
                }
            }
            return result
        }

        /// Every regular file under the root that is not under `outside`.
        func filesInInbox() throws -> [String] {
            try FileManager.default.subpathsOfDirectory(atPath: inbox.path).sorted()
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    /// Receives `content` as one file; returns where it landed.
    private func receive(
        _ store: ReceivedFileStore, id: PayloadID, name: String, folder: String, content: Data
    ) throws -> URL {
        try store.begin(id, fileName: name, parentFolder: folder, totalSize: Int64(content.count))
        try store.write(id, content)
        return try store.finish(id, expectedSize: Int64(content.count))
    }

    @Test("Names that try to climb out land inside the receive directory", .timeLimit(.minutes(5)), arguments: [
        ("../\u{301}x", ""), ("x", "../../"), ("..\u{301}", "../\u{301}/.."), ("a\u{FF0F}..\u{FF0F}b", "..\u{2215}.."),
        ("/\u{301}etc", "\\\u{301}.."),
    ])
    func climbing(name: String, folder: String) throws {
        let layout = try Layout()
        defer { layout.remove() }
        let before = try layout.outsideSnapshot()
        let store = ReceivedFileStore(directory: layout.inbox)
        let url = try receive(store, id: 1, name: name, folder: folder, content: Data("hi".utf8))
        let resolved = try #require(realpath(url.path, nil).map { String(cString: $0) })
        let inbox = try #require(realpath(layout.inbox.path, nil).map { String(cString: $0) })
        #expect(resolved.utf8.starts(with: (inbox + "/").utf8), "\(resolved)")
        #expect(try layout.outsideSnapshot() == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.root.path).sorted() == ["inbox", "outside"])
    }

    @Test("A symbolic link planted as the final name fails the file and its target is untouched", .timeLimit(.minutes(5)))
    func symlinkAsFinalName() throws {
        let layout = try Layout()
        defer { layout.remove() }
        try layout.link("report.txt", to: layout.outside.appendingPathComponent("target"))
        try layout.link("dangling.txt", to: layout.outside.appendingPathComponent("new-file"))
        let store = ReceivedFileStore(directory: layout.inbox)
        #expect(throws: NearbyError.self) { try receive(store, id: 1, name: "report.txt", folder: "", content: Data("evil".utf8)) }
        #expect(throws: NearbyError.self) { try receive(store, id: 2, name: "dangling.txt", folder: "", content: Data("evil".utf8)) }
        #expect(try layout.outsideSnapshot() == ["target": Data("precious".utf8)])
        #expect(try layout.filesInInbox() == ["dangling.txt", "report.txt"])
    }

    @Test("A symbolic link planted as a parent folder fails the file and writes nothing through it", .timeLimit(.minutes(5)))
    func symlinkAsFolder() throws {
        let layout = try Layout()
        defer { layout.remove() }
        try layout.link("photos", to: layout.outside)
        let store = ReceivedFileStore(directory: layout.inbox)
        #expect(throws: NearbyError.self) { try receive(store, id: 1, name: "x", folder: "photos", content: Data("evil".utf8)) }
        #expect(throws: NearbyError.self) { try receive(store, id: 2, name: "x", folder: "photos/deeper", content: Data("e".utf8)) }
        #expect(try layout.outsideSnapshot() == ["target": Data("precious".utf8)])
        // A real folder of the same shape still works.
        let url = try receive(store, id: 3, name: "x", folder: "albums/2026", content: Data("ok".utf8))
        #expect(try Data(contentsOf: url) == Data("ok".utf8))
    }

    @Test("A symbolic link planted as the temporary name fails the file and its target is untouched", .timeLimit(.minutes(5)))
    func symlinkAsTemporaryName() throws {
        let layout = try Layout()
        defer { layout.remove() }
        try layout.link(".nearby-planted.partial", to: layout.outside.appendingPathComponent("target"))
        try layout.link(".nearby-dangling.partial", to: layout.outside.appendingPathComponent("new-file"))
        for planted in [".nearby-planted.partial", ".nearby-dangling.partial"] {
            let store = ReceivedFileStore(directory: layout.inbox, temporaryName: { planted })
            #expect(throws: NearbyError.self) { try receive(store, id: 1, name: "x", folder: "", content: Data("evil".utf8)) }
        }
        #expect(try layout.outsideSnapshot() == ["target": Data("precious".utf8)])
        #expect(try layout.filesInInbox() == [".nearby-dangling.partial", ".nearby-planted.partial"])
    }

    @Test("The receive directory itself may be a symbolic link (the user's choice)", .timeLimit(.minutes(5)))
    func receiveDirectoryBehindLink() throws {
        let layout = try Layout()
        defer { layout.remove() }
        let alias = layout.root.appendingPathComponent("alias")
        try FileManager.default.createSymbolicLink(atPath: alias.path, withDestinationPath: layout.inbox.path)
        let store = ReceivedFileStore(directory: alias)
        let url = try receive(store, id: 1, name: "a.txt", folder: "sub", content: Data("ok".utf8))
        #expect(try Data(contentsOf: url) == Data("ok".utf8))
        #expect(try layout.filesInInbox() == ["sub", "sub/a.txt"])
    }

    @Test("Existing names get a suffix that keeps a 255-byte name within 255 bytes", .timeLimit(.minutes(5)))
    func suffixOnLongName() throws {
        let layout = try Layout()
        defer { layout.remove() }
        let store = ReceivedFileStore(directory: layout.inbox)
        let name = String(repeating: "\u{E9}", count: 124) + ".txt"  // 252 bytes
        let first = try receive(store, id: 1, name: name, folder: "", content: Data("1".utf8))
        let second = try receive(store, id: 2, name: name, folder: "", content: Data("2".utf8))
        #expect(first.lastPathComponent == name)
        #expect(second.lastPathComponent != name && second.lastPathComponent.utf8.count <= 255)
        #expect(second.lastPathComponent.hasSuffix(" (1).txt"))
    }

    /// Open descriptors of this process.
    private func openDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
    }

    @Test("Failing transfers leak no file descriptors", .timeLimit(.minutes(5)))
    func noDescriptorLeaks() throws {
        let layout = try Layout()
        defer { layout.remove() }
        try layout.link("trap", to: layout.outside.appendingPathComponent("target"))
        try layout.link("folder-trap", to: layout.outside)
        try layout.link(".nearby-trap.partial", to: layout.outside.appendingPathComponent("target"))
        let store = ReceivedFileStore(directory: layout.inbox)
        let trapped = ReceivedFileStore(directory: layout.inbox, temporaryName: { ".nearby-trap.partial" })
        let full = ReceivedFileStore(directory: layout.inbox, minimumFreeSpace: Int64.max / 2)
        let rounds = 100
        let before = try openDescriptors()
        for round in 0..<rounds {
            let id = PayloadID(round * 10)
            #expect(throws: NearbyError.self) { try receive(store, id: id + 1, name: "trap", folder: "", content: Data("e".utf8)) }
            #expect(throws: NearbyError.self) { try receive(store, id: id + 2, name: "x", folder: "folder-trap/a", content: Data("e".utf8)) }
            #expect(throws: NearbyError.self) { try receive(trapped, id: id + 3, name: "x", folder: "", content: Data("e".utf8)) }
            #expect(throws: NearbyError.self) { try receive(full, id: id + 4, name: "x", folder: "", content: Data("e".utf8)) }
            // Wrong size at the end, and a discarded file.
            try store.begin(id + 5, fileName: "short", parentFolder: "s", totalSize: 10)
            try store.write(id + 5, Data("abc".utf8))
            #expect(throws: NearbyError.self) { _ = try store.finish(id + 5, expectedSize: 10) }
            try store.begin(id + 6, fileName: "dropped", parentFolder: "d/e", totalSize: -1)
            try store.write(id + 6, Data("abc".utf8))
            store.discard(id + 6)
        }
        let after = try openDescriptors()
        // Other tests run in parallel and open descriptors too; a leak would add at least `rounds` (×5 paths).
        #expect(after - before < rounds / 2, "\(before) descriptors before, \(after) after")
        #expect(try layout.outsideSnapshot() == ["target": Data("precious".utf8)])
        #expect(try !layout.filesInInbox().contains { $0.hasSuffix(".partial") && !$0.hasSuffix("trap.partial") })
    }

    @Test("Free space: a known size that would cross the floor fails at begin; an unknown size fails at write", .timeLimit(.minutes(5)))
    func freeSpaceFloor() throws {
        let layout = try Layout()
        defer { layout.remove() }
        // A file system with 1,000 bytes above the floor, that shrinks as bytes are written.
        let written = LockedValue<Int64>(0)
        let store = ReceivedFileStore(
            directory: layout.inbox, minimumFreeSpace: 5_000,
            availableSpace: { _ in 6_000 - written.withLock { $0 } })
        #expect(throws: NearbyError.self) { try store.begin(1, fileName: "a", parentFolder: "", totalSize: 1_001) }
        try store.begin(2, fileName: "b", parentFolder: "", totalSize: 1_000)
        store.discard(2)
        try store.begin(3, fileName: "c", parentFolder: "", totalSize: -1)
        try store.write(3, Data(count: 600))
        written.withLock { $0 += 600 }
        #expect(throws: NearbyError.self) { try store.write(3, Data(count: 401)) }
        try store.write(3, Data(count: 400))
        store.discard(3)
        #expect(try layout.filesInInbox() == [])
        // A floor already crossed refuses even a file of unknown size at its header.
        let full = ReceivedFileStore(directory: layout.inbox, minimumFreeSpace: Int64.max / 2)
        #expect(throws: NearbyError.self) { try full.begin(4, fileName: "d", parentFolder: "", totalSize: -1) }
        #expect(try layout.filesInInbox() == [])
    }

    @Test("Stale temporary files of dead processes are removed, nothing else is, and links are not followed", .timeLimit(.minutes(5)))
    func staleTemporaryFiles() throws {
        let layout = try Layout()
        defer { layout.remove() }
        let dead = Process()
        dead.executableURL = URL(fileURLWithPath: "/bin/true")
        try dead.run()
        dead.waitUntilExit()
        let deadPID = dead.processIdentifier
        let manager = FileManager.default
        try manager.createDirectory(at: layout.inbox.appendingPathComponent("sub/deeper"), withIntermediateDirectories: true)
        let stale = [".nearby-12.partial", ".nearby-\(deadPID)-3.partial", "sub/deeper/.nearby-\(deadPID)-4.partial"]
        let kept = [
            ".nearby-\(getpid())-3.partial", ".nearby-1-3.partial",  // this process and init: alive
            "keep.txt", ".nearby-x.partial", "sub/.nearby-12.partial.txt", "sub/nearby-12.partial",
        ]
        for name in stale + kept {
            try Data("x".utf8).write(to: layout.inbox.appendingPathComponent(name))
        }
        try Data("x".utf8).write(to: layout.outside.appendingPathComponent(".nearby-13.partial"))
        try layout.link("linked-folder", to: layout.outside)
        try layout.link(".nearby-14.partial", to: layout.outside.appendingPathComponent("target"))
        #expect(PartialFiles.removeStale(in: layout.inbox) == stale.count)
        let remaining = Set(try layout.filesInInbox())
        for name in stale { #expect(!remaining.contains(name), "\(name)") }
        for name in kept + ["linked-folder", ".nearby-14.partial"] { #expect(remaining.contains(name), "\(name)") }
        #expect(try layout.outsideSnapshot() == [".nearby-13.partial": Data("x".utf8), "target": Data("precious".utf8)])
    }
}
