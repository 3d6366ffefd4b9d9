import NearbyWire

/// Checks DNS-SD service types of the form `_name._tcp` / `_name._udp`.
enum DNSSDServiceType {
    /// The longest `_name` label, in bytes, including its leading underscore.
    static let maximumNameLabelLength = 63

    /// Throws `.invalidArgument` unless `type` is `_name._tcp` or `_name._udp` with a well-formed `name`.
    static func validate(_ type: String) throws {
        let labels = type.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count == 2, labels[1] == "_tcp" || labels[1] == "_udp" else {
            throw NearbyError(.invalidArgument, "DNS-SD service type \"\(type)\" is not of the form _name._tcp or _name._udp")
        }
        let name = labels[0].utf8
        guard name.count >= 2, name.count <= maximumNameLabelLength, name.first == UInt8(ascii: "_") else {
            throw NearbyError(.invalidArgument, "DNS-SD service type \"\(type)\" needs a name of 1 to 62 characters after its \"_\"")
        }
        let allowed = name.dropFirst().allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        guard allowed else {
            throw NearbyError(.invalidArgument, "DNS-SD service type \"\(type)\" may only use letters, digits, \"-\" and \"_\"")
        }
    }
}
