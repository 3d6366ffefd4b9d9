import Foundation
import Logging
import NearbyBLE
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// Controllers behind scripted transports that the test can lose and refuse: each open makes a new one.
final class ScriptedControllers: Sendable {
    let transports = LockedValue<[ScriptedHCITransport]>([])
    let refusing = LockedValue(false)

    func open() async throws -> BLEHost {
        if refusing.withLock({ $0 }) {
            throw NearbyError(.mediumUnavailable, "cannot connect to tcp:127.0.0.1:9: Connection refused")
        }
        let transport = ScriptedHCITransport(extended: true)
        transports.withLock { $0.append(transport) }
        let host = BLEHost(transport: transport, configuration: .init(), clock: .continuous, logger: Logger(label: "test"))
        try await host.start()
        return host
    }

    func transport(_ index: Int) -> ScriptedHCITransport? {
        transports.withLock { $0.count > index ? $0[index] : nil }
    }
}

/// The user-space host's recovery, deterministic: a scripted controller's transport fails, reopening is refused
/// once and then works (retries on a `ManualClock`); the BLE medium advertises the same data and scans again, and
/// the Connections manager's `bluetoothStatusHandler` hears the problem and its clearing once each.
@Suite(.timeLimit(.minutes(5))) struct HostTransportRecoveryTests {
    @Test func aLostTransportIsReopenedAndAdvertisingAndScanningResume() async throws {
        let clock = ManualClock()
        let controllers = ScriptedControllers()
        let radio = UserSpaceHostRadio(
            transport: .tcp(host: "127.0.0.1", port: 9), clock: NearbyClock(clock),
            backoff: .init(initial: .seconds(1), maximum: .seconds(4)), logger: Logger(label: "test"),
            open: { try await controllers.open() })
        var configuration = BLEMedium.Configuration()
        configuration.clock = NearbyClock(clock)
        let medium = BLEMedium(radio: radio, configuration: configuration)
        let manager = ConnectionManager(
            serviceID: "svc", strategy: .pointToPoint, options: ConnectionOptions(drivers: [medium]))
        let statuses = LockedValue<[BluetoothStatus]>([])
        manager.bluetoothStatusHandler = { status in statuses.withLock { $0.append(status) } }

        let session = try await medium.startAdvertising(
            AdvertisingRequest(serviceID: "svc", endpointID: "ABCD", endpointInfo: [1, 2, 3], pcp: .p2pPointToPoint),
            onIncoming: { _ in })
        let discovery = Task { for try await _ in medium.discover(serviceID: "svc", pcp: .p2pPointToPoint) {} }
        defer { discovery.cancel() }
        let first = try #require(controllers.transport(0))
        _ = try await eventually(within: 10, "advertising and scanning on the first controller") {
            first.commands.contains(.leSetExtendedScanEnable) || first.commands.contains(.leSetScanEnable) ? true : nil
        }
        let firstData = await advertisingData(first)

        controllers.refusing.withLock { $0 = true }
        first.fail(NearbyError(.mediumUnavailable, "the HCI transport was closed"))
        let problem = try await eventually(within: 10, "the problem reported") { statuses.withLock { $0.first } }
        #expect(problem == BluetoothStatus(hasError: true, problem: .unavailable))

        // The first retry is refused (same kind of problem: not reported again); the second one works.
        await clock.waitForSleepers(atLeast: 1)
        clock.advanceToNextDeadline()
        await clock.waitForSleepers(atLeast: 1)
        #expect(controllers.transport(1) == nil)
        controllers.refusing.withLock { $0 = false }
        clock.advanceToNextDeadline()
        _ = try await eventually(within: 10, "the clearing reported") {
            statuses.withLock { $0.count == 2 ? true : nil }
        }
        #expect(statuses.withLock { $0 } == [
            BluetoothStatus(hasError: true, problem: .unavailable), BluetoothStatus(hasError: false),
        ])
        let second = try #require(controllers.transport(1))
        #expect(second.commands.first == .reset)
        _ = try await eventually(within: 10, "scanning again on the reopened controller") {
            second.commands.contains(.leSetExtendedScanEnable) || second.commands.contains(.leSetScanEnable) ? true : nil
        }
        #expect(await advertisingData(second) == firstData)
        await session.stop()
        await medium.shutdown()
    }

    /// A radio its owner lets go of without `shutdown()` (a released `ConnectionManager` releases its BLE medium)
    /// closes its controller's transport, and its host goes away: before, the host held itself through the radio's
    /// failure observer, so every released radio kept its host, the host's reader task and the controller
    /// connection (the lifecycle stress test's memory grew by about 19 KB a cycle).
    @Test func aReleasedRadioClosesItsControllerAndItsHostGoesAway() async throws {
        let controllers = ScriptedControllers()
        var radio: UserSpaceHostRadio? = UserSpaceHostRadio(
            transport: .tcp(host: "127.0.0.1", port: 9), clock: .continuous, logger: Logger(label: "test"),
            open: { try await controllers.open() })
        let host: WeakHost
        do { host = WeakHost(try await radio!.host()) }
        let transport = try #require(controllers.transport(0))
        #expect(!transport.isClosed)
        radio = nil
        _ = try await eventually(within: 10, "the released radio's transport closed") { transport.isClosed ? true : nil }
        _ = try await eventually(within: 10, "the released radio's host gone") { host.value == nil ? true : nil }
    }

    /// The data of the first advertising-data command the host wrote (legacy or extended).
    private func advertisingData(_ transport: ScriptedHCITransport) async -> [UInt8] {
        let opcodes = [HCIOpcode.leSetAdvertisingData.rawValue, HCIOpcode.leSetExtendedAdvertisingData.rawValue]
        let packet = await transport.nextWrite { packet in
            guard case .command(let body) = packet, body.count >= 2 else { return false }
            return opcodes.contains(UInt16(body[0]) | UInt16(body[1]) << 8)
        }
        guard case .command(let body) = packet else { return [] }
        return Array(body.dropFirst(3))
    }
}

/// A host that the test does not keep alive.
private final class WeakHost: Sendable {
    weak let value: BLEHost?
    init(_ value: BLEHost) { self.value = value }
}
