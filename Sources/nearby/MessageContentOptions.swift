import ArgumentParser
import NearbyWire

/// `--message TEXT` or `--message-hex HEX`: the content of a message to publish, for `nearby publish` and
/// `nearby service publish`.
struct MessageContentOptions: ParsableArguments {
    @Option(help: "The message text (UTF-8).")
    var message: String?

    @Option(name: .customLong("message-hex"), help: "The message content as hex bytes.")
    var messageHex: String?

    func validate() throws {
        guard (message == nil) != (messageHex == nil) else { throw ValidationError("give exactly one of --message and --message-hex") }
    }

    /// The content bytes: the text's UTF-8, or the decoded hex.
    func content() throws -> [UInt8] {
        if let message { return Array(message.utf8) }
        do { return try Hex.decode(messageHex ?? "") } catch { throw ValidationError("--message-hex: \(error.message)") }
    }
}
