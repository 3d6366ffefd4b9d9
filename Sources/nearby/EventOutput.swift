import Foundation
import NearbyConnections
#if canImport(Glibc)
import Glibc
#endif

/// Writes the tool's events: one JSON object per line with `--json`, readable lines otherwise, and a progress bar
/// on a terminal.
final class EventOutput: @unchecked Sendable {
    let json: Bool
    private let isTerminal = isatty(STDOUT_FILENO) == 1
    private let lock = NSLock()
    private var progressShown = false
    private var lastProgress: [Int64: (time: ContinuousClock.Instant, percent: Int)] = [:]

    init(json: Bool) {
        self.json = json
    }

    /// Prints an event; `human` is its readable form. Both forms escape control characters and bidirectional
    /// overrides (peers choose names, IDs and messages), so every event stays one line.
    func event(_ name: String, _ fields: KeyValuePairs<String, Any>, human: String) {
        lock.withLock {
            if json {
                var object: [String: Any] = ["event": name]
                for (key, value) in fields { object[key] = value }
                write(Self.encode(object) + "\n")
            } else {
                clearProgress()
                write(PeerText.escapedForTerminal(human) + "\n")
            }
        }
    }

    /// Prints a transfer update: always in JSON mode (at most every 100 ms per payload while in progress), as a
    /// progress bar on a terminal, otherwise only its final state.
    func transfer(endpointID: String, payloadID: Int64, status: String, bytes: Int64, total: Int64) {
        lock.withLock {
            let now = ContinuousClock.now
            let final = status != "in_progress"
            if !final, let last = lastProgress[payloadID], now - last.time < .milliseconds(100) {
                return
            }
            lastProgress[payloadID] = (now, 0)
            if final { lastProgress[payloadID] = nil }
            if json {
                let object: [String: Any] = [
                    "event": "transfer_update", "endpoint_id": endpointID, "payload_id": payloadID, "status": status,
                    "bytes": bytes, "total": total,
                ]
                write(Self.encode(object) + "\n")
            } else if isTerminal && !final {
                write("\r" + Self.bar(bytes: bytes, total: total) + " payload \(payloadID)")
                progressShown = true
            } else if final {
                clearProgress()
                write(PeerText.escapedForTerminal("payload \(payloadID) from/to \(endpointID): \(status) (\(Self.size(bytes)))") + "\n")
            }
        }
    }

    private func clearProgress() {
        if progressShown {
            write("\r\u{1B}[2K")
            progressShown = false
        }
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// Compact JSON, with control characters and bidirectional overrides as `\uXXXX` escapes.
    static func encode(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]),
            let text = String(data: data, encoding: .utf8)
        else { return "{}" }
        return PeerText.escapingUnsafeScalars(inCompactJSON: text)
    }

    /// Writes `nearby: MESSAGE` to stderr, escaped like an event (messages may quote what a peer sent).
    static func warn(_ message: String) {
        FileHandle.standardError.write(Data((PeerText.escapedForTerminal("nearby: " + message) + "\n").utf8))
    }

    static func bar(bytes: Int64, total: Int64) -> String {
        guard total > 0 else { return "[streaming] \(size(bytes))" }
        let fraction = min(1, Double(bytes) / Double(total))
        let width = 30
        let filled = Int(fraction * Double(width))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            + String(format: "%3d%% %@ / %@", Int(fraction * 100), size(bytes), size(total))
    }

    static func size(_ bytes: Int64) -> String {
        if bytes >= 1_000_000 { return String(format: "%.1f MB", Double(bytes) / 1_000_000) }
        if bytes >= 1_000 { return String(format: "%.1f kB", Double(bytes) / 1_000) }
        return "\(bytes) B"
    }
}
