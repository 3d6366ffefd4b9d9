/// The Pre-Connection Protocol: the strategy as it appears on the wire.
///
/// Advertisements carry the PCP in the low five bits of their first byte, and discovery only matches endpoints
/// whose PCP equals the local strategy's. The raw values are the wire values.
public enum PCP: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `P2P_STAR`: one hub, many spokes (1-to-N).
    case p2pStar = 1
    /// `P2P_CLUSTER`: anyone may connect to anyone (M-to-N).
    case p2pCluster = 2
    /// `P2P_POINT_TO_POINT`: exactly one connection at a time (1-to-1). Quick Share uses this.
    case p2pPointToPoint = 3

    /// Bit mask of the PCP within an advertisement's first byte (bits 4–0).
    public static let bitmask: UInt8 = 0x1F

    /// The strategy's upstream name, e.g. `P2P_POINT_TO_POINT`.
    public var description: String {
        switch self {
        case .p2pStar: "P2P_STAR"
        case .p2pCluster: "P2P_CLUSTER"
        case .p2pPointToPoint: "P2P_POINT_TO_POINT"
        }
    }
}
