import Foundation
import NearbyBLE
import NearbyConnections
import NearbyCore
import NearbyMessages
import NearbyTestSupport
import Testing

/// Discovery modes over BLE only, on Bumble virtual controllers: the two single-mode crossings (a publication that
/// only broadcasts found by a subscription that only scans, and a publication that only scans delivering to a
/// subscription that only broadcasts). The other pairings run over Wi-Fi LAN and in memory (NearbyMessagesTests).
@Suite(
    "Messages discovery modes over BLE", .serialized,
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"))
struct MessagesDiscoveryModesBLETests {
    private func manager(_ hci: String, _ scratch: URL) throws -> MessageManager {
        MessageManager(
            serviceID: "com.example.ble-modes", logger: BLETestEnvironment.logger("modes"),
            consent: ConsentStore(directory: scratch), permissionRequest: { .grantForThisRun },
            bluetoothController: try BluetoothController(hci))
    }

    @Test(arguments: [
        (MessageStrategy.Mode.broadcast, MessageStrategy.Mode.scan), (MessageStrategy.Mode.scan, MessageStrategy.Mode.broadcast),
    ])
    func singleModesCross(publication pubMode: MessageStrategy.Mode, subscription subMode: MessageStrategy.Mode) async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-ble-modes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        var subscribeOptions = SubscribeOptions(strategy: MessageStrategy(mediums: .ble, mode: subMode))
        subscribeOptions.discoveryMode = subMode
        let subscription = try await manager(controllers.hci(1), scratch).subscribe(options: subscribeOptions)
        let events = LockedValue<[MessageEvent]>([])
        let collecting = Task { for await event in subscription.events { events.withLock { $0.append(event) } } }
        defer { collecting.cancel() }
        let message = Message(text: "mode \(pubMode.rawValue) to \(subMode.rawValue)", namespace: "modes", type: "ble")
        let publication = try await manager(controllers.hci(0), scratch).publish(
            message, options: PublishOptions(strategy: MessageStrategy(mediums: .ble, mode: pubMode)))
        let found = try await eventually(within: 45, "the message found over BLE") {
            events.withLock { $0.first { $0.kind == .found } }
        }
        #expect(found.message == message)
        await publication.cancel()
        await subscription.cancel()
    }
}
