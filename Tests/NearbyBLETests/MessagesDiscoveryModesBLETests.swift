import Foundation
import NearbyBLE
import NearbyConnections
import NearbyCore
import NearbyMessages
import NearbyTestSupport
import Testing

/// Discovery modes over BLE only, on Bumble virtual controllers: all nine pairings of a publication's and a
/// subscription's modes. Seven find the message (one side broadcasts, the other scans); the two that must not
/// (both only broadcast, both only scan) are checked against a control subscription on a third controller that
/// does find the publication, so the pair had the same chance. The same matrix runs over Wi-Fi LAN and in memory
/// (NearbyMessagesTests).
@Suite(
    "Messages discovery modes over BLE", .serialized, .timeLimit(.minutes(2)),
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
        (MessageStrategy.Mode.both, MessageStrategy.Mode.both), (MessageStrategy.Mode.both, MessageStrategy.Mode.scan),
        (MessageStrategy.Mode.both, MessageStrategy.Mode.broadcast), (MessageStrategy.Mode.broadcast, MessageStrategy.Mode.both),
        (MessageStrategy.Mode.scan, MessageStrategy.Mode.both),
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
        let found = try await withControllerOutput(controllers) {
            try await eventually(within: 45, "the message found over BLE") {
                events.withLock { $0.first { $0.kind == .found } }
            }
        }
        #expect(found.message == message)
        await publication.cancel()
        await subscription.cancel()
    }

    /// Both only broadcast, or both only scan: never found. A control subscription (on a third controller) in the
    /// mode that does pair with the publication finds it first, so the publication was on the air, or delivering,
    /// while the subscription under test was running.
    @Test(arguments: [
        (MessageStrategy.Mode.broadcast, MessageStrategy.Mode.broadcast, MessageStrategy.Mode.scan),
        (MessageStrategy.Mode.scan, MessageStrategy.Mode.scan, MessageStrategy.Mode.broadcast),
    ])
    func sameSingleModesNeverMeet(
        publication pubMode: MessageStrategy.Mode, subscription subMode: MessageStrategy.Mode,
        control controlMode: MessageStrategy.Mode
    ) async throws {
        let controllers = try await VirtualControllers.start(3)
        defer { controllers.stop() }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-ble-modes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        func subscribe(_ mode: MessageStrategy.Mode, on hci: String) async throws -> (Subscription, LockedValue<[MessageEvent]>, Task<Void, Never>) {
            var options = SubscribeOptions(strategy: MessageStrategy(mediums: .ble, mode: mode))
            options.discoveryMode = mode
            let subscription = try await manager(hci, scratch).subscribe(options: options)
            let events = LockedValue<[MessageEvent]>([])
            let task = Task { for await event in subscription.events { events.withLock { $0.append(event) } } }
            return (subscription, events, task)
        }
        let (tested, testedEvents, testedTask) = try await subscribe(subMode, on: controllers.hci(1))
        defer { testedTask.cancel() }
        let message = Message(text: "mode \(pubMode.rawValue) alone", namespace: "modes", type: "ble")
        let publication = try await manager(controllers.hci(0), scratch).publish(
            message, options: PublishOptions(strategy: MessageStrategy(mediums: .ble, mode: pubMode)))
        let (control, controlEvents, controlTask) = try await subscribe(controlMode, on: controllers.hci(2))
        defer { controlTask.cancel() }
        let found = try await withControllerOutput(controllers) {
            try await eventually(within: 45, "the control subscription finds the message") {
                controlEvents.withLock { $0.first { $0.kind == .found } }
            }
        }
        #expect(found.message == message)
        #expect(!testedEvents.withLock { $0.contains { $0.kind == .found } }, "\(testedEvents.withLock { $0 })")
        await publication.cancel()
        await control.cancel()
        await tested.cancel()
    }

    /// Runs `body`; when it throws, the virtual controllers' own output (Bumble's errors) goes with the failure.
    private func withControllerOutput<T>(_ controllers: VirtualControllers, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            Issue.record("the controllers printed:\n\(controllers.process.output.suffix(4000))")
            throw error
        }
    }
}
