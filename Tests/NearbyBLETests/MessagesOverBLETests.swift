import Foundation
import NearbyBLE
import NearbyConnections
import NearbyMessages
import NearbyTestSupport
import NearbyCore
import Testing

/// Nearby Messages with the BLE medium only: a publication on one virtual controller is found by a subscription on
/// another, and lost when it stops.
@Suite(
    "Messages over BLE", .serialized,
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"), .timeLimit(.minutes(5)))
struct MessagesOverBLETests {
    private func manager(_ hci: String, _ scratch: URL) throws -> MessageManager {
        MessageManager(
            serviceID: "com.example.ble-messages", logger: BLETestEnvironment.logger("messages"),
            consent: ConsentStore(directory: scratch), permissionRequest: { .grantForThisRun },
            bluetoothController: try BluetoothController(hci))
    }

    @Test func publishOverBLEIsFoundThenLost() async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-ble-msg-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let bleOnly = MessageStrategy(mediums: .ble)
        let publisher = try manager(controllers.hci(0), scratch)
        let subscriber = try manager(controllers.hci(1), scratch)
        let message = Message(text: "over the air", namespace: "chat", type: "line")
        let publication = try await publisher.publish(message, options: PublishOptions(strategy: bleOnly))
        let subscription = try await subscriber.subscribe(options: SubscribeOptions(strategy: bleOnly))
        let events = LockedValue<[MessageEvent]>([])
        let collecting = Task { for await event in subscription { events.withLock { $0.append(event) } } }
        defer { collecting.cancel() }
        let found = try await eventually(within: 30, "the message found over BLE") {
            events.withLock { $0.first { $0.kind == .found } }
        }
        #expect(found.message == message)
        await publication.cancel()
        // Lost once the advertisement has been unseen for the BLE medium's lost timeout (12 s by default).
        _ = try await eventually(within: 40, "the message lost") { events.withLock { $0.contains { $0.kind == .lost } } ? true : nil }
        await subscription.cancel()
    }
}
