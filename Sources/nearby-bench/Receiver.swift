import Foundation
import NearbyConnections
import NearbyCore

/// The receiving process (`nearby-bench receiver --dir DIR`): advertises by address on 127.0.0.1 through the full
/// stack and serves the plain-TCP baseline, then prints `READY <nearby-port> <tcp-port>`.
///
/// It accepts every connection, deletes each received file once it is complete, and answers every received
/// file and every large BYTES payload with a one-byte BYTES ack. It exits when its standard input closes.
enum Receiver {
    static func run(directory: URL, strategy: Strategy = .cluster) async throws {
        signal(SIGPIPE, SIG_IGN)
        // Leave when the parent goes away (its end of our stdin closes).
        Thread.detachNewThread {
            while FileHandle.standardInput.availableData.count > 0 {}
            exit(0)
        }
        // The default limits take 100 spokes handshaking at once (maxPendingEndpoints is 128).
        let limits = ResourceLimits()
        let manager = ConnectionManager(
            serviceID: "nearby-bench", strategy: strategy,
            options: ConnectionOptions(receiveDirectory: directory, listenPort: nil, limits: limits, logger: quietLogger()))
        let subscription = manager.events
        let events = Task {
            for await event in subscription {
                switch event {
                case .connectionRequested(let id, _, _, _):
                    Task { try? await manager.accept(id) }
                case .fileReceived(let id, _, let url, _):
                    unlink(url.path)
                    _ = try? await manager.send(Data([1]), to: id)
                case .bytesReceived(let id, _, let data) where data.count >= 1024:
                    _ = try? await manager.send(Data([1]), to: id)
                default:
                    break
                }
            }
        }
        let advertiser = Advertiser(connectionManager: manager)
        let sessions = try await advertiser.startAdvertising(using: Data("bench-receiver".utf8), mediums: [.wifiLAN])
        guard let nearbyPort = sessions.compactMap(\.port).first else { throw BenchFailure("no listening port") }
        let tcpPort = try PlainTCP.serve(directory: directory)
        print("READY \(nearbyPort) \(tcpPort)")
        fflush(nil)
        await events.value
        withExtendedLifetime(advertiser) {}
    }
}

/// The parent's handle on a receiver process.
final class ReceiverProcess {
    let process = Process()
    let stdinPipe = Pipe()
    let stdoutPipe = Pipe()
    let directory: URL
    private(set) var nearbyPort = 0
    private(set) var tcpPort = 0

    var pid: Int32 { process.processIdentifier }

    /// Starts `nearby-bench receiver` advertising with `strategy` (the star figures use a `.star` hub).
    init(strategy: Strategy = .cluster) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-bench-recv-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: selfExecutable())
        process.arguments = ["receiver", "--dir", directory.path, "--strategy", strategy.rawValue]
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        try process.run()
        var line = Data()
        let deadline = now() + 30
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = stdoutPipe.fileHandleForReading.availableData
            if chunk.isEmpty || now() > deadline { throw BenchFailure("the receiver process did not start") }
            line.append(chunk)
        }
        let words = String(decoding: line, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard words.count >= 3, words[0] == "READY", let a = Int(words[1]), let b = Int(words[2]) else {
            throw BenchFailure("the receiver said: \(String(decoding: line, as: UTF8.self))")
        }
        nearbyPort = a
        tcpPort = b
    }

    /// Ends the process (ours, by its PID) and removes its directory.
    func stop() {
        try? stdinPipe.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The path of this executable (to re-run it as the receiver).
func selfExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
