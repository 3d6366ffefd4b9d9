import Foundation
import NearbyBLE
import NearbyConnections
import NearbyWire
import Testing

/// The pure parts of radio-state recovery: the user-space host's retry machine, the reading of problems from
/// errors, and the tracker that turns radio states into Bluetooth statuses once per transition.
@Suite(.timeLimit(.minutes(5))) struct RadioRecoveryUnitTests {
    private let lost = NearbyError(.mediumUnavailable, "the HCI transport was closed")

    @Test func backoffDoublesUpToItsMaximum() {
        let backoff = HostRecovery.Backoff(initial: .milliseconds(250), maximum: .seconds(2))
        #expect((1...6).map { backoff.delay(attempt: $0) } == [
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(2), .seconds(2),
        ])
    }

    @Test func aLostTransportIsReportedAndReopenedWithBackoff() {
        var machine = HostRecovery(backoff: .init(initial: .milliseconds(100), maximum: .seconds(1)))
        #expect(machine.needed() == [.open])
        #expect(machine.needed() == [])  // one open at a time
        #expect(machine.opened() == [.report(.powered)])
        #expect(machine.needed() == [])

        let down = machine.hostFailed(lost)
        #expect(down == [.report(.unavailable(lost)), .scheduleRetry(after: .milliseconds(100), generation: 2)])
        #expect(machine.hostFailed(lost) == [])  // reported once
        #expect(machine.retryTimerFired(generation: 1) == [])  // a stale timer
        #expect(machine.retryTimerFired(generation: 2) == [.open])
        let refused = NearbyError(.mediumUnavailable, "connection refused")
        #expect(machine.openFailed(refused) == [
            .report(.unavailable(refused)), .scheduleRetry(after: .milliseconds(200), generation: 4),
        ])
        #expect(machine.retryTimerFired(generation: 4) == [.open])
        #expect(machine.opened() == [.report(.powered)])
        // The backoff starts over after a success.
        #expect(machine.hostFailed(lost) == [
            .report(.unavailable(lost)), .scheduleRetry(after: .milliseconds(100), generation: 6),
        ])
        // Using the radio while waiting opens at once; the pending timer is then stale.
        #expect(machine.needed() == [.open])
        #expect(machine.retryTimerFired(generation: 6) == [])
    }

    @Test func aFirstOpenThatFailsIsReportedButNotRetriedByItself() {
        var machine = HostRecovery()
        let denied = NearbyError(.mediumUnavailable, "HCI user channel: Operation not permitted")
        #expect(machine.needed() == [.open])
        #expect(machine.openFailed(denied) == [.report(.unavailable(denied))])
        #expect(machine.needed() == [.open])  // the next use tries again
    }

    @Test func shutdownDropsPendingRetries() {
        var machine = HostRecovery()
        _ = machine.needed()
        _ = machine.opened()
        #expect(machine.hostFailed(lost).last == .scheduleRetry(after: .milliseconds(250), generation: 2))
        machine.shutDown()
        #expect(machine.retryTimerFired(generation: 2) == [])
        #expect(machine.hostFailed(lost) == [])
        #expect(machine.needed() == [.open])
    }

    @Test(arguments: [
        ("BlueZ adapter hci0 is powered off (or blocked by rfkill)", BLERadioProblem.poweredOff),
        ("org.bluez.Error.Blocked: Operation not possible due to RF-kill", .poweredOff),
        ("RegisterAdvertisement failed: org.bluez.Error.Blocked", .poweredOff),
        ("cannot open the HCI user channel of hci0: Operation not permitted", .permissionDenied),
        ("L2CAP socket: Permission denied", .permissionDenied),
        ("org.freedesktop.DBus.Error.AccessDenied: Rejected send message", .permissionDenied),
        ("the HCI transport was closed", .unavailable),
        ("bluetoothd is not on the system bus (BlueZ adapter hci0)", .unavailable),
        ("BlueZ has no adapter hci1", .unavailable),
    ])
    func problemsAreReadFromTheSystemsWords(message: String, expected: BLERadioProblem) {
        #expect(BLERadioProblem(classifying: NearbyError(.mediumUnavailable, message)) == expected)
    }

    @Test func aCauseCanTellThePermissionProblem() {
        let cause = NearbyError(.mediumUnavailable, "bind: Operation not permitted")
        let error = NearbyError(.mediumUnavailable, "the BLE controller cannot be used", cause: cause)
        #expect(BLERadioProblem(classifying: error) == .permissionDenied)
    }

    @Test func statusesAreReportedOncePerTransition() {
        var tracker = BluetoothStatusTracker()
        let off = NearbyError(.bluetoothUnavailable, "BlueZ adapter hci0 is powered off (or blocked by rfkill)")
        let gone = NearbyError(.bluetoothUnavailable, "bluetoothd is not on the system bus")
        #expect(tracker.receive(.powered) == nil)  // fine all along: nothing to clear
        #expect(tracker.receive(.unavailable(off)) == BluetoothStatus(hasError: true, problem: .poweredOff))
        #expect(tracker.receive(.unavailable(off)) == nil)
        #expect(tracker.hasError)
        #expect(tracker.receive(.unavailable(gone)) == BluetoothStatus(hasError: true, problem: .unavailable))
        #expect(tracker.receive(.powered) == BluetoothStatus(hasError: false))
        #expect(tracker.receive(.powered) == nil)
        #expect(!tracker.hasError)
        let status = tracker.receive(.unavailable(lost))
        #expect(status?.error?.message == lost.message)
        #expect(status?.description.hasPrefix("unavailable") == true)
    }

    @Test func theBroadcastStartsWithTheCurrentStateAndDropsRepeats() async {
        let broadcast = RadioStateBroadcast()
        #expect(broadcast.publish(.powered))
        #expect(!broadcast.publish(.powered))
        var iterator = broadcast.stream().makeAsyncIterator()
        #expect(broadcast.publish(.unavailable(lost)))
        #expect(broadcast.publish(.powered))
        broadcast.finish()
        var seen: [String] = []
        while let state = await iterator.next() { seen.append(state.problem?.rawValue ?? "powered") }
        #expect(seen == ["powered", "unavailable", "powered"])
        #expect(broadcast.poweredCount == 2)
    }
}
