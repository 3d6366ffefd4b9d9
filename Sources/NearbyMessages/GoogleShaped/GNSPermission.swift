import Foundation
import NearbyCore

/// Google's `GNSPermission`: the user's consent to Nearby, and a handler called whenever it changes — also when
/// another process (the `nearby` CLI, a settings app) grants or revokes it, because the consent file is watched
/// (`ConsentFileWatch`, inotify).
public final class GNSPermission: Sendable {
    private let watch: ConsentFileWatch?
    private let token: (store: ConsentStore, id: UUID)?

    /// Calls `changedHandler` with the new state whenever consent in `consent`'s file changes.
    public init(changedHandler: @escaping GNSPermissionHandler, consent: ConsentStore = ConsentStore()) {
        if let watch = try? ConsentFileWatch(store: consent, onChange: changedHandler) {
            self.watch = watch
            token = nil
        } else {
            // No inotify: changes made in this process are still reported.
            watch = nil
            token = (consent, consent.addChangeHandler(changedHandler))
        }
    }

    deinit {
        watch?.cancel()
        if let token { token.store.removeChangeHandler(token.id) }
    }

    /// Whether consent is granted (Google's `+isGranted`).
    public static func isGranted(in consent: ConsentStore = ConsentStore()) -> Bool { consent.isGranted }

    /// Grants or revokes consent (Google's `+setGranted:`); call it only in response to a user action.
    public static func setGranted(_ granted: Bool, in consent: ConsentStore = ConsentStore()) throws {
        try consent.setGranted(granted)
    }
}
