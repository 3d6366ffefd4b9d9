import Foundation
import NearbyCore
import NearbyMessages
import NearbyTesting
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyMessagesService

#if canImport(Glibc)
import Glibc
#endif

/// Another local user against the service's socket (issue 22, defect 4): run with a second uid (`nobody`, through
/// `setpriv`), so these need root; skipped otherwise.
@Suite("Message service against another local user", .enabled(if: geteuid() == 0), .timeLimit(.minutes(2)))
struct ServiceLocalUserTests {
    static let nobody: uid_t = 65534

    /// Runs `/usr/bin/python3 -c script arguments…` as `nobody`; returns the process (its output in `output`).
    static func asNobody(_ script: String, _ arguments: [String], output: URL) throws -> SpawnedProcess {
        try SpawnedProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", "/usr/bin/python3", "-c", script] + arguments,
            outputPath: output.path)
    }

    /// A directory under /tmp that `nobody` can enter.
    static func sharedDirectory() throws -> URL {
        let url = URL(fileURLWithPath: "/tmp/nsvc-u-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        chmod(url.path, 0o755)
        return url
    }

    @Test("a socket directory another user made first (mode 0777), one of ours writable by others, or a symbolic link: bind refuses")
    func squattedDirectory() async throws {
        let base = try Self.sharedDirectory()
        defer { try? FileManager.default.removeItem(at: base) }
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil)

        // Another user made the directory first, as /tmp/nearby-UID could be.
        let squatted = base.appendingPathComponent("nearby-0")
        try FileManager.default.createDirectory(at: squatted, withIntermediateDirectories: false)
        chown(squatted.path, Self.nobody, Self.nobody)
        chmod(squatted.path, 0o777)
        let refused = await #expect(throws: NearbyError.self) {
            _ = try await MessageServiceServer.bind(socketPath: squatted.appendingPathComponent("service.sock"), service: service)
        }
        #expect(refused?.message.contains("belongs to uid 65534") == true, "\(String(describing: refused))")
        #expect(!FileManager.default.fileExists(atPath: squatted.appendingPathComponent("service.sock").path))

        let open = base.appendingPathComponent("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: false)
        chmod(open.path, 0o777)
        let writable = await #expect(throws: NearbyError.self) {
            _ = try await MessageServiceServer.bind(socketPath: open.appendingPathComponent("s.sock"), service: service)
        }
        #expect(writable?.message.contains("writable by other users") == true, "\(String(describing: writable))")

        let link = base.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: open)
        let linked = await #expect(throws: NearbyError.self) {
            _ = try await MessageServiceServer.bind(socketPath: link.appendingPathComponent("s.sock"), service: service)
        }
        #expect(linked?.message.contains("symbolic link") == true, "\(String(describing: linked))")

        // A missing directory is made 0700 and used.
        let fresh = base.appendingPathComponent("fresh/nearby")
        let server = try await MessageServiceServer.bind(socketPath: fresh.appendingPathComponent("s.sock"), service: service)
        var status = stat()
        #expect(stat(fresh.path, &status) == 0 && status.st_mode & 0o777 == 0o700)
        await server.close()
        await service.shutdown()
    }

    @Test("a connection from another user is closed with an error line and never reaches the service, whatever the socket's mode")
    func otherUserIsRefused() async throws {
        let base = try Self.sharedDirectory()
        defer { try? FileManager.default.removeItem(at: base) }
        let socket = base.appendingPathComponent("s.sock")
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil)
        let server = try await MessageServiceServer.bind(socketPath: socket, service: service)
        let serving = Task { await server.run() }
        let me = await service.connect { _ in }
        let published = await service.handle(
            ServiceRequest(id: 1, op: .publish, serviceID: "svc", contentHex: Hex.encode(Array("secret".utf8))), from: me)
        #expect(published.ok)
        chmod(socket.path, 0o666)  // as if the mode were wrong: the kernel's credentials still decide
        let output = base.appendingPathComponent("nobody.out")
        let client = try Self.asNobody(
            """
            import socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            s.sendall(b'{"id":7,"op":"list"}\\n')
            s.settimeout(20)
            data = b''
            while True:
                # The service closes right after its error line; when it closes before reading our request, Linux
                # ends the stream with ECONNRESET after the queued bytes instead of a plain end of file.
                try:
                    chunk = s.recv(65536)
                except ConnectionResetError:
                    break
                if not chunk: break
                data += chunk
            sys.stdout.write(data.decode())
            sys.stdout.write("\\nEOF\\n")
            """, [socket.path], output: output)
        let text = try await eventually(within: 30, "the other user's client to finish") { () -> String? in
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            return text.contains("EOF") ? text : nil
        }
        client.stopBlocking(signal: SIGKILL)
        #expect(text.contains("authenticationFailed") && text.contains("only its own user"), "\(text)")
        #expect(!text.contains(Hex.encode(Array("secret".utf8))), "\(text)")
        await server.close()
        await serving.value
        await service.shutdown()
    }

    @Test("a client refuses a socket another user listens on: nothing is sent to it")
    func clientRefusesOtherUsersSocket() async throws {
        let base = try Self.sharedDirectory()
        defer { try? FileManager.default.removeItem(at: base) }
        let directory = base.appendingPathComponent("squat")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        chown(directory.path, Self.nobody, Self.nobody)
        let socket = directory.appendingPathComponent("service.sock")
        let output = base.appendingPathComponent("squatter.out")
        let squatter = try Self.asNobody(
            """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(4)
            print("LISTENING", flush=True)
            while True:
                c, _ = s.accept()
                c.settimeout(5)
                try:
                    data = c.recv(65536)
                except Exception:
                    data = b''
                print("RECEIVED", len(data), data[:200], flush=True)
                c.close()
            """, [socket.path], output: output)
        defer { squatter.stopBlocking(signal: SIGKILL) }
        _ = try await eventually(within: 20, "the squatter to listen") { () -> Bool? in
            ((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("LISTENING") ? true : nil
        }
        let refused = await #expect(throws: NearbyError.self) {
            let manager = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: socket)
            _ = try await manager.publish(Message(text: "secret"))
        }
        #expect(refused?.code == .authenticationFailed, "\(String(describing: refused))")
        #expect(refused?.message.contains("uid 65534") == true)
        // The squatter saw a connection (and its close) but no byte of a request.
        let seen = try await eventually(within: 20, "the squatter to see the connection end") { () -> String? in
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            return text.contains("RECEIVED") ? text : nil
        }
        #expect(seen.contains("RECEIVED 0 "), "\(seen)")
        #expect(!seen.contains("secret") && !seen.contains("publish"))
    }
}
