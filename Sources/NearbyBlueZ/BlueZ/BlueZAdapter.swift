import Logging
import NearbyWire

/// BlueZ's D-Bus names.
package enum BlueZ {
    /// The bus name `bluetoothd` owns.
    package static let service = "org.bluez"
    /// `org.bluez.Adapter1`.
    package static let adapterInterface = "org.bluez.Adapter1"
    /// `org.bluez.Device1`.
    package static let deviceInterface = "org.bluez.Device1"
    /// `org.bluez.LEAdvertisingManager1`.
    package static let advertisingManagerInterface = "org.bluez.LEAdvertisingManager1"
    /// `org.bluez.LEAdvertisement1`.
    package static let advertisementInterface = "org.bluez.LEAdvertisement1"
    /// `org.freedesktop.DBus.Properties`.
    package static let propertiesInterface = "org.freedesktop.DBus.Properties"
    /// `org.freedesktop.DBus.ObjectManager`.
    package static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    /// `org.bluez.GattService1` (a peer's service, as a GATT client sees it).
    package static let gattServiceInterface = "org.bluez.GattService1"
    /// `org.bluez.GattCharacteristic1`.
    package static let gattCharacteristicInterface = "org.bluez.GattCharacteristic1"

    /// The 128-bit UUID string BlueZ uses for a 16-bit UUID (`0xFEF3` → `0000fef3-0000-1000-8000-00805f9b34fb`).
    package static func uuid(_ short: UInt16) -> String {
        let hex = String(short, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex + "-0000-1000-8000-00805f9b34fb"
    }

    /// Whether `bluetoothd` is on the bus.
    package static func isReachable(on client: DBusClient) async -> Bool {
        (try? await client.nameHasOwner(service)) ?? false
    }
}

/// One BlueZ adapter followed through `org.bluez`'s object manager: found by name (`hci0`) or as the default
/// (lowest index), its `Powered` state, its removal and return, and `bluetoothd` leaving and coming back
/// (`NameOwnerChanged`). Every change is reported through `events()` and reflected in `state`.
package actor BlueZAdapter {
    /// The bus connection.
    package nonisolated let client: DBusClient
    /// How long each D-Bus call and registration on bluetoothd's behalf may take (``BlueZ/callTimeout``).
    package nonisolated let callTimeout: Duration
    private let logger: Logger
    private var tracker: BlueZAdapterTracker
    private var listeners: [Int: AsyncStream<BlueZAdapterEvent>.Continuation] = [:]
    private var nextListener = 0
    private var watcher: Task<Void, Never>?

    private init(client: DBusClient, name: String?, logger: Logger, callTimeout: Duration) {
        self.client = client
        self.callTimeout = callTimeout
        self.logger = logger
        self.tracker = BlueZAdapterTracker(wantedName: name)
    }

    /// Starts following the adapter `name` (nil: the default one). It does not fail when `bluetoothd` or the
    /// adapter is missing: `state` is nil then, and `events()` reports when it appears.
    /// Each D-Bus step waits at most `callTimeout`, here and in the advertisers and scanners made on this adapter.
    /// - Throws: `.mediumUnavailable` when the bus itself cannot be used, `.timeout` when it does not answer.
    package static func open(
        on client: DBusClient, name: String? = nil, logger: Logger = Logger(label: "nearby.bluez"),
        callTimeout: Duration = BlueZ.callTimeout
    ) async throws -> BlueZAdapter {
        let adapter = BlueZAdapter(client: client, name: name, logger: logger, callTimeout: callTimeout)
        try await adapter.start()
        return adapter
    }

    /// Finds the adapter now.
    /// - Throws: `.mediumUnavailable` when `bluetoothd` is not running or has no such adapter.
    package static func find(
        on client: DBusClient, name: String? = nil, logger: Logger = Logger(label: "nearby.bluez"),
        callTimeout: Duration = BlueZ.callTimeout
    ) async throws -> BlueZAdapter {
        let adapter = try await open(on: client, name: name, logger: logger, callTimeout: callTimeout)
        guard await adapter.state != nil else {
            await adapter.stop()
            let reachable = await BlueZ.isReachable(on: client)
            throw NearbyError(
                .mediumUnavailable,
                reachable ? "BlueZ has no adapter \(name ?? "(none at all)")" : "bluetoothd is not on the system bus")
        }
        return adapter
    }

    /// The adapter while it exists.
    package var state: BlueZAdapterState? { tracker.adapter }

    /// Whether `bluetoothd` is on the bus.
    package var daemonPresent: Bool { tracker.daemonPresent }

    /// The changes from now on.
    package func events() -> AsyncStream<BlueZAdapterEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: BlueZAdapterEvent.self)
        nextListener += 1
        let id = nextListener
        listeners[id] = continuation
        // Owner: none; a one-shot hop onto this actor (`onTermination` is synchronous), ending when
        // `removeListener` returns.
        continuation.onTermination = { _ in Task { await self.removeListener(id) } }
        return stream
    }

    /// Powers the adapter on or off (`Adapter1.Powered`).
    /// - Throws: `.mediumUnavailable` without an adapter, or BlueZ's refusal (e.g. rfkill: `org.bluez.Error.Blocked`).
    package func setPowered(_ on: Bool) async throws {
        guard let path = tracker.adapter?.path else { throw NearbyError(.mediumUnavailable, "no BlueZ adapter") }
        _ = try await callBlueZ(
            path: path, interface: BlueZ.propertiesInterface, member: "Set",
            arguments: [.string(BlueZ.adapterInterface), .string("Powered"), .variant(.boolean(on))])
    }

    /// Stops following (the event streams finish).
    package func stop() {
        watcher?.cancel()
        watcher = nil
        for listener in listeners.values { listener.finish() }
        listeners.removeAll()
    }

    private func removeListener(_ id: Int) {
        listeners[id] = nil
    }

    private func start() async throws {
        let signals = try await client.signals(matching: [
            .nameOwnerChanged(BlueZ.service),
            .objectManager(sender: BlueZ.service, member: "InterfacesAdded"),
            .objectManager(sender: BlueZ.service, member: "InterfacesRemoved"),
            .propertiesChanged(sender: BlueZ.service, pathNamespace: "/org/bluez", interface: BlueZ.adapterInterface),
        ], timeout: callTimeout)
        // signals(matching:) looked up org.bluez's owner, on the bus's word.
        if await client.isOwned(BlueZ.service) {
            await refresh()
        }
        // Owner: `watcher`; `stop()` cancels it. It ends then, or when the bus's signal stream ends (the client
        // closed).
        watcher = Task { [weak self] in
            for await signal in signals {
                await self?.handle(signal)
            }
        }
    }

    /// Reads the whole object tree again (at start and when `bluetoothd` comes back).
    private func refresh() async {
        do {
            let reply = try await callBlueZ(
                path: "/", interface: BlueZ.objectManagerInterface, member: "GetManagedObjects")
            guard let objects = reply.first?.managedObjects else {
                logger.warning("BlueZ GetManagedObjects returned no object tree")
                return
            }
            publish(tracker.snapshot(objects))
        } catch {
            logger.warning("BlueZ GetManagedObjects failed", metadata: ["error": "\(error)"])
        }
    }

    private func handle(_ signal: DBusReceivedMessage) async {
        let events = tracker.apply(signal)
        publish(events)
        if events.contains(.daemonBack) { await refresh() }
    }

    private func publish(_ events: [BlueZAdapterEvent]) {
        for event in events {
            logger.info("BlueZ adapter event", metadata: ["event": "\(event)"])
            for listener in listeners.values { listener.yield(event) }
        }
    }
}
