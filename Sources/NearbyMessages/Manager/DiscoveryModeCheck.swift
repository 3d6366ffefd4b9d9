import NearbyCore
import NearbyWire

extension MessageManager {
    /// Checks a discovery mode: not empty, and broadcasting when the endpoint info is the plain content.
    /// - Throws: `NearbyError` `.invalidArgument`.
    static func checkMode(_ mode: MessageStrategy.Mode, plain: Bool) throws(NearbyError) {
        guard !mode.intersection(.both).isEmpty else {
            throw NearbyError(.invalidArgument, "the discovery mode must broadcast, scan or both")
        }
        if plain, !mode.contains(.broadcast) {
            throw NearbyError(.invalidArgument, "plain endpoint info is advertised: the discovery mode must broadcast")
        }
    }
}
