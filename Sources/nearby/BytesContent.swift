import Foundation
import NearbyWire

/// A received BYTES payload's content for the JSON line: `text` when the bytes are valid UTF-8, `hex` otherwise,
/// cut to ``jsonLimit`` bytes (`truncated` then says so). A BYTES payload holds at most about 1 MiB; a script that
/// needs all of a larger one has the SHA-256 to check what it got some other way.
struct BytesContent: Equatable {
    /// The most content bytes a `payload_received` line carries.
    static let jsonLimit = 64 * 1024

    var text: String?
    var hex: String?
    var truncated: Bool?

    init(_ data: Data) {
        let cut = data.count > Self.jsonLimit
        var kept = data.prefix(Self.jsonLimit)
        if cut, String(data: kept, encoding: .utf8) == nil, String(data: data, encoding: .utf8) != nil {
            // Valid UTF-8 cut inside a character: step back to the character's first byte.
            while let last = kept.last, last & 0xC0 == 0x80 { kept = kept.dropLast() }
            if let last = kept.last, last >= 0xC0 { kept = kept.dropLast() }
        }
        if let text = String(data: kept, encoding: .utf8), cut ? String(data: data, encoding: .utf8) != nil : true {
            self.text = text
        } else {
            hex = Hex.encode(kept)
        }
        truncated = cut ? true : nil
    }
}
