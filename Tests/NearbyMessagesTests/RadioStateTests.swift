import Foundation
import NearbyCore
import NearbyWire
import NearbyConnections
import NearbyTesting
import Testing

@testable import NearbyMessages

/// Collects radio statuses.
final class RadioStatusCollector: Sendable {
    private let storage = LockedValue<[RadioStatus]>([])
    var statuses: [RadioStatus] { storage.withLock { $0 } }
    func append(_ status: RadioStatus) { storage.withLock { $0.append(status) } }
    func of(_ radio: RadioStatus.Radio) -> [RadioStatus] { statuses.filter { $0.radio == radio } }
}

/// A medium provider whose BLE can be broken and mended by the test (an in-memory air for both mediums).
final class SwitchableBluetooth: Sendable {
    let air = InMemoryMedium.Air()
    let failure = LockedValue<String?>(nil)

    var provider: MediumProvider {
        { [self] kind, _ in
            if kind == .ble, let text = failure.withLock({ $0 }) { throw NearbyError(.bluetoothUnavailable, text) }
            return InMemoryMedium(air: air, kind: kind)
        }
    }
}

@Suite("Radio-state handlers", .timeLimit(.minutes(5)))
struct RadioStateTests {
    @Test("problems are told apart by the system's words: permission, power (rfkill), otherwise unavailable")
    func classification() {
        let permission = NearbyError(.mediumUnavailable, "bind failed: \(String(cString: strerror(EPERM)))")
        let denied = NearbyError(.mediumUnavailable, "open", cause: NearbyError(.unknown, String(cString: strerror(EACCES))))
        let rfkill = NearbyError(.mediumUnavailable, "HCI: \(String(cString: strerror(132)))")
        #expect(RadioStatus.Problem(permission) == .permissionDenied)
        #expect(RadioStatus.Problem(denied) == .permissionDenied)
        #expect(RadioStatus.Problem(rfkill) == .poweredOff)
        #expect(RadioStatus.Problem(NearbyError(.mediumUnavailable, "connection refused")) == .unavailable)
    }

    @Test("each transition is reported once: a problem, a different problem, the clearing")
    func transitions() {
        var states = RadioStates()
        let refused = NearbyError(.bluetoothUnavailable, "connection refused")
        #expect(states.working(.bluetooth) == nil)
        #expect(states.problem(.bluetooth, refused)?.hasError == true)
        #expect(states.problem(.bluetooth, refused) == nil)
        let power = states.problem(.bluetooth, NearbyError(.bluetoothUnavailable, "powered off"))
        #expect(power?.problem == .poweredOff)
        #expect(states.working(.mdns) == nil)
        #expect(states.working(.bluetooth) == RadioStatus(radio: .bluetooth, hasError: false))
        #expect(states.working(.bluetooth) == nil)
    }

    @Test("Bluetooth broken then mended: the handler hears the problem (permission) and its clearing",
          .timeLimit(.minutes(1)))
    func bluetoothOnOff() async throws {
        let bluetooth = SwitchableBluetooth()
        let manager = try testManager("radio", mediums: bluetooth.provider)
        let collector = RadioStatusCollector()
        manager.radioStatusHandler = { collector.append($0) }
        let options = PublishOptions(strategy: MessageStrategy(mediums: .all), ttl: nil)

        bluetooth.failure.withLock { $0 = "HCI user channel hci:0: bind failed: \(String(cString: strerror(EPERM)))" }
        let first = try await manager.publish(Message(text: "one"), options: options)
        #expect(first.mediums == [.wifiLAN])
        #expect(collector.of(.bluetooth).map(\.hasError) == [true])
        #expect(collector.of(.bluetooth).first?.problem == .permissionDenied)
        let again = try await manager.publish(Message(text: "two"), options: options)  // still broken: no repeat
        #expect(collector.of(.bluetooth).count == 1)

        bluetooth.failure.withLock { $0 = nil }
        let mended = try await manager.publish(Message(text: "three"), options: options)
        #expect(Set(mended.mediums) == [.wifiLAN, .ble])
        #expect(collector.of(.bluetooth).map(\.hasError) == [true, false])
        for publication in [first, again, mended] { await publication.cancel() }
    }
}
