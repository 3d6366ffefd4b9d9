/// The kind of device a Quick Share endpoint says it is (bits 3–1 of its endpoint info's first byte); phones pick
/// the icon they show from it.
public enum QuickShareDeviceType: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Not said, or a value this version does not know.
    case unknown = 0
    /// A phone.
    case phone = 1
    /// A tablet.
    case tablet = 2
    /// A laptop or desktop computer.
    case laptop = 3
    /// A car.
    case car = 4
    /// A foldable phone.
    case foldable = 5
    /// An XR headset.
    case xr = 6

    /// The type for a 3-bit wire value; values without a meaning (7) read as ``unknown``, as Google's parser does.
    public init(wireValue: UInt8) {
        self = QuickShareDeviceType(rawValue: wireValue & 0b111) ?? .unknown
    }

    /// The lower-case name: `phone`, `laptop`, ….
    public var description: String {
        switch self {
        case .unknown: "unknown"
        case .phone: "phone"
        case .tablet: "tablet"
        case .laptop: "laptop"
        case .car: "car"
        case .foldable: "foldable"
        case .xr: "xr"
        }
    }

    /// The type named `name` (as ``description`` writes it), if any.
    public init?(name: String) {
        guard let type = Self.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = type
    }
}
