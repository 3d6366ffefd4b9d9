/// The fuzzer's bytes, consumed front to back by targets that need choices (modes, sizes, splits) as well as data.
/// Reading past the end yields zeros and empty arrays, so every input is a valid sequence of choices.
struct FuzzInput: Sendable {
    /// Every byte of the input.
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte was consumed.
    var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte, or 0 at the end.
    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next two bytes as a little-endian number.
    mutating func uint16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    /// Up to `count` next bytes.
    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    /// A chunk prefixed by a one-byte length.
    mutating func chunk8() -> [UInt8] { take(Int(byte())) }

    /// A chunk prefixed by a two-byte little-endian length.
    mutating func chunk16() -> [UInt8] { take(Int(uint16())) }

    /// Everything not consumed yet.
    mutating func rest() -> [UInt8] { take(bytes.count - offset) }
}

/// Stops the process (a crash libFuzzer records) when a property of a decoder does not hold.
func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #file, line: UInt = #line) {
    if !condition() { fatalError("fuzz property violated: \(message())", file: file, line: line) }
}
