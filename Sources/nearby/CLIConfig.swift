import ArgumentParser
import Foundation
import NearbyCore

/// The optional config file: defaults for options that would otherwise be typed on every run.
///
/// `$NEARBY_CONFIG`, else `$XDG_CONFIG_HOME/nearby/config.toml` (`~/.config/nearby/config.toml`). A small TOML
/// subset: `key = value` lines with a string (`"…"`, with `\"`, `\\`, `\n`, `\t` escapes), an integer, `true`/
/// `false` or an array of strings; `#` comments; `[advertise]`, `[receive]`, `[send]`, `[discover]`, `[publish]`,
/// `[subscribe]` sections whose keys apply to that command only and win over the top-level ones. Flags on the
/// command line win over both. Keys are the long option names (``knownKeys``); an unknown key, section or a line
/// that does not parse is a usage error (exit 2) naming the file and line.
struct CLIConfig: Sendable, Equatable {
    /// A value of the file.
    enum Value: Sendable, Equatable {
        case string(String)
        case integer(Int64)
        case bool(Bool)
        case strings([String])
    }

    /// The options the file may set.
    static let knownKeys: Set<String> = [
        "service-id", "name", "receive-dir", "medium", "hci", "strategy", "quiet", "no-upgrade", "max-receive-bytes",
        "min-free-space",
    ]
    /// The sections the file may have (the commands that read it).
    static let knownSections: Set<String> = ["advertise", "receive", "send", "discover", "publish", "subscribe"]

    /// Section name ("" for the top level) → key → value.
    private(set) var sections: [String: [String: Value]] = [:]
    /// The file read, if any.
    private(set) var path: String?

    /// The value of `key` for `command`: its section's, else the top level's.
    func value(_ key: String, command: String?) -> Value? {
        if let command, let value = sections[command]?[key] { return value }
        return sections[""]?[key]
    }

    /// A string value (`~/` at the start of a path is the home directory).
    func string(_ key: String, command: String?) throws -> String? {
        switch value(key, command: command) {
        case nil: return nil
        case .string(let text): return text
        default: throw ValidationError("\(source): \(key) must be a string")
        }
    }

    /// An integer value.
    func integer(_ key: String, command: String?) throws -> Int64? {
        switch value(key, command: command) {
        case nil: return nil
        case .integer(let number): return number
        default: throw ValidationError("\(source): \(key) must be a number")
        }
    }

    /// A boolean value.
    func bool(_ key: String, command: String?) throws -> Bool? {
        switch value(key, command: command) {
        case nil: return nil
        case .bool(let flag): return flag
        default: throw ValidationError("\(source): \(key) must be true or false")
        }
    }

    /// A list of strings (one string is a list of one).
    func strings(_ key: String, command: String?) throws -> [String]? {
        switch value(key, command: command) {
        case nil: return nil
        case .string(let text): return [text]
        case .strings(let list): return list
        default: throw ValidationError("\(source): \(key) must be a string or a list of strings")
        }
    }

    /// The file, for messages.
    private var source: String { path ?? "the config file" }

    // MARK: - Loading

    /// The file's path for `environment`: `$NEARBY_CONFIG`, else under `$XDG_CONFIG_HOME` or `~/.config`.
    static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit = environment["NEARBY_CONFIG"], !explicit.isEmpty { return explicit }
        let base =
            environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.config")
        return base + "/nearby/config.toml"
    }

    /// Reads the file at `path`; a missing file is an empty config, unless `$NEARBY_CONFIG` named it.
    static func load(path: String, required: Bool) throws -> CLIConfig {
        guard FileManager.default.fileExists(atPath: path) else {
            if required { throw ValidationError("the config file \(path) (NEARBY_CONFIG) does not exist") }
            return CLIConfig()
        }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ValidationError("cannot read the config file: \(ErrorText.describe(error, path: path))")
        }
        var config = try parse(text, path: path)
        config.path = path
        return config
    }

    /// Parses the TOML subset; errors name `path` and the line.
    static func parse(_ text: String, path: String) throws -> CLIConfig {
        var config = CLIConfig()
        var section = ""
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let place = "\(path):\(index + 1)"
            let line = stripComment(String(rawLine)).trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw ValidationError("\(place): a section is written [name]") }
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                guard knownSections.contains(section) else {
                    throw ValidationError(
                        "\(place): unknown section [\(section)] (known: \(knownSections.sorted().joined(separator: ", ")))")
                }
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { throw ValidationError("\(place): expected key = value") }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "_", with: "-")
            guard knownKeys.contains(key) else {
                throw ValidationError("\(place): unknown key \(key) (known: \(knownKeys.sorted().joined(separator: ", ")))")
            }
            let value = try parseValue(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces), place)
            config.sections[section, default: [:]][key] = value
        }
        return config
    }

    private static func parseValue(_ text: String, _ place: String) throws -> Value {
        if text == "true" { return .bool(true) }
        if text == "false" { return .bool(false) }
        if let number = Int64(text.replacingOccurrences(of: "_", with: "")) { return .integer(number) }
        if text.hasPrefix("\"") {
            var rest = Substring(text)
            let string = try parseString(&rest, place)
            guard rest.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ValidationError("\(place): unexpected text after the string")
            }
            return .string(string)
        }
        if text.hasPrefix("[") && text.hasSuffix("]") {
            var rest = text.dropFirst().dropLast()
            var items: [String] = []
            while true {
                rest = rest.drop { $0 == " " || $0 == "\t" }
                if rest.isEmpty { break }
                items.append(try parseString(&rest, place))
                rest = rest.drop { $0 == " " || $0 == "\t" }
                if rest.first == "," { rest = rest.dropFirst() } else if !rest.isEmpty {
                    throw ValidationError("\(place): array items are separated by commas")
                }
            }
            return .strings(items)
        }
        throw ValidationError("\(place): a value is a \"string\", a number, true, false or [\"a\", \"b\"]")
    }

    /// Parses one double-quoted string at the start of `rest` and moves past it.
    private static func parseString(_ rest: inout Substring, _ place: String) throws -> String {
        guard rest.first == "\"" else { throw ValidationError("\(place): expected a \"string\"") }
        rest = rest.dropFirst()
        var result = ""
        while let character = rest.first {
            rest = rest.dropFirst()
            switch character {
            case "\"":
                return result
            case "\\":
                guard let escaped = rest.first else { break }
                rest = rest.dropFirst()
                switch escaped {
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "\"", "\\": result.append(escaped)
                default: throw ValidationError("\(place): unknown escape \\\(escaped)")
                }
            default:
                result.append(character)
            }
        }
        throw ValidationError("\(place): a string is not closed")
    }

    /// The line without a `#` comment (a `#` inside a string stays).
    private static func stripComment(_ line: String) -> String {
        var inString = false
        var escaped = false
        for (offset, character) in line.enumerated() {
            if escaped { escaped = false; continue }
            if character == "\\" && inString { escaped = true; continue }
            if character == "\"" { inString.toggle() }
            if character == "#" && !inString { return String(line.prefix(offset)) }
        }
        return line
    }

    // MARK: - This run's config

    private static let loaded = LockedValue<Result<CLIConfig, ValidationError>?>(nil)

    /// This run's config, read once. A broken file is a usage error.
    static func current() throws -> CLIConfig {
        let cached = loaded.withLock { $0 }
        if let cached { return try cached.get() }
        let environment = ProcessInfo.processInfo.environment
        let path = defaultPath(environment: environment)
        let result: Result<CLIConfig, ValidationError>
        do {
            result = .success(try load(path: path, required: environment["NEARBY_CONFIG"]?.isEmpty == false))
        } catch let error as ValidationError {
            result = .failure(error)
        } catch {
            result = .failure(ValidationError("\(error)"))
        }
        loaded.withLock { $0 = result }
        return try result.get()
    }

    /// The subcommand this run executes (`send`, `receive`, …): the first argument that is not an option.
    static var command: String? {
        CommandLine.arguments.dropFirst().first { !$0.hasPrefix("-") }
    }
}
