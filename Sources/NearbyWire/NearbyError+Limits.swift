extension NearbyError.Code {
    /// A resource limit was reached: too many items, clients, buffered bytes or pending connections. What was
    /// asked was refused (or the payload concerned failed); everything else goes on.
    public static let limitExceeded = NearbyError.Code(rawValue: "limitExceeded")
}
