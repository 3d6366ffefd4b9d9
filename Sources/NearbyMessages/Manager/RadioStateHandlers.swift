import Logging
import NearbyConnections
import NearbyCore
import NearbyWire

/// The radio states of one manager and the handler that hears them (`MessageManager.radioStatusHandler`).
///
/// Problems come from the mediums (a BLE controller that cannot be opened, a Wi-Fi LAN advertisement nobody can
/// discover, a failed discovery) and, for Bluetooth, from the BLE radio's own state (powered off, rfkill, transport
/// or `bluetoothd` gone), which each Connections manager reports through its `bluetoothStatusHandler`. Clearing
/// comes from signs of health: an advertisement started on the radio, the BLE radio usable again, or, for mDNS, avahi-daemon coming back, which an `MDNSDaemonWatch` (an Avahi client that waits for the daemon)
/// reports as soon as the manager first uses Wi-Fi LAN; the watch also reports the daemon going away.
package final class RadioStateMonitor: Sendable {
    private struct Values: Sendable {
        var states = RadioStates()
        var handler: (@Sendable (RadioStatus) -> Void)?
        var watchingMDNS = false
        var mdnsWatch: (watch: MDNSDaemonWatch, continuation: AsyncStream<String?>.Continuation)?
    }

    /// The handler is called after the lock is released, in the order of the transitions (the lock rule,
    /// docs/ARCHITECTURE.md).
    private let values = LockedOutbox(Values())

    package init() {}

    deinit {
        let continuation = values.withLock { $0.mdnsWatch?.continuation }
        continuation?.finish()
    }

    /// The handler.
    var handler: (@Sendable (RadioStatus) -> Void)? {
        get { values.withLock { $0.handler } }
        set { values.withLock { $0.handler = newValue } }
    }

    /// Whether `radio` currently has a reported problem.
    package func hasError(_ radio: RadioStatus.Radio) -> Bool { values.withLock { $0.states.hasError(radio) } }

    /// `error` shows a problem with `radio`: reported unless already reported.
    func problem(_ radio: RadioStatus.Radio, _ error: NearbyError) {
        values.withLock { values, outbox in
            Self.postStatus(values.states.problem(radio, error), to: values.handler, through: &outbox)
        }
    }

    /// A Connections manager's BLE radio changed: its problem (with the kind the system told), or its clearing.
    func bluetooth(_ status: BluetoothStatus) {
        guard status.hasError else {
            working(.bluetooth)
            return
        }
        let error = status.error ?? NearbyError(.bluetoothUnavailable, "Bluetooth is unavailable")
        values.withLock { values, outbox in
            let status = values.states.problem(.bluetooth, error, kind: status.problem.map(RadioStatus.Problem.init))
            Self.postStatus(status, to: values.handler, through: &outbox)
        }
    }

    /// `radio` works: a problem reported before has cleared.
    func working(_ radio: RadioStatus.Radio) {
        values.withLock { values, outbox in
            Self.postStatus(values.states.working(radio), to: values.handler, through: &outbox)
        }
    }

    /// Starts watching avahi-daemon (once; later calls do nothing). Without a D-Bus system bus there is nothing to
    /// watch, and mDNS problems then clear only when a Wi-Fi LAN advertisement works again.
    func watchMDNS(logger: Logger) {
        let start = values.withLock { values -> Bool in
            guard !values.watchingMDNS else { return false }
            values.watchingMDNS = true
            return true
        }
        guard start else { return }
        // The watch calls back on Avahi's thread; the states are handled on a task of their own, in order, so
        // that this monitor is never released on that thread (its watch would then stop the thread it runs on).
        let (states, continuation) = AsyncStream<String?>.makeStream()
        do {
            let watch = try MDNSDaemonWatch { notRunning in continuation.yield(notRunning) }
            values.withLock { $0.mdnsWatch = (watch, continuation) }
        } catch {
            logger.debug("cannot watch avahi-daemon", metadata: ["error": "\(error)"])
            return
        }
        // Owner: none keeps the handle; it ends when `states` finishes, which this monitor's `deinit` does (the
        // continuation is kept in `mdnsWatch`).
        Task { [weak self] in
            for await notRunning in states {
                if let why = notRunning {
                    self?.problem(.mdns, NearbyError(.mediumUnavailable, why))
                } else {
                    self?.working(.mdns)
                }
            }
        }
    }

    /// Posts the handler's call for `status`, when there is a transition and a handler.
    private static func postStatus(
        _ status: RadioStatus?, to handler: (@Sendable (RadioStatus) -> Void)?,
        through outbox: inout LockedOutbox<Values>.Outbox
    ) {
        guard let status, let handler else { return }
        outbox.post { handler(status) }
    }
}

extension MessageManager {
    /// Called when Bluetooth or mDNS (avahi-daemon) has a problem — powered off, permission denied, unavailable —
    /// and again, with `hasError` false, when it has cleared (Google's `GNSErrorStateHandler(hasError)` for
    /// `bluetoothPowerErrorHandler` and `bluetoothPermissionErrorHandler`, one handler for every radio, with the
    /// reason added). The microphone and speaker report through the audio medium's handler.
    ///
    /// Each transition is reported once. mDNS is watched from the first use of Wi-Fi LAN on, so the daemon
    /// stopping is reported even while nothing else happens; mDNS clears when a Wi-Fi LAN advertisement is
    /// discoverable again (or the watch sees the daemon running). Bluetooth follows the BLE radio's state from the
    /// first BLE use on — powered off or rfkill, permission, controller transport or `bluetoothd` gone, and each
    /// of these clearing when the radio recovers (publications and subscriptions then resume over BLE by
    /// themselves) — and also clears when a BLE advertisement starts again.
    public var radioStatusHandler: (@Sendable (RadioStatus) -> Void)? {
        get { radio.handler }
        set { radio.handler = newValue }
    }

    /// Reports the radio state a started advertisement shows: its problem, or that the radio works.
    func reportAdvertising(_ session: any AdvertisingSession) {
        if let problem = session.discoverabilityProblem {
            report(problem, medium: session.medium)
        } else {
            radio.working(RadioStatus.Radio(session.medium))
        }
    }
}

extension RadioStatus.Radio {
    /// The radio a medium runs on.
    init(_ medium: MediumKind) {
        switch medium {
        case .ble: self = .bluetooth
        case .wifiLAN: self = .mdns
        }
    }
}
