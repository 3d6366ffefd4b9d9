import NearbyWire

extension NearbyError.Code {
    /// A message's content is over ``NearbyMessages/Message/maximumContentSize`` bytes.
    public static let messageTooLarge = Self(rawValue: "messageTooLarge")
    /// A message namespace or type (or a filter's) contains `*`, or is too long.
    public static let invalidMessageLabel = Self(rawValue: "invalidMessageLabel")
    /// The user has not consented to nearby discovery.
    public static let consentNotGranted = Self(rawValue: "consentNotGranted")
}
