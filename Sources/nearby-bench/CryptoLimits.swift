import Crypto
import Foundation
import NearbySecurity
import _CryptoExtras

/// The cipher's ceilings, in process on the calling thread (one core), over 64 KiB chunks: the stack's own
/// sealer and opener (`D2DSecureChannel`), each next to the bare primitives it is built from (swift-crypto's
/// `AES._CBC` and `HMAC<SHA256>`), so a slow sealer cannot hide in its own baseline.
struct CryptoLimits {
    /// `D2DSecureChannel.encode` (the sender's per-chunk work), MB/s.
    var seal: Double?
    /// AES-256-CBC encrypt + HMAC-SHA256 over the ciphertext, nothing else, MB/s.
    var bareSeal: Double?
    /// `D2DSecureChannel.decode` (the receiver's per-chunk work), MB/s.
    var open: Double?
    /// HMAC-SHA256 verify + AES-256-CBC decrypt, nothing else, MB/s.
    var bareOpen: Double?

    static let chunkSize = 65_536
    /// Chunks sealed ahead of timing the opener (sequence numbers are strict, so messages are opened in order).
    static let batch = 64

    static func measure(bytes: Int) -> CryptoLimits {
        let chunk = [UInt8](repeating: 0xA5, count: chunkSize)
        let count = max(bytes / chunkSize, batch)
        let total = Double(count * chunkSize) / Benchmarks.megabyte
        // Alternate the stack and the bare primitives in halves, so both see the same machine state.
        var result = CryptoLimits()
        let secret = (0..<32).map { UInt8($0) }
        var sealer = D2DSecureChannel(nextProtocolSecret: secret, role: .client)
        // A second client channel feeds the opener, so the opener sees every sequence number in order.
        var feeder = D2DSecureChannel(nextProtocolSecret: secret, role: .client)
        var opener = D2DSecureChannel(nextProtocolSecret: secret, role: .server)
        let encryptionKey = SymmetricKey(data: [UInt8](repeating: 1, count: 32))
        let signingKey = SymmetricKey(data: [UInt8](repeating: 2, count: 32))
        var seal = 0.0, bareSeal = 0.0, open = 0.0, bareOpen = 0.0
        for _ in 0..<2 {
            let half = count / 2
            var start = now()
            for _ in 0..<half { guard (try? sealer.encode(chunk)) != nil else { return result } }
            seal += now() - start

            start = now()
            var sink = 0
            for _ in 0..<half {
                guard let sealed = bareSealOnce(chunk, encryptionKey: encryptionKey, signingKey: signingKey) else { return result }
                sink &+= sealed.count
            }
            bareSeal += now() - start

            var opened = 0
            var bareSealed: [(Data, HashedAuthenticationCode<SHA256>, AES._CBC.IV)] = []
            while opened < half {
                let n = min(batch, half - opened)
                var messages: [[UInt8]] = []
                bareSealed.removeAll(keepingCapacity: true)
                for _ in 0..<n {
                    guard let message = try? feeder.encode(chunk) else { return result }
                    messages.append(message)
                    guard let iv = try? AES._CBC.IV(ivBytes: CryptoRandom.iv()),
                        let ciphertext = try? AES._CBC.encrypt(chunk, using: encryptionKey, iv: iv)
                    else { return result }
                    bareSealed.append((ciphertext, HMAC<SHA256>.authenticationCode(for: ciphertext, using: signingKey), iv))
                }
                start = now()
                for message in messages { guard (try? opener.decode(message)) != nil else { return result } }
                open += now() - start
                start = now()
                for (ciphertext, tag, iv) in bareSealed {
                    guard HMAC<SHA256>.isValidAuthenticationCode(tag, authenticating: ciphertext, using: signingKey),
                        let plaintext = try? AES._CBC.decrypt(ciphertext, using: encryptionKey, iv: iv)
                    else { return result }
                    sink &+= plaintext.count
                }
                bareOpen += now() - start
                opened += n
            }
            withExtendedLifetime(sink) {}
        }
        result.seal = total / seal
        result.bareSeal = total / bareSeal
        result.open = total / open
        result.bareOpen = total / bareOpen
        return result
    }

    /// AES-256-CBC + HMAC-SHA256 over the ciphertext with a fresh random IV: the bare work of one sealed chunk.
    static func bareSealOnce(_ chunk: [UInt8], encryptionKey: SymmetricKey, signingKey: SymmetricKey) -> Data? {
        guard let iv = try? AES._CBC.IV(ivBytes: CryptoRandom.iv()),
            var ciphertext = try? AES._CBC.encrypt(chunk, using: encryptionKey, iv: iv)
        else { return nil }
        ciphertext.append(contentsOf: HMAC<SHA256>.authenticationCode(for: ciphertext, using: signingKey))
        return ciphertext
    }

    func emit(to report: Report) {
        report.emit(Figure(
            metric: "crypto_limit", value: seal, unit: "MB/s", baseline: "aes_cbc_hmac_sha256", baselineValue: bareSeal,
            note: [("measured", "D2DSecureChannel.encode vs AES._CBC.encrypt + HMAC<SHA256>, 64 KiB chunks, one core")]))
        report.emit(Figure(
            metric: "crypto_open_limit", value: open, unit: "MB/s", baseline: "aes_cbc_hmac_sha256", baselineValue: bareOpen,
            note: [("measured", "D2DSecureChannel.decode vs HMAC<SHA256> verify + AES._CBC.decrypt, 64 KiB chunks, one core")]))
    }
}

/// Random IVs for the bare baseline (two 64-bit draws, as the stack does).
enum CryptoRandom {
    static func iv() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for _ in 0..<2 { withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) } }
        return bytes
    }
}
