import NearbyWire

/// What a subscription that broadcasts advertises as its endpoint info: "I am interested in this service's
/// messages; deliver them to me". A publication that scans finds it and delivers its message in a connection
/// request (see `docs/MESSAGES-DISCOVERY-MODES.md`).
///
/// ```
/// 0  magic 0x4D ('M')
/// 1  version 1 (high nibble) | kind 4 (low nibble)  = 0x14
/// 2  flags: bit 0 = the subscription also scans; bits 1–7 are 0 when written and ignored when read
/// ```
package struct InterestAdvertisement: Sendable, Hashable {
    /// The envelope kind of an interest advertisement (kinds 0–2 are `MessageEnvelope`'s).
    package static let kind: UInt8 = 4
    /// The flag bit saying the subscription scans too.
    package static let scansFlag: UInt8 = 1 << 0

    /// Whether the subscription also scans, so that a publication that broadcasts need not deliver to it (the
    /// subscription finds the publication's own advertisement).
    package var subscriberScans: Bool

    /// Creates an advertisement.
    package init(subscriberScans: Bool) {
        self.subscriberScans = subscriberScans
    }

    /// The three bytes advertised.
    package var bytes: [UInt8] {
        [MessageEnvelope.magic, MessageEnvelope.version << 4 | Self.kind, subscriberScans ? Self.scansFlag : 0]
    }

    /// Decodes an interest advertisement.
    /// - Throws: `NearbyError` `.invalidAdvertisement` when `bytes` is not one (wrong magic, version or kind, or not
    ///   exactly three bytes).
    package static func decode(_ bytes: some Collection<UInt8>) throws(NearbyError) -> InterestAdvertisement {
        let raw = Array(bytes)
        guard raw.count == 3, raw[0] == MessageEnvelope.magic, raw[1] == MessageEnvelope.version << 4 | kind else {
            throw NearbyError(.invalidAdvertisement, "not an interest advertisement")
        }
        return InterestAdvertisement(subscriberScans: raw[2] & scansFlag != 0)
    }
}
