import Foundation
import NearbyConnections
import NearbyMessages
import NearbyWire

extension ServiceEntry {
    /// The longest service ID the service takes, in UTF-8 bytes.
    public static let maximumServiceIDLength = 255

    /// Checks what the service makes itself, for an entry read from the state file (anything may be there): a
    /// handle `pub-` or `sub-` (as its kind) and 8 lowercase hex digits, a service ID of 1 to
    /// ``maximumServiceIDLength`` bytes, `background`, and for a publication content and labels a message may
    /// have, for a subscription a filter the service takes and no content.
    /// - Throws: `NearbyError` `.malformedMessage` saying what is wrong.
    public func validate() throws(NearbyError) {
        let prefix = kind == .publication ? "pub-" : "sub-"
        let digits = handle.utf8.dropFirst(prefix.utf8.count)
        guard handle.hasPrefix(prefix), digits.count == 8,
            digits.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw NearbyError(.malformedMessage, "handle \(PeerText.escapedForTerminal(String(handle.prefix(64)))) is not \(prefix)XXXXXXXX")
        }
        guard !serviceID.isEmpty, serviceID.utf8.count <= Self.maximumServiceIDLength else {
            throw NearbyError(.malformedMessage, "\(handle): the service ID must have 1 to \(Self.maximumServiceIDLength) bytes")
        }
        guard background else { throw NearbyError(.malformedMessage, "\(handle): only background items are saved") }
        do throws(NearbyError) {
            switch kind {
            case .publication:
                guard let contentHex else { throw NearbyError(.malformedMessage, "no content") }
                let content = try Hex.decode(contentHex)
                try Message(content: Data(content), namespace: namespace ?? "", type: type ?? "").validate()
            case .subscription:
                guard contentHex == nil else { throw NearbyError(.malformedMessage, "a subscription has no content") }
                if namespace != nil || type != nil { _ = try MessageFilter.namespacedType(namespace ?? "", type) }
            }
        } catch {
            throw NearbyError(.malformedMessage, "\(handle): \(error.message)")
        }
    }
}

