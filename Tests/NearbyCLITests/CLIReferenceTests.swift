import ArgumentParser
import Foundation
import Testing

@testable import nearby

/// docs/CLI.md's Reference is the tool's own help: regenerate it with scripts/cli-reference.sh when this fails.
@Suite(.timeLimit(.minutes(1)))
struct CLIReferenceTests {
    /// Every command below `command`, depth first in declaration order, with its path of names.
    static func commands(_ command: any ParsableCommand.Type, path: [String] = []) -> [([String], any ParsableCommand.Type)] {
        [(path, command)]
            + command.configuration.subcommands.flatMap { sub in
                commands(sub, path: path + [sub.configuration.commandName ?? "\(sub)"])
            }
    }

    /// The generated part of docs/CLI.md as scripts/cli-reference.sh writes it.
    static func generated() -> String {
        let sections = commands(NearbyCommand.self).map { path, command in
            let help = path.isEmpty
                ? NearbyCommand.helpMessage(columns: 100)
                : NearbyCommand.helpMessage(for: command, columns: 100)
            let text = help.trimmingCharacters(in: .newlines).split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
                .joined(separator: "\n")
            return "### " + (["nearby"] + path).joined(separator: " ") + "\n\n```text\n" + text + "\n```\n"
        }
        return "\n" + sections.joined(separator: "\n") + "\n"
    }

    @Test("docs/CLI.md shows every command's --help as it is")
    func referenceMatchesHelp() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/CLI.md"), encoding: .utf8)
        let begin = "<!-- BEGIN GENERATED HELP (scripts/cli-reference.sh) -->\n"
        let end = "<!-- END GENERATED HELP -->"
        let start = try #require(doc.range(of: begin))
        let stop = try #require(doc.range(of: end))
        let inDoc = String(doc[start.upperBound..<stop.lowerBound])
        let expected = Self.generated()
        #expect(inDoc == expected, "docs/CLI.md is out of date: run scripts/cli-reference.sh")
    }

    @Test("help shows only options a command uses, and no default twice")
    func noUnusedOptionsOrDoubledDefaults() {
        let discover = NearbyCommand.helpMessage(for: DiscoverCommand.self, columns: 200)
        for unused in ["--max-receive-bytes", "--min-free-space", "--no-upgrade", "--receive-dir", "--quiet"] {
            #expect(!discover.contains(unused), "discover --help lists \(unused)")
        }
        let publish = NearbyCommand.helpMessage(for: PublishCommand.self, columns: 200)
        #expect(!publish.contains("--strategy"))
        #expect(!NearbyCommand.helpMessage(for: SendCommand.self, columns: 200).contains("--accept"))
        for (_, command) in Self.commands(NearbyCommand.self) {
            let help = NearbyCommand.helpMessage(for: command, columns: 300)
            for line in help.split(separator: "\n") {
                let defaults = line.components(separatedBy: "(default").count - 1
                #expect(defaults <= 1, "\(line)")
            }
            #expect(!help.contains("(default: )"), "\(help)")
        }
    }
}
