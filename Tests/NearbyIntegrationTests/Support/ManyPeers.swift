import Foundation
import NearbyTestSupport
import NearbyWire

/// A small payload file a test process sends, with the digest the receiver must report.
struct SentFile: Sendable {
    let url: URL
    let sha256: String
    let size: Int
}

/// Helpers for the tests with many `nearby` processes (star hub with 100 spokes, cluster of 8).
enum ManyPeers {
    /// A file of `size` random bytes under the scratch root, and its SHA-256 (hex).
    static func file(_ scratch: Scratch, _ name: String, size: Int) throws -> SentFile {
        var generator = SystemRandomNumberGenerator()
        let words = (0..<(size + 7) / 8).map { _ in generator.next() as UInt64 }
        let bytes = Array(words.withUnsafeBytes { Array($0.prefix(size)) })
        let url = scratch.root.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return SentFile(url: url, sha256: Hex.encode(SHA256Digest.hash(bytes)), size: size)
    }

    /// The hex SHA-256 of a text's UTF-8 bytes, as `payload_received` reports it.
    static func sha256(_ text: String) -> String { Hex.encode(SHA256Digest.hash(utf8: text)) }

    /// The hex form of a name, as `connection_initiated` reports it in `endpoint_info_hex`.
    static func infoHex(_ name: String) -> String { Hex.encode(Array(name.utf8)) }

    /// The `advertising` port of an `advertise` process.
    static func port(of advertiser: CLIProcess) async throws -> Int {
        let advertising = try await advertiser.waitForEvent("advertising", timeout: 60)
        guard let port = advertising.int("port"), port > 0 else { throw IntegrationFailure("no port in \(advertising)") }
        return Int(port)
    }

    /// The endpoint ID `process` gave the peer that introduced itself as `name`.
    static func endpointID(of name: String, seenBy process: CLIProcess) -> String? {
        process.events("connection_initiated")
            .first { $0.string("endpoint_info_hex")?.lowercased() == infoHex(name) }?
            .string("endpoint_id")
    }

    /// Waits until `process` printed `count` events named `name` that satisfy `predicate`.
    static func waitForCount(
        _ process: CLIProcess, _ name: String, _ count: Int, timeout: Double,
        where predicate: @escaping (JSONEvent) -> Bool = { _ in true }
    ) async throws {
        do {
            _ = try await eventually(within: timeout, "\(process.label) to print \(count) \(name)") {
                process.events(name).filter(predicate).count >= count ? true : nil
            }
        } catch {
            let seen = process.events(name).filter(predicate).count
            throw IntegrationFailure("\(error) (saw \(seen))\n\(process.diagnostics)")
        }
    }
}
