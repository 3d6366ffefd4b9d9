/// The TXT record entries of a Wi-Fi LAN advertisement.
///
/// The endpoint info (the advertiser's opaque name bytes, at most 131 of them) travels only here, under key `n`,
/// as URL-safe base64 without padding. 131 bytes encode to 175 characters, within a TXT string's 255-byte limit.
package enum WifiLanTXTRecord {
    /// The TXT key holding the endpoint info.
    package static let endpointInfoKey = "n"

    /// The longest endpoint info, in bytes, an advertisement may carry.
    package static let maxEndpointInfoLength = 131

    /// Encodes endpoint info as the value of key ``endpointInfoKey``.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` when `endpointInfo` is longer than
    ///   ``maxEndpointInfoLength`` bytes.
    package static func encodeEndpointInfo(_ endpointInfo: [UInt8]) throws -> String {
        guard endpointInfo.count <= maxEndpointInfoLength else {
            throw NearbyError(.invalidArgument, "endpoint info has at most \(maxEndpointInfoLength) bytes, got \(endpointInfo.count)")
        }
        return WebSafeBase64.encode(endpointInfo)
    }

    /// Decodes the value of key ``endpointInfoKey`` (padded or unpadded base64).
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidAdvertisement`` when `value` is not URL-safe
    ///   base64 or decodes to more than ``maxEndpointInfoLength`` bytes.
    package static func decodeEndpointInfo(_ value: String) throws -> [UInt8] {
        let endpointInfo: [UInt8]
        do {
            endpointInfo = try WebSafeBase64.decode(value)
        } catch let error as NearbyError {
            throw NearbyError(.invalidAdvertisement, "TXT record \"\(endpointInfoKey)\" is not URL-safe base64: \(error.message)", cause: error)
        }
        guard endpointInfo.count <= maxEndpointInfoLength else {
            throw NearbyError(.invalidAdvertisement, "TXT record \"\(endpointInfoKey)\" holds \(endpointInfo.count) bytes of endpoint info, at most \(maxEndpointInfoLength) allowed")
        }
        return endpointInfo
    }
}
