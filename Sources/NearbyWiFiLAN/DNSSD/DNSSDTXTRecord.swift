import NearbyWire

/// Converts between a TXT dictionary and the `key=value` byte strings of a DNS TXT record.
enum DNSSDTXTRecord {
    /// The `key=value` strings for `txt` in ascending key order, after checking the limits of ``DNSSDService``.
    ///
    /// - Throws: `NearbyError` with code `.invalidArgument` for an empty or non-printable key, a key containing `=`,
    ///   a string longer than 255 bytes, or a record longer than ``DNSSDService/maximumTXTRecordLength``.
    static func encode(_ txt: [String: [UInt8]]) throws -> [[UInt8]] {
        var strings: [[UInt8]] = []
        var recordLength = 0
        for key in txt.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
            let keyBytes = Array(key.utf8)
            guard !keyBytes.isEmpty else {
                throw NearbyError(.invalidArgument, "TXT key is empty")
            }
            guard keyBytes.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "=") }) else {
                throw NearbyError(.invalidArgument, "TXT key \"\(key)\" must be printable ASCII without \"=\"")
            }
            let string = keyBytes + [UInt8(ascii: "=")] + txt[key]!
            guard string.count <= DNSSDService.maximumTXTStringLength else {
                throw NearbyError(
                    .invalidArgument,
                    "TXT entry \"\(key)\" is \(string.count) bytes; at most \(DNSSDService.maximumTXTStringLength) allowed"
                )
            }
            recordLength += 1 + string.count
            strings.append(string)
        }
        guard recordLength <= DNSSDService.maximumTXTRecordLength else {
            throw NearbyError(
                .invalidArgument,
                "TXT record is \(recordLength) bytes; at most \(DNSSDService.maximumTXTRecordLength) allowed"
            )
        }
        return strings
    }

    /// The dictionary for TXT strings given in record order: each string split at its first `=` (a string
    /// without `=` maps its key to an empty value); strings with an empty key are skipped; the first
    /// occurrence of a key wins.
    static func decode(_ strings: [[UInt8]]) -> [String: [UInt8]] {
        var txt: [String: [UInt8]] = [:]
        for string in strings {
            let separator = string.firstIndex(of: UInt8(ascii: "=")) ?? string.endIndex
            guard separator > string.startIndex else { continue }
            let key = String(decoding: string[..<separator], as: UTF8.self)
            guard txt[key] == nil else { continue }
            txt[key] = separator < string.endIndex ? Array(string[(separator + 1)...]) : []
        }
        return txt
    }
}
