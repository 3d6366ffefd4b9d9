import Foundation
import NearbyConnections
import NearbyCore
#if canImport(Glibc)
import Glibc
#endif

/// Writes the tool's events: one JSON object per line with `--json`, readable lines otherwise, and a progress bar
/// on a terminal.
final class EventOutput: Sendable {
    let json: Bool
    private let isTerminal = isatty(STDOUT_FILENO) == 1
    /// The progress bar's state; its lock also keeps lines from different tasks whole.
    private let progress = LockedValue(Progress())

    private struct Progress {
        var shown = false
        var last: [Int64: ContinuousClock.Instant] = [:]
    }

    init(json: Bool) {
        self.json = json
    }

    /// Prints an event; `human` is its readable form. Both forms escape control characters and bidirectional
    /// overrides (peers choose names, IDs and messages), so every event stays one line.
    func event(_ name: String, _ fields: some Encodable, human: String) {
        progress.withLock { progress in
            if json {
                write(Self.encode(event: name, fields) + "\n")
            } else {
                clearProgress(&progress)
                write(PeerText.escapedForTerminal(human) + "\n")
            }
        }
    }

    /// Prints a transfer update: always in JSON mode (at most every 100 ms per payload while in progress), as a
    /// progress bar on a terminal, otherwise only its final state.
    func transfer(endpointID: String, payloadID: Int64, status: String, bytes: Int64, total: Int64) {
        progress.withLock { progress in
            let now = ContinuousClock.now
            let final = status != "in_progress"
            if !final, let last = progress.last[payloadID], now - last < .milliseconds(100) {
                return
            }
            progress.last[payloadID] = final ? nil : now
            if json {
                let update = TransferUpdateEvent(
                    endpointID: endpointID, payloadID: payloadID, status: status, bytes: bytes, total: total)
                write(Self.encode(event: "transfer_update", update) + "\n")
            } else if isTerminal && !final {
                write("\r" + Self.bar(bytes: bytes, total: total) + " payload \(payloadID)")
                progress.shown = true
            } else if final {
                clearProgress(&progress)
                write(PeerText.escapedForTerminal("payload \(payloadID) from/to \(endpointID): \(status) (\(Self.size(bytes)))") + "\n")
            }
        }
    }

    private func clearProgress(_ progress: inout Progress) {
        if progress.shown {
            write("\r\u{1B}[2K")
            progress.shown = false
        }
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// Compact JSON of `fields` with `"event": name` added, sorted keys in snake_case, and control characters and
    /// bidirectional overrides as `\uXXXX` escapes.
    static func encode(event name: String, _ fields: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        guard let data = try? encoder.encode(NamedEvent(event: name, fields: fields)),
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

/// An event's fields with its name as one more key: both write into the same JSON object.
private struct NamedEvent<Fields: Encodable>: Encodable {
    let event: String
    let fields: Fields

    private enum CodingKeys: CodingKey { case event }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event, forKey: .event)
        try fields.encode(to: encoder)
    }
}
