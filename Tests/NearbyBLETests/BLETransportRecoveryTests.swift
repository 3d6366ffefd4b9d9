import Foundation
import NearbyBLE
import NearbyConnections
import NearbyCore
import NearbyMessages
import NearbyTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `Tests/BLE/tcp_proxy.py` between our host and a Bumble virtual controller: SIGUSR1 cuts it, SIGUSR2 restores it.
struct CuttableTransport {
    let process: RigProcess
    let port: Int

    static func start(to targetPort: Int) async throws -> CuttableTransport {
        let process = try RigProcess.python("tcp_proxy.py", [String(targetPort)])
        let words = try await process.waitForLine("READY")
        guard let port = words.first.flatMap(Int.init) else { throw RigFailure("tcp_proxy printed \(words)") }
        return CuttableTransport(process: process, port: port)
    }

    var hci: String { "tcp:127.0.0.1:\(port)" }

    func cut(_ count: Int) async throws {
        _ = Glibc.kill(process.pid, SIGUSR1)
        _ = try await process.waitForLine("CUT \(count)")
    }

    func restore(_ count: Int) async throws {
        _ = Glibc.kill(process.pid, SIGUSR2)
        _ = try await process.waitForLine("RESTORED \(count)")
    }
}

/// Issue 13's "drop/restore the HCI transport": a Messages subscription over BLE whose controller is reached through
/// a proxy that the test cuts and restores. Bluetooth is reported unavailable, then cleared, and the subscription
/// finds the publication again without a new process or a new subscription.
@Suite(
    "BLE transport recovery", .serialized,
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"), .timeLimit(.minutes(5)))
struct BLETransportRecoveryTests {
    @Test func aSubscriptionFindsThePublicationAgainAfterTheTransportIsRestored() async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let proxy = try await CuttableTransport.start(to: controllers.ports[1])
        defer { proxy.process.kill() }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-ble-cut-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        func manager(_ hci: String) throws -> MessageManager {
            MessageManager(
                serviceID: "com.example.ble-recovery", logger: BLETestEnvironment.logger("messages"),
                consent: ConsentStore(directory: scratch), permissionRequest: { .grantForThisRun },
                bluetoothController: try BluetoothController(hci))
        }
        let bleOnly = MessageStrategy(mediums: .ble)
        let publisher = try manager(controllers.hci(0))
        let subscriber = try manager(proxy.hci)
        let statuses = LockedValue<[RadioStatus]>([])
        subscriber.radioStatusHandler = { status in statuses.withLock { $0.append(status) } }
        let message = Message(text: "still here", namespace: "chat", type: "line")
        let publication = try await publisher.publish(message, options: PublishOptions(strategy: bleOnly))
        let subscription = try await subscriber.subscribe(options: SubscribeOptions(strategy: bleOnly))
        let events = LockedValue<[MessageEvent]>([])
        let collecting = Task { for await event in subscription { events.withLock { $0.append(event) } } }
        defer { collecting.cancel() }
        func count(_ kind: MessageEvent.Kind) -> Int { events.withLock { $0.filter { $0.kind == kind }.count } }
        _ = try await eventually(within: 30, "the message found over BLE") { count(.found) == 1 ? true : nil }

        try await proxy.cut(1)
        let problem = try await eventually(within: 20, "Bluetooth reported unavailable") {
            statuses.withLock { $0.first { $0.radio == .bluetooth && $0.hasError } }
        }
        #expect(problem.problem == .unavailable)
        // Nothing is heard while the transport is gone: the publication is lost after the BLE lost timeout.
        _ = try await eventually(within: 40, "the message lost while cut") { count(.lost) == 1 ? true : nil }

        try await proxy.restore(1)
        _ = try await eventually(within: 30, "Bluetooth reported cleared") {
            statuses.withLock { $0.contains { $0.radio == .bluetooth && !$0.hasError } } ? true : nil
        }
        let found = try await eventually(within: 40, "the message found again") {
            events.withLock { $0.filter { $0.kind == .found }.dropFirst().first }
        }
        #expect(found.message == message)
        #expect(statuses.withLock { $0.filter { $0.radio == .bluetooth }.map(\.hasError) } == [true, false])
        await subscription.cancel()
        await publication.cancel()
    }
}
