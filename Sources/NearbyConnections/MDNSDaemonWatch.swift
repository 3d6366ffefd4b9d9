import NearbyWiFiLAN

/// Whether the mDNS daemon (avahi-daemon) runs, for modules that do not build on Wi-Fi LAN themselves (Nearby
/// Messages' radio-state handler): a thin wrapper of `AvahiDaemonWatch`.
package final class MDNSDaemonWatch: Sendable {
    private let watch: AvahiDaemonWatch

    /// Starts watching: `onChange` gets `nil` whenever the daemon runs, else why it does not (no polling: Avahi's
    /// client callbacks), until the watch is released.
    /// - Throws: `NearbyError` when no Avahi client can be made (no D-Bus system bus).
    package init(onChange: @escaping @Sendable (_ notRunning: String?) -> Void) throws {
        watch = try AvahiDaemonWatch(onChange: onChange)
    }
}
