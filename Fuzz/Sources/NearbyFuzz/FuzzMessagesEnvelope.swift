import NearbyMessages

/// The Nearby Messages envelope a publisher puts in its endpoint info (or sends through a connection): anything
/// that decodes must decode again, unchanged, from its own encoding.
func fuzzMessagesEnvelope(_ input: FuzzInput) {
    guard let envelope = try? MessageEnvelope.decode(input.bytes) else { return }
    let again = try? MessageEnvelope.decode(envelope.bytes)
    fuzzCheck(again == envelope, "message envelope did not round-trip")
    if case .message(let message) = envelope {
        _ = MessageEnvelope.advertisement(for: message)
        fuzzCheck(MessageDescriptor(message).describes(message), "a descriptor does not describe its message")
    }
}
