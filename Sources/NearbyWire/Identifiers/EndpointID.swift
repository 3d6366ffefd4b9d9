/// The 4-character identifier of an endpoint.
///
/// Nearby Connections generates a fresh ID per advertising or discovery session, each character drawn uniformly
/// from ``alphabet`` (`A`–`Z`, then `1`–`9`, then `0`). IDs received from peers are only required to be four
/// printable ASCII characters (`0x20`–`0x7E`), because other implementations may draw from a different set.
public struct EndpointID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The number of characters (and bytes) in an endpoint ID.
    public static let length = 4

    /// The characters generated IDs are drawn from, in upstream order: `A`–`Z`, `1`–`9`, `0`.
    public static let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ1234567890"

    private static let alphabetBytes: [UInt8] = Array(alphabet.utf8)

    /// The four characters.
    public let value: String

    /// Validates and wraps a 4-character endpoint ID.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` unless `value` is exactly four
    ///   printable ASCII characters (`0x20`–`0x7E`).
    public init(_ value: String) throws {
        try self.init(asciiBytes: Array(value.utf8))
    }

    /// Wraps four ASCII bytes read from the wire.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` unless `bytes` are exactly four
    ///   printable ASCII bytes (`0x20`–`0x7E`).
    public init(asciiBytes bytes: some Collection<UInt8>) throws {
        guard bytes.count == Self.length else {
            throw NearbyError(.invalidArgument, "an endpoint ID has \(Self.length) characters, got \(bytes.count) bytes")
        }
        guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw NearbyError(.invalidArgument, "an endpoint ID must be printable ASCII")
        }
        self.value = String(decoding: bytes, as: UTF8.self)
    }

    private init(unchecked value: String) {
        self.value = value
    }

    /// The ID's four ASCII bytes, as written into advertisements.
    public var asciiBytes: [UInt8] { Array(value.utf8) }

    /// A new ID whose characters are drawn uniformly from ``alphabet`` with `generator`.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> EndpointID {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        for _ in 0..<length {
            bytes.append(alphabetBytes[Int.random(in: 0..<alphabetBytes.count, using: &generator)])
        }
        return EndpointID(unchecked: String(decoding: bytes, as: UTF8.self))
    }

    /// A new ID whose characters are drawn uniformly from ``alphabet`` with the system's random generator.
    public static func random() -> EndpointID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// The four characters.
    public var description: String { value }

    /// Orders IDs by their characters (byte-wise, since they are ASCII).
    public static func < (lhs: EndpointID, rhs: EndpointID) -> Bool {
        lhs.value.utf8.lexicographicallyPrecedes(rhs.value.utf8)
    }
}
