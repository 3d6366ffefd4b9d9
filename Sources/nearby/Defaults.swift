import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What `nearby` uses when neither a flag nor the config file says otherwise.
enum Defaults {
    /// The service ID of `nearby send` and `nearby receive` when none is given: two machines running the tool with
    /// no options find each other.
    static let serviceID = "swift-nearby"

    /// This machine's name as the endpoint info: the host name (at most 131 bytes, the protocol's limit, cut at a
    /// character boundary), or `nearby` when there is none.
    static func deviceName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "nearby" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard !name.isEmpty else { return "nearby" }
        var result = ""
        for character in name where result.utf8.count + character.utf8.count <= 131 { result.append(character) }
        return result
    }
}
