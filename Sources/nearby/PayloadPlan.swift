import Foundation
import NearbyConnections
import NearbyCore

#if canImport(Glibc)
import Glibc
#endif

/// The BYTES and FILE payloads of `--bytes`, `--file` and the paths of `nearby send PATH…`, digested once, and how
/// to send them to one peer: in order, each awaited, with a `payload_sent` line (carrying the peer's `endpoint_id`)
/// when it completes. Several peers are served by running ``send(to:manager:session:output:)`` once per peer,
/// concurrently.
///
/// A directory becomes one FILE payload per regular file under it, named with its path relative to the
/// directory's parent (`photos/2024/a.jpg`: `parent_folder` `photos/2024`, as Google's file payloads carry it), in
/// sorted order; symbolic links and other special files under it are skipped (a warning says so).
struct PayloadPlan: Sendable {
    struct Item: Sendable {
        enum Content: Sendable {
            case bytes(Data)
            case file(URL, name: String)
        }

        var content: Content
        var size: Int64
        var sha256: String

        var type: String {
            if case .bytes = content { return "bytes" }
            return "file"
        }

        /// The name a person reads: the file's name with its folders, or `message`.
        var name: String {
            if case .file(_, let name) = content { return name }
            return "message"
        }
    }

    let items: [Item]

    var isEmpty: Bool { items.isEmpty }

    /// Digests the payloads (files are read once here, not once per peer).
    /// - Throws: `CLIFailure` naming a path that cannot be read.
    init(bytes: [String], files: [String]) throws {
        var items: [Item] = bytes.map { text in
            let data = Data(text.utf8)
            return Item(content: .bytes(data), size: Int64(data.count), sha256: Digests.sha256(data))
        }
        for (url, name) in try Self.expand(files) {
            let (digest, size): (String, Int64)
            do {
                (digest, size) = try Digests.sha256(fileAt: url)
            } catch {
                throw CLIFailure("cannot read \(ErrorText.describe(error, path: url.path))")
            }
            items.append(Item(content: .file(url, name: name), size: size, sha256: digest))
        }
        self.items = items
    }

    /// Every file to send for `paths`, with the name the peer sees: a file as its last path component, a directory
    /// as the regular files under it (see the type's comment).
    static func expand(_ paths: [String]) throws -> [(URL, String)] {
        var result: [(URL, String)] = []
        for path in paths {
            let url = URL(fileURLWithPath: path).standardizedFileURL
            guard isDirectory(url.path) else {
                result.append((url, url.lastPathComponent))
                continue
            }
            let base = url.lastPathComponent == "/" ? "root" : url.lastPathComponent
            var skipped: [String] = []
            for relative in try walk(url) {
                let file = url.appendingPathComponent(relative)
                if isRegularFile(file.path) {
                    result.append((file, base + "/" + relative))
                } else {
                    skipped.append(relative)
                }
            }
            if !skipped.isEmpty {
                EventOutput.warn(
                    "not sending \(skipped.count) symbolic link(s) or special file(s) under \(path): "
                        + skipped.prefix(3).joined(separator: ", ") + (skipped.count > 3 ? ", …" : ""))
            }
        }
        return result
    }

    /// The relative paths of the non-directories under `directory`, sorted; symbolic links are not followed.
    private static func walk(_ directory: URL) throws -> [String] {
        var found: [String] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let folder = relative.isEmpty ? directory : directory.appendingPathComponent(relative)
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            } catch {
                throw CLIFailure("cannot read the directory \(ErrorText.describe(error, path: folder.path))")
            }
            for name in names {
                let child = relative.isEmpty ? name : relative + "/" + name
                if isDirectory(directory.appendingPathComponent(child).path, followingLinks: false) {
                    pending.append(child)
                } else {
                    found.append(child)
                }
            }
        }
        return found.sorted()
    }

    static func isDirectory(_ path: String, followingLinks: Bool = true) -> Bool {
        var info = stat()
        let status = followingLinks ? stat(path, &info) : lstat(path, &info)
        return status == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    private static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// Sends every payload to `peer`, one after another, each awaited.
    /// - Throws: `CLIFailure` when a payload cannot be started or does not end in success (with the receiver's
    ///   reason when it gave one).
    func send(to peer: String, manager: ConnectionManager, session: PeerSession, output: EventOutput) async throws {
        for item in items {
            let id = PayloadID.unique()
            output.name(id, item.name)
            await session.registerOutgoing(id)
            do {
                switch item.content {
                case .bytes(let data):
                    try await manager.send(data, to: peer, id: id)
                case .file(let url, let name):
                    try await manager.sendResource(at: url, withName: name, to: peer, id: id)
                }
            } catch let error as NearbyError {
                throw CLIFailure("cannot send \(item.name) to \(await session.peer(peer)): \(error.message)")
            }
            let result = await session.waitForOutgoing(id)
            guard result == .success else {
                throw await Self.failure(item.name, id: id, to: peer, result: result, session: session)
            }
            let (_, seconds) = output.finishedTransfer(id)
            output.event(
                "payload_sent",
                PayloadSentEvent(
                    payloadID: String(id), type: item.type, size: item.size, sha256: item.sha256, endpointID: peer,
                    name: item.type == "file" ? item.name : nil),
                human: "sent \(item.name) to \(await session.peer(peer)): "
                    + "\(EventOutput.summary(size: item.size, seconds: seconds)), sha256 \(item.sha256)")
        }
    }

    /// The failure of an outgoing payload, in words: canceled, or failed with the receiver's reason when known.
    static func failure(
        _ name: String, id: PayloadID, to peer: String, result: TransferUpdate, session: PeerSession
    ) async -> CLIFailure {
        let who = await session.peer(peer)
        if result == .canceled { return CLIFailure("sending \(name) to \(who) was canceled") }
        if let reason = await session.failureReason(id) { return CLIFailure("sending \(name) to \(who) failed: \(reason)") }
        return CLIFailure("sending \(name) to \(who) failed (the connection broke or the receiver gave no reason)")
    }
}
