import Crypto
import Foundation

/// SHA-256 digests of payloads, as lower-case hex.
enum Digests {
    static func sha256(_ bytes: some DataProtocol) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// SHA-256 and size of a file, read in 1 MiB pieces.
    static func sha256(fileAt url: URL) throws -> (digest: String, size: Int64) {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256()
        var size: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(data: chunk)
            size += Int64(chunk.count)
        }
        return (hasher.finalize().map { String(format: "%02x", $0) }.joined(), size)
    }

    /// Incremental hashing of a stream's chunks.
    struct Running {
        private var hasher = SHA256()
        private(set) var size: Int64 = 0

        mutating func update(_ bytes: [UInt8]) {
            hasher.update(data: bytes)
            size += Int64(bytes.count)
        }

        func finish() -> String {
            hasher.finalize().map { String(format: "%02x", $0) }.joined()
        }
    }
}
