import Logging
import NearbyConnections

/// The CLI's stderr log handler: swift-log's `StreamLogHandler` on standard error, with every scalar that could
/// change how a terminal shows other text (`PeerText.isUnsafe`: controls, bidirectional overrides, line
/// separators) escaped in the message and in every metadata value, the logger's own included.
///
/// Peers choose much of what `--verbose` logs (endpoint IDs and names, message namespaces and types, file names,
/// error texts quoting them), so stderr is escaped like the rest of the CLI's human output.
struct EscapingLogHandler: LogHandler {
    private var base: StreamLogHandler

    /// The handler writing to standard error.
    static func standardError(label: String) -> EscapingLogHandler {
        EscapingLogHandler(base: StreamLogHandler.standardError(label: label))
    }

    var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue.mapValues(Self.escaped) }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { base.metadataProvider }
        set { base.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue.map(Self.escaped) }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: PeerText.escapedForTerminal(event.message.description))
        event.metadata = event.metadata?.mapValues(Self.escaped)
        base.log(event: event)
    }

    /// `value` with its text escaped (as a string; arrays and dictionaries keep their shape).
    static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(PeerText.escapedForTerminal(text))
        case .stringConvertible(let convertible): .string(PeerText.escapedForTerminal(convertible.description))
        case .array(let values): .array(values.map(escaped))
        case .dictionary(let values): .dictionary(values.mapValues(escaped))
        }
    }
}
