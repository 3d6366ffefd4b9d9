import Foundation
import NearbyCore
import NearbyWire
import NearbyConnections
import NearbyTesting
import Testing

@testable import NearbyMessages

@Suite("Google-shaped API", .timeLimit(.minutes(5)))
struct GNSAPITests {
    /// A manager on `air` whose own consent request denies, so only the GNS permission request can grant.
    static func manager(_ air: InMemoryMedium.Air, consent: ConsentStore) -> MessageManager {
        MessageManager(
            serviceID: "gns", consent: consent, permissionRequest: { .deny },
            mediums: { kind, _ in InMemoryMedium(air: air, kind: kind) })
    }

    @Test("publication(with:paramsBlock:) and subscription(messageFoundHandler:messageLostHandler:paramsBlock:)",
          .timeLimit(.minutes(1)))
    func publishAndSubscribe() async throws {
        let air = InMemoryMedium.Air()
        let consent = ConsentStore(directory: try temporaryDirectory("gns"))
        try consent.setGranted(true)
        let publisher = GNSMessageManager(messageManager: Self.manager(air, consent: consent), params: GNSMessageManagerParams())
        let subscriber = GNSMessageManager(messageManager: Self.manager(air, consent: consent), params: GNSMessageManagerParams())
        let found = LockedValue<[Message]>([])
        let lost = LockedValue<[Message]>([])
        let statuses = LockedValue<[GNSOperationStatus]>([])
        let subscription = subscriber.subscription(
            messageFoundHandler: { message in found.withLock { $0.append(message) } },
            messageLostHandler: { message in lost.withLock { $0.append(message) } },
            paramsBlock: { params in
                params.strategy.mediums = .wifiLAN
                params.discoveryMode = .broadcast
                params.messageNamespace = "gns"
            })
        let message = Message(text: "from a GNS publication", namespace: "gns", type: "t")
        var publication: GNSPublication? = publisher.publication(with: message) { params in
            params.strategy.mediums = .wifiLAN
            params.discoveryMode = .scan
            params.statusHandler = { status in statuses.withLock { $0.append(status) } }
        }
        #expect(await eventually(30) { found.withLock { $0 } == [message] })
        #expect(statuses.withLock { $0 } == [.starting, .active])
        #expect(publication?.publication?.delivery != nil)
        await publication?.cancel()
        publication = nil
        #expect(statuses.withLock { $0 } == [.starting, .active, .inactive])
        await subscription.cancel()
    }

    @Test("the permission request handler decides when consent is missing", .timeLimit(.minutes(1)))
    func permissionRequest() async throws {
        let air = InMemoryMedium.Air()
        let consent = ConsentStore(directory: try temporaryDirectory("gns-consent"))
        let manager = GNSMessageManager(messageManager: Self.manager(air, consent: consent), params: GNSMessageManagerParams())
        let refused = LockedValue<[GNSOperationStatus]>([])
        let denied = manager.publication(with: Message(text: "no")) { params in
            params.strategy.mediums = .wifiLAN
            params.permissionRequestHandler = { answer in answer(false) }
            params.statusHandler = { status in refused.withLock { $0.append(status) } }
        }
        #expect(await eventually(30) { refused.withLock { $0 } == [.starting, .inactive] })
        #expect(!consent.isGranted && denied.publication == nil)

        let accepted = LockedValue<[GNSOperationStatus]>([])
        let granted = manager.publication(with: Message(text: "yes")) { params in
            params.strategy.mediums = .wifiLAN
            params.permissionRequestHandler = { answer in answer(true) }
            params.statusHandler = { status in accepted.withLock { $0.append(status) } }
        }
        #expect(await eventually(30) { accepted.withLock { $0 } == [.starting, .active] })
        #expect(consent.isGranted)
        await granted.cancel()
    }

    @Test("a permission request that never calls back ends when the handle is cancelled or released; late and second answers are ignored",
          .timeLimit(.minutes(1)))
    func unansweredPermissionRequest() async throws {
        let air = InMemoryMedium.Air()
        let consent = ConsentStore(directory: try temporaryDirectory("gns-unanswered"))
        let manager = GNSMessageManager(messageManager: Self.manager(air, consent: consent), params: GNSMessageManagerParams())
        let pending = LockedValue<[GNSPermissionHandler]>([])

        // Cancelled while the request is unanswered: the start ends as refused.
        let cancelled = LockedValue<[GNSOperationStatus]>([])
        let first = manager.publication(with: Message(text: "never answered")) { params in
            params.strategy.mediums = .wifiLAN
            params.permissionRequestHandler = { answer in pending.withLock { $0.append(answer) } }
            params.statusHandler = { status in cancelled.withLock { $0.append(status) } }
        }
        #expect(await eventually(30) { pending.withLock { $0.count } == 1 })
        await first.cancel()
        #expect(await eventually(30) { cancelled.withLock { $0 } == [.starting, .inactive] })
        #expect(first.publication == nil)

        // Released while unanswered: the start ends too, without the handle.
        let released = LockedValue<[GNSOperationStatus]>([])
        var second: GNSSubscription? = manager.subscription(messageFoundHandler: { _ in }, messageLostHandler: { _ in }) { params in
            params.strategy.mediums = .wifiLAN
            params.permissionRequestHandler = { answer in pending.withLock { $0.append(answer) } }
            params.statusHandler = { status in released.withLock { $0.append(status) } }
        }
        #expect(await eventually(30) { pending.withLock { $0.count } == 2 })
        #expect(second != nil)
        second = nil
        #expect(await eventually(30) { released.withLock { $0 } == [.starting, .inactive] })

        // The app answers late, and twice: ignored (a second call used to resume a continuation twice).
        for answer in pending.withLock({ $0 }) {
            answer(true)
            answer(true)
        }
        #expect(!consent.isGranted)
        #expect(cancelled.withLock { $0 } == [.starting, .inactive] && released.withLock { $0 } == [.starting, .inactive])
    }

    @Test("radio problems reach Google's power and permission handlers, with false once cleared", .timeLimit(.minutes(1)))
    func radioHandlers() async throws {
        let bluetooth = SwitchableBluetooth()
        let power = LockedValue<[Bool]>([])
        let permission = LockedValue<[Bool]>([])
        let params = GNSMessageManagerParams()
        params.bluetoothPowerErrorHandler = { hasError in power.withLock { $0.append(hasError) } }
        params.bluetoothPermissionErrorHandler = { hasError in permission.withLock { $0.append(hasError) } }
        let manager = GNSMessageManager(messageManager: try testManager("gns-radio", mediums: bluetooth.provider), params: params)
        let options = PublishOptions(strategy: MessageStrategy(mediums: .all), ttl: nil)
        bluetooth.failure.withLock { $0 = "HCI: \(String(cString: strerror(132)))" }  // ERFKILL: powered off
        let off = try await manager.messageManager.publish(Message(text: "a"), options: options)
        bluetooth.failure.withLock { $0 = nil }
        let on = try await manager.messageManager.publish(Message(text: "b"), options: options)
        #expect(power.withLock { $0 } == [true, false])
        #expect(permission.withLock { $0 }.isEmpty)
        await off.cancel()
        await on.cancel()
    }

    @Test("microphone problems of the audio medium reach microphonePermissionErrorHandler; speaker problems do not")
    func microphoneHandler() throws {
        let microphone = LockedValue<[Bool]>([])
        let params = GNSMessageManagerParams()
        params.microphonePermissionErrorHandler = { hasError in microphone.withLock { $0.append(hasError) } }
        let manager = GNSMessageManager(messageManager: try testManager("gns-microphone"), params: params)
        let report = try #require(manager.messageManager.audioStatusHandler)
        report(AudioDeviceStatus(device: .microphone, hasError: true, problem: .permissionDenied))
        report(AudioDeviceStatus(device: .speaker, hasError: true, problem: .deviceBusy))
        report(AudioDeviceStatus(device: .microphone, hasError: false))
        #expect(microphone.withLock { $0 } == [true, false])
    }

    @Test("GNSPermission's changed handler hears consent granted and revoked by another process")
    func permissionAcrossProcesses() async throws {
        let directory = try temporaryDirectory("gns-permission")
        let store = ConsentStore(directory: directory)
        let changes = LockedValue<[Bool]>([])
        let permission = GNSPermission(changedHandler: { granted in changes.withLock { $0.append(granted) } }, consent: store)
        defer { withExtendedLifetime(permission) {} }
        for (word, expected) in [("granted", [true]), ("denied", [true, false])] {
            // Another process writes the file as ConsentStore does: a temporary file renamed over it.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "printf '%s\\n' \"$1\" > \"$2/.w\" && mv \"$2/.w\" \"$2/consent\"", "sh", word, directory.path]
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            #expect(await eventually(10) { changes.withLock { $0 } == expected }, "\(changes.withLock { $0 })")
        }
        // Another store of the same file (as another process's would be) grants: heard once.
        try ConsentStore(directory: directory).setGranted(true)
        #expect(await eventually(10) { changes.withLock { $0 } == [true, false, true] })
        #expect(GNSPermission.isGranted(in: store))
    }
}
