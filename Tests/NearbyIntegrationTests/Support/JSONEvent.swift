import Foundation

/// One JSON value of a CLI event line (nested arrays and objects are kept only as "present").
enum JSONValue: Sendable, Equatable, Decodable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case null
    case nested

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else {
            self = .nested
        }
    }
}

/// One line a `nearby ... --json` command printed: `{"event":"...", ...}`.
struct JSONEvent: Sendable, CustomStringConvertible {
    /// The line as printed.
    let line: String
    /// Its top-level fields.
    let fields: [String: JSONValue]

    /// Parses a line; `nil` when it is not a JSON object.
    init?(line: String) {
        guard let fields = try? JSONDecoder().decode([String: JSONValue].self, from: Data(line.utf8)) else { return nil }
        self.line = line
        self.fields = fields
    }

    /// The `event` field.
    var event: String? { string("event") }

    /// A string field.
    func string(_ key: String) -> String? {
        if case .string(let value) = fields[key] { return value }
        return nil
    }

    /// An integer field.
    func int(_ key: String) -> Int64? {
        switch fields[key] {
        case .int(let value): value
        case .double(let value) where value.rounded() == value: Int64(value)
        case .string(let text): Int64(text)
        default: nil
        }
    }

    /// A boolean field.
    func bool(_ key: String) -> Bool? {
        if case .bool(let value) = fields[key] { return value }
        return nil
    }

    /// A field as text, whatever its JSON type (payload IDs compare equal whether printed as numbers or strings).
    func text(_ key: String) -> String? {
        switch fields[key] {
        case .string(let value): value
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .bool(let value): String(value)
        default: nil
        }
    }

    var description: String { line }
}
