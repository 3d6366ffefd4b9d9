import Foundation
import NearbyConnections
import NearbyCore

#if canImport(Glibc)
import Glibc
#endif

/// Writes the tool's events: one JSON object per line with `--json`, readable lines otherwise, and on a terminal a
/// progress line per transfer (``ProgressBoard``).
///
/// Lines are composed under a lock and written after it, in the order they were composed, by whichever caller
/// finds the writer idle (``OrderedText``): no write happens while the lock is held, and lines from different tasks
/// never mix.
final class EventOutput: Sendable {
    /// Where events go: standard output, or standard error when standard output carries data (`--stream-to -`).
    let descriptor: Int32
    let json: Bool
    /// `--quiet`: no progress lines and no "sending…"/"receiving…" lines.
    let quiet: Bool
    /// Whether progress lines are drawn (a terminal, readable output, not quiet).
    let showsProgress: Bool
    private let state: LockedValue<State>
    private let now: @Sendable () -> Double
    private let width: @Sendable () -> Int

    /// FILE and STREAM payloads of at least this size (or of unknown size) get a progress line; smaller ones and
    /// BYTES payloads do not (they are over before a line could say anything).
    static let progressThreshold: Int64 = 1 << 20

    private struct State {
        var board = ProgressBoard()
        var text = OrderedText()
        var transfers: [Int64: Transfer] = [:]
        var lastJSONUpdate: [Int64: Double] = [:]
    }

    /// What is known about a payload: its name for progress lines and when it started, for the summary. Forgotten
    /// once both its final update and its summary (``finishedTransfer(_:)``) came, in either order.
    private struct Transfer {
        var name: String
        var started: Double?
        var announced = false
        var finalSeen = false
        var summarized = false
    }

    /// The instance whose terminal lines ``warn(_:)`` must not break (the last one made).
    private static let current = LockedValue<EventOutput?>(nil)

    /// - Parameters:
    ///   - json: One JSON object per line.
    ///   - quiet: No progress.
    ///   - descriptor: Where events go (standard output unless it carries data).
    ///   - terminal: Whether `descriptor` is a terminal (tests force it); asked of the system by default.
    ///   - width: The terminal's width (tests force it); `$COLUMNS` or `TIOCGWINSZ` by default.
    ///   - now: Seconds on a monotonic clock (tests drive it).
    init(
        json: Bool, quiet: Bool = false, descriptor: Int32 = STDOUT_FILENO, terminal: Bool? = nil,
        width: (@Sendable () -> Int)? = nil, now: (@Sendable () -> Double)? = nil
    ) {
        self.json = json
        self.quiet = quiet
        self.descriptor = descriptor
        showsProgress = !json && !quiet && (terminal ?? Terminal.isTerminal(descriptor))
        self.width = width ?? { Terminal.columns(of: descriptor) }
        let start = ContinuousClock.now
        self.now = now ?? { Double((ContinuousClock.now - start) / .milliseconds(1)) / 1000 }
        state = LockedValue(State())
        Self.current.withLock { $0 = self }
    }

    /// Prints an event; `human` is its readable form. Both forms escape control characters and bidirectional
    /// overrides (peers choose names, IDs and messages), so every event stays one line.
    func event(_ name: String, _ fields: some Encodable, human: String) {
        let line = json ? Self.encode(event: name, fields) : PeerText.escapedForTerminal(human)
        emit(line + "\n")
    }

    /// Prints an event whose readable form is several lines (each escaped on its own, so the lines stay lines).
    func event(_ name: String, _ fields: some Encodable, humanLines: [String]) {
        let text = json
            ? Self.encode(event: name, fields) : humanLines.map(PeerText.escapedForTerminal).joined(separator: "\n")
        emit(text + "\n")
    }

    /// Prints a readable line (nothing in JSON mode).
    func note(_ human: String) {
        guard !json else { return }
        emit(PeerText.escapedForTerminal(human) + "\n")
    }

    private func emit(_ text: String) {
        let (now, width) = (self.now(), self.width())
        let mustWrite = state.withLock { state in
            state.text.append(descriptor, state.board.printAbove(text, now: now, width: width))
        }
        if mustWrite { writeQueued() }
    }

    /// Writes the queued text, outside the lock, until the queue is empty.
    private func writeQueued() {
        while true {
            let batch = state.withLock { $0.text.next() }
            if batch.isEmpty { return }
            for item in batch { Terminal.write(item.text, to: item.descriptor) }
        }
    }

    /// Names a payload for its progress line and summary (`photos/a.jpg`, `stream`, `message`).
    func name(_ payloadID: Int64, _ name: String) {
        state.withLock { state in
            state.transfers[payloadID, default: Transfer(name: name)].name = PeerText.escapedForTerminal(name)
        }
    }

    /// Prints a transfer update: always in JSON mode (at most every 100 ms per payload while in progress); on a
    /// terminal as a progress line (files and streams of ``progressThreshold`` bytes or more); otherwise a line when
    /// such a payload starts and, for a failure or cancellation, when it ends (success is the
    /// `payload_sent`/`payload_received` line).
    func transfer(
        endpointID: String, payloadID: Int64, kind: PayloadKind, outgoing: Bool, status: String, bytes: Int64,
        total: Int64
    ) {
        let (now, width) = (self.now(), showsProgress ? self.width() : 80)
        let final = status != "in_progress"
        let large = kind != .bytes && (total < 0 || total >= Self.progressThreshold)
        let mustWrite = state.withLock { state -> Bool in
            var transfer = state.transfers[payloadID] ?? Transfer(name: Self.defaultName(kind))
            if transfer.started == nil { transfer.started = now }
            if final { transfer.finalSeen = true }
            defer {
                let done = final && (json || status != "success" || transfer.summarized)
                state.transfers[payloadID] = done ? nil : transfer
            }
            if json {
                if !final, let last = state.lastJSONUpdate[payloadID], now - last < 0.1 { return false }
                state.lastJSONUpdate[payloadID] = final ? nil : now
                let update = TransferUpdateEvent(
                    endpointID: endpointID, payloadID: String(payloadID), status: status, bytes: bytes, total: total)
                return state.text.append(descriptor, Self.encode(event: "transfer_update", update) + "\n")
            }
            var text = ""
            if final {
                text += state.board.remove(payloadID, now: now, width: width)
                if status != "success" {
                    let line = "\(outgoing ? "sending" : "receiving") \(transfer.name) \(outgoing ? "to" : "from") "
                        + "\(PeerText.escapedForTerminal(endpointID)) \(status == "canceled" ? "was canceled" : "failed")"
                        + " after \(Quantities.size(bytes))"
                    text += state.board.printAbove(line + "\n", now: now, width: width)
                }
            } else if large && showsProgress {
                text += state.board.update(
                    payloadID, name: transfer.name, bytes: bytes, total: total, now: now, width: width) ?? ""
            } else if large && !quiet && !transfer.announced {
                let size = total >= 0 ? " (\(Quantities.size(total)))" : ""
                text += "\(outgoing ? "sending" : "receiving") \(transfer.name)\(size) "
                    + "\(outgoing ? "to" : "from") \(PeerText.escapedForTerminal(endpointID))\n"
            }
            transfer.announced = true
            return state.text.append(descriptor, text)
        }
        if mustWrite { writeQueued() }
    }

    /// The payload's name and how long it has been moving (since its first update), for a summary line.
    func finishedTransfer(_ payloadID: Int64) -> (name: String?, seconds: Double?) {
        let now = self.now()
        return state.withLock { state in
            guard var transfer = state.transfers[payloadID] else {
                // The summary came first (a received payload is reported before its final update).
                if !json { state.transfers[payloadID] = Transfer(name: "", summarized: true) }
                return (nil, nil)
            }
            transfer.summarized = true
            state.transfers[payloadID] = transfer.finalSeen ? nil : transfer
            return (transfer.name, transfer.started.map { now - $0 })
        }
    }

    /// `200.0 MB in 2.1 s (95.2 MB/s)`: a finished payload's size, time and average speed.
    static func summary(size: Int64, seconds: Double?) -> String {
        guard let seconds, seconds >= 0.05 else { return Quantities.size(size) }
        return "\(Quantities.size(size)) in \(Quantities.duration(seconds)) (\(Quantities.rate(Double(size) / seconds)))"
    }

    private static func defaultName(_ kind: PayloadKind) -> String {
        switch kind {
        case .bytes: "message"
        case .file: "file"
        case .stream: "stream"
        }
    }

    /// Writes `line` to stderr above the progress lines.
    private func warnLine(_ line: String) {
        let (now, width) = (self.now(), self.width())
        let mustWrite = state.withLock { state in
            let first = state.text.append(descriptor, state.board.takeDown())
            let second = state.text.append(STDERR_FILENO, line)
            let third = state.text.append(descriptor, state.board.putBack(now: now, width: width))
            return first || second || third
        }
        if mustWrite { writeQueued() }
    }

    /// Writes `nearby: MESSAGE` to stderr, escaped like an event (messages may quote what a peer sent); progress
    /// lines on the terminal are taken down first so the message does not land inside them.
    static func warn(_ message: String) {
        let line = PeerText.escapedForTerminal("nearby: " + message) + "\n"
        if let output = current.withLock({ $0 }), output.showsProgress {
            output.warnLine(line)
        } else {
            Terminal.write(line, to: STDERR_FILENO)
        }
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

    static func size(_ bytes: Int64) -> String { Quantities.size(bytes) }
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
