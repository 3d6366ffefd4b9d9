import Foundation

/// The strings people compare to confirm that both devices share the same UKEY2 secret.
///
/// Both derive from the 32-byte authentication string of the handshake.
package enum VerificationCodes {
    /// The 4-digit code Android shows: a polynomial hash of the bytes taken as signed, modulo 9973, multiplier 31,
    /// with the sign of a truncating remainder dropped at the end; always 4 digits with leading zeros.
    package static func digits(from authString: some Sequence<UInt8>) -> String {
        let prime = 9973
        var hash = 0
        var multiplier = 1
        for byte in authString {
            hash = (hash + Int(Int8(bitPattern: byte)) * multiplier) % prime
            multiplier = (multiplier * 31) % prime
        }
        let value = abs(hash)
        let text = String(value)
        return String(repeating: "0", count: max(0, 4 - text.count)) + text
    }

    /// The 5-character token Google's Swift API shows: URL-safe base64 of the bytes, first 5 characters, upper
    /// case.
    package static func token(from authString: some Sequence<UInt8>) -> String {
        let base64 = Data(authString).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return String(base64.prefix(5)).uppercased()
    }
}
