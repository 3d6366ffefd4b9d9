import Logging
import NearbyCore
import NearbyWire

/// A BLE medium's view of its radio's state: started at the medium's first use, it follows the radio's
/// ``BLERadio/states()``, republishes them to the medium's listeners (``BLEMedium/radioStates()``) and, when the
/// radio is powered again after a problem, starts the medium's advertisements again on radios that do not restore
/// them by themselves (``BLERadio/restoresAfterOutage``). Discoveries wait for the same recovery
/// (``RadioStateBroadcast/waitUntilPowered(moreThan:)``) and scan again.
final class BLERadioWatch: Sendable {
    /// The radio's states as the medium saw them.
    let broadcast = RadioStateBroadcast()
    /// The running advertisements, restarted after an outage.
    let advertisements = LockedValue<[ObjectIdentifier: BLEAdvertisingSession]>([:])
    private struct Following {
        var started = false
        var stopped = false
        var task: Task<Void, Never>?
    }

    private let following = LockedValue(Following())

    /// Starts following `radio` (once; later calls do nothing).
    func start(radio: any BLERadio, logger: Logger) {
        let first = following.withLock { following -> Bool in
            guard !following.started, !following.stopped else { return false }
            following.started = true
            return true
        }
        guard first else { return }
        let broadcast = self.broadcast
        let advertisements = self.advertisements
        // Owner: this watch; `stop()` cancels it (it ends with the radio's state stream).
        let task = Task {
            var hadProblem = false
            for await state in radio.states() {
                guard broadcast.publish(state) else { continue }
                switch state {
                case .unavailable(let error):
                    hadProblem = true
                    logger.notice("BLE radio unavailable", metadata: ["radio": "\(radio)", "error": "\(error)"])
                case .powered:
                    guard hadProblem else { continue }
                    hadProblem = false
                    logger.notice("BLE radio usable again", metadata: ["radio": "\(radio)"])
                    guard !radio.restoresAfterOutage else { continue }
                    for session in advertisements.withLock({ Array($0.values) }) {
                        do {
                            try await session.restart()
                        } catch {
                            logger.warning("cannot advertise again after the outage", metadata: ["error": "\(error)"])
                        }
                    }
                }
            }
        }
        let stoppedMeanwhile = following.withLock { following -> Bool in
            guard !following.stopped else { return true }
            following.task = task
            return false
        }
        if stoppedMeanwhile { task.cancel() }
    }

    /// Stops following the radio and ends the listeners' streams.
    func stop() {
        let task = following.withLock { following -> Task<Void, Never>? in
            following.stopped = true
            defer { following.task = nil }
            return following.task
        }
        task?.cancel()
        broadcast.finish()
    }
}

/// A running BLE advertisement, its L2CAP server and its GATT service; started again with the same data and PSM after the radio
/// recovered from an outage.
package final class BLEAdvertisingSession: AdvertisingSession {
    private struct Running {
        var advertising: BLERadioHandle
        var server: BLEL2CAPServer
        var stopped = false
    }

    /// `MediumKind.ble`.
    package let medium: MediumKind = .ble
    /// Always `nil`: BLE listens on a PSM, see ``psm``.
    package let port: Int? = nil
    /// Always `nil`.
    package let discoverabilityProblem: NearbyError? = nil
    /// The form and PSM advertised.
    package let advertisedName: String
    /// The L2CAP PSM accepting channels.
    package let psm: UInt16
    private let advertisement: BLEAdvertisement
    private let radio: any BLERadio
    private let accept: @Sendable (any L2CAPSDUChannel) -> Void
    private let running: LockedValue<Running>
    private let onStop: @Sendable (BLEAdvertisingSession) -> Void
    private let gatt: BLEGATTPublication?

    init(
        advertising: BLERadioHandle, server: BLEL2CAPServer, advertisement: BLEAdvertisement, radio: any BLERadio,
        accept: @escaping @Sendable (any L2CAPSDUChannel) -> Void, gatt: BLEGATTPublication?, advertisedName: String,
        onStop: @escaping @Sendable (BLEAdvertisingSession) -> Void
    ) {
        self.gatt = gatt
        self.running = LockedValue(Running(advertising: advertising, server: server))
        self.psm = server.psm
        self.advertisement = advertisement
        self.radio = radio
        self.accept = accept
        self.advertisedName = advertisedName
        self.onStop = onStop
    }

    /// Stops advertising and the channel server.
    package func stop() async {
        let (handle, server, first) = running.withLock { running in
            defer { running.stopped = true }
            return (running.advertising, running.server, !running.stopped)
        }
        guard first else { return }
        onStop(self)
        await handle.stop()
        await server.stop()
        await gatt?.stop()
    }

    /// Listens on the same PSM again (the old server went with the old host) and advertises the same data.
    func restart() async throws {
        let (old, stopped) = running.withLock { ($0, $0.stopped) }
        guard !stopped else { return }
        await old.advertising.stop()
        await old.server.stop()
        let server = try await radio.listen(psm: psm, onChannel: accept)
        if let gatt { try? await gatt.start() }
        let handle: BLERadioHandle
        do {
            handle = try await radio.startAdvertising(advertisement)
        } catch {
            let stoppedMeanwhile = running.withLock { running in
                running.server = server
                return running.stopped
            }
            if stoppedMeanwhile { await server.stop() }
            throw error
        }
        let stoppedMeanwhile = running.withLock { running in
            running.advertising = handle
            running.server = server
            return running.stopped
        }
        if stoppedMeanwhile {
            await handle.stop()
            await server.stop()
        }
    }
}
