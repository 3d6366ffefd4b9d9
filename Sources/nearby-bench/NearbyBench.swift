import ArgumentParser
import Foundation
import NearbyConnections
import NearbyCore
import NearbySecurity

@main
struct NearbyBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nearby-bench",
        abstract: "Measure swift-nearby on this machine (loopback only) against baselines measured in the same run.",
        usage: "nearby-bench [--json] [--quick]",
        discussion: "--json prints one JSON object per line per figure; --quick uses small sizes. See Benchmarks/README.md.",
        subcommands: [
            RunCommand.self, ReceiverCommand.self, BLEL2CAPCommand.self, BLEL2CAPSendCommand.self, BLEUpgradeCommand.self, BLESocketPathsCommand.self,
        ],
        defaultSubcommand: RunCommand.self)
}

/// The hidden receiving side, run by the benchmark as a separate process.
struct ReceiverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receiver", abstract: "Internal: the receiving process.", shouldDisplay: false)

    @Option(help: "Where received files go (they are deleted once complete).")
    var dir: String

    @Option(help: "The strategy to advertise with (cluster, star or point-to-point).")
    var strategy: String = Strategy.cluster.rawValue

    func run() async throws {
        guard let strategy = Strategy(rawValue: strategy) else { throw ValidationError("unknown strategy \(strategy)") }
        try await Receiver.run(directory: URL(fileURLWithPath: dir), strategy: strategy)
    }
}

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run every benchmark (the default).")

    @Flag(help: "Print one JSON object per line per figure.")
    var json = false

    @Flag(help: "Small sizes: finishes in well under a minute.")
    var quick = false

    @Option(help: ArgumentHelp("Run one group only: throughput, transfer (no connect latency), file (the file transfer alone), crypto (the cipher and sealing stage), star, resume, idle or discovery.", visibility: .hidden))
    var only: String?

    @Option(help: ArgumentHelp("The file transfer's size in MiB (for profilers).", visibility: .hidden))
    var fileMib: Int?

    func run() async throws {
        signal(SIGPIPE, SIG_IGN)
        var sizes = quick ? Sizes.quick : Sizes.full
        if let fileMib { sizes.fileBytes = fileMib << 20 }
        let report = Report(json: json)
        defer { try? FileManager.default.removeItem(at: benchReceiveDirectory) }
        try await Benchmarks(sizes: sizes, report: report).runAll(only: only)
    }
}

struct Sizes {
    var fileBytes: Int
    var bytesPayloads: Int
    var connections: Int
    var idleConnections: Int
    var discoveryRuns: Int
    var cryptoBytes: Int
    /// Spokes connected at once to one star hub (`star_connect_all`).
    var starSpokes: Int
    /// How many of them send a file at once, one `star_aggregate_throughput` line each.
    var starFanIns: [Int]
    /// Bytes sent in total per fan-in (split evenly over the spokes).
    var starTotalBytes: Int

    static let full = Sizes(
        fileBytes: 1 << 30, bytesPayloads: 200, connections: 500, idleConnections: 100, discoveryRuns: 20,
        cryptoBytes: 512 << 20, starSpokes: 100, starFanIns: [10, 100], starTotalBytes: 800 << 20)
    static let quick = Sizes(
        fileBytes: 64 << 20, bytesPayloads: 10, connections: 20, idleConnections: 10, discoveryRuns: 3,
        cryptoBytes: 64 << 20, starSpokes: 20, starFanIns: [10], starTotalBytes: 40 << 20)
}

/// One line of the report.
struct Figure {
    var metric: String
    var value: Double?
    var unit: String
    var baseline: String?
    var baselineValue: Double?
    var lowerIsBetter = false
    var note: [(String, String)] = []

    var ratio: Double? {
        guard let value, let baselineValue, value > 0, baselineValue > 0 else { return nil }
        return lowerIsBetter ? baselineValue / value : value / baselineValue
    }
}

final class Report: @unchecked Sendable {
    let json: Bool
    private var headerPrinted = false

    init(json: Bool) { self.json = json }

    func emit(_ figure: Figure) {
        if json {
            var fields = ["\"metric\":\(quote(figure.metric))", "\"value\":\(number(figure.value))", "\"unit\":\(quote(figure.unit))"]
            fields.append("\"baseline\":\(figure.baseline.map(quote) ?? "null")")
            fields.append("\"baseline_value\":\(number(figure.baselineValue))")
            fields.append("\"ratio\":\(number(figure.ratio))")
            if figure.lowerIsBetter { fields.append("\"lower_is_better\":true") }
            for (key, text) in figure.note { fields.append("\(quote(key)):\(quote(text))") }
            print("{" + fields.joined(separator: ",") + "}")
        } else {
            if !headerPrinted {
                headerPrinted = true
                print(pad("metric", 28) + pad("value", 14) + pad("unit", 8) + pad("baseline", 20) + pad("baseline value", 16) + "ratio")
                print(String(repeating: "-", count: 92))
            }
            let note = figure.note.map { "\($0.0): \($0.1)" }.joined(separator: "; ")
            var line = pad(figure.metric, 28) + pad(text(figure.value), 14) + pad(figure.unit, 8)
            line += pad(figure.baseline ?? "-", 20) + pad(text(figure.baselineValue), 16) + text(figure.ratio)
            if figure.lowerIsBetter { line += " (lower is better)" }
            if !note.isEmpty { line += "  [\(note)]" }
            print(line)
        }
        fflush(nil)
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    private func rounded(_ value: Double) -> Double {
        let magnitude = abs(value)
        let scale: Double = magnitude >= 100 ? 10 : magnitude >= 1 ? 1000 : 100_000
        return (value * scale).rounded() / scale
    }

    private func number(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "null" }
        return "\(rounded(value))"
    }

    private func text(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "-" }
        return "\(rounded(value))"
    }

    private func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }
}

/// Reports an error on stderr.
func warn(_ text: String) {
    FileHandle.standardError.write(Data("nearby-bench: \(text)\n".utf8))
}
