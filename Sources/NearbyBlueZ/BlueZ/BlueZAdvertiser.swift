import Logging
import NearbyCore
import NearbyWire

/// A change of a `BlueZAdvertiser`'s registration.
package enum BlueZAdvertiserEvent: Sendable, Hashable {
    /// BlueZ accepted the advertisement (`RegisterAdvertisement` returned); `count` numbers the registrations of
    /// this advertiser, so a count above 1 means it was registered again after `bluetoothd` or the adapter came back.
    case registered(adapterPath: String, count: Int)
    /// The advertisement is no longer on air: `bluetoothd` went away, the adapter was removed or powered off (rfkill
    /// too), or BlueZ released it.
    case unregistered(reason: String)
    /// Registering again failed; it is retried on the next adapter change.
    case failed(String)
}

/// Advertises one `BlueZAdvertisement` through `org.bluez.LEAdvertisingManager1` and keeps it registered: when
/// `bluetoothd` restarts or the adapter comes back (or is powered on again), it registers it again.
///
/// The advertisement is an object this process exports (`LEAdvertisement1` properties, and `Release`); bluetoothd
/// reads its properties with `GetAll` while `RegisterAdvertisement` is in progress.
package actor BlueZAdvertiser {
    private static let pathCounter = LockedValue(0)

    private let adapter: BlueZAdapter
    private let logger: Logger
    /// The exported object's path.
    package nonisolated let objectPath: String
    private let current = LockedValue<BlueZAdvertisement?>(nil)
    private var registeredOn: String?
    /// Where the advertisement was registered when the adapter powered off: BlueZ 5.66 then drops the advertising
    /// instance without calling `Release` (seen with rfkill in the VM rig), so it is unregistered and registered
    /// again once the adapter is powered.
    private var droppedOn: String?
    private var registering = false
    private var registrations = 0
    private var watcher: Task<Void, Never>?
    private let eventContinuation: AsyncStream<BlueZAdvertiserEvent>.Continuation
    /// Registration changes (one consumer).
    package nonisolated let events: AsyncStream<BlueZAdvertiserEvent>

    /// Creates an advertiser on `adapter`.
    package init(adapter: BlueZAdapter, logger: Logger = Logger(label: "nearby.bluez")) {
        self.adapter = adapter
        self.logger = logger
        let index = Self.pathCounter.withLock { value in
            value += 1
            return value
        }
        objectPath = "/org/swiftnearby/advertisement\(index)"
        (events, eventContinuation) = AsyncStream.makeStream(of: BlueZAdvertiserEvent.self)
    }

    /// Reads `LEAdvertisingManager1`'s properties.
    /// - Throws: `.mediumUnavailable` without an adapter.
    package func capabilities() async throws -> BlueZAdvertisingCapabilities {
        guard let path = await adapter.state?.path else { throw NearbyError(.mediumUnavailable, "no BlueZ adapter") }
        let reply = try await adapter.callBlueZ(
            path: path, interface: BlueZ.propertiesInterface, member: "GetAll",
            arguments: [.string(BlueZ.advertisingManagerInterface)])
        return BlueZAdvertisingCapabilities(properties: reply.first?.propertyMap ?? [:])
    }

    /// Whether BlueZ currently holds the registration.
    package var isRegistered: Bool { registeredOn != nil }

    /// Starts advertising `advertisement`, and keeps it registered until `stop()`.
    /// - Throws: `.mediumUnavailable` without a powered adapter, or BlueZ's refusal (`.invalidArgument` for data
    ///   that does not fit, with the D-Bus error as the cause).
    package func start(_ advertisement: BlueZAdvertisement) async throws {
        current.withLock { $0 = advertisement }
        let client = adapter.client
        let current = self.current
        try await client.export(path: objectPath, interfaces: [
            DBusExportedInterface(
                name: BlueZ.advertisementInterface,
                properties: { current.withLock { $0?.properties ?? [:] } },
                methods: ["Release": { [weak self] call in
                    // Any bus client can call our object; only bluetoothd's word counts.
                    guard await client.isOwner(call.sender, of: BlueZ.service) else {
                        throw DBusRemoteError(
                            name: "org.freedesktop.DBus.Error.AccessDenied", message: "Release is for bluetoothd only")
                    }
                    await self?.released()
                    return []
                }])
        ])
        if watcher == nil {
            let events = await adapter.events()
            // Owner: `watcher`; `stop()` cancels it. It ends then, or when the adapter's event stream ends (the
            // adapter stopped).
            watcher = Task { [weak self] in
                for await event in events { await self?.adapterChanged(event) }
            }
        }
        do {
            try await register()
        } catch {
            await stop()
            throw error
        }
    }

    /// Replaces the advertised data (BlueZ ignores property changes of a registered advertisement, so it is
    /// unregistered and registered again). Without a powered adapter (e.g. `bluetoothd` just went away) the new
    /// data is kept and registered when the adapter is back.
    /// - Throws: BlueZ's refusal of the new data.
    package func update(_ advertisement: BlueZAdvertisement) async throws {
        current.withLock { $0 = advertisement }
        guard registeredOn != nil else { return }
        await unregister()
        guard await adapter.state?.powered == true else {
            eventContinuation.yield(.unregistered(reason: "adapter unavailable while updating"))
            return
        }
        try await register()
    }

    /// Stops advertising.
    package func stop() async {
        current.withLock { $0 = nil }
        watcher?.cancel()
        watcher = nil
        await unregister()
        await adapter.client.unexport(path: objectPath)
    }

    private func register() async throws {
        guard current.withLock({ $0 }) != nil, registeredOn == nil, !registering else { return }
        guard let state = await adapter.state else { throw NearbyError(.mediumUnavailable, "no BlueZ adapter") }
        guard state.powered else { throw NearbyError(.mediumUnavailable, "BlueZ adapter \(state.name) is powered off") }
        registering = true
        defer { registering = false }
        logger.debug("registering the BlueZ advertisement", metadata: ["adapter": "\(state.name)", "object": "\(objectPath)"])
        _ = try await adapter.callBlueZ(
            path: state.path, interface: BlueZ.advertisingManagerInterface,
            member: "RegisterAdvertisement", arguments: [.objectPath(objectPath), .properties([:])])
        registeredOn = state.path
        registrations += 1
        logger.info("BlueZ advertisement registered", metadata: ["adapter": "\(state.name)", "count": "\(registrations)"])
        eventContinuation.yield(.registered(adapterPath: state.path, count: registrations))
    }

    private func unregister() async {
        guard let path = registeredOn else { return }
        registeredOn = nil
        _ = try? await adapter.callBlueZ(
            path: path, interface: BlueZ.advertisingManagerInterface,
            member: "UnregisterAdvertisement", arguments: [.objectPath(objectPath)], timeout: .seconds(5))
    }

    private func released() {
        guard registeredOn != nil else { return }
        registeredOn = nil
        eventContinuation.yield(.unregistered(reason: "released by BlueZ"))
    }

    private func adapterChanged(_ event: BlueZAdapterEvent) async {
        switch event {
        case .daemonGone, .removed:
            guard registeredOn != nil else { return }
            registeredOn = nil
            eventContinuation.yield(.unregistered(reason: event == .daemonGone ? "bluetoothd went away" : "adapter removed"))
        case .available(let state) where state.powered:
            await registerAgain()
        case .powered(false):
            guard let path = registeredOn else { return }
            registeredOn = nil
            droppedOn = path
            eventContinuation.yield(.unregistered(reason: "adapter powered off"))
        case .powered(true):
            await registerAgain()
        case .interfacesAdded(let names) where names.contains(BlueZ.advertisingManagerInterface):
            await registerAgain()
        default:
            break
        }
    }

    private func registerAgain() async {
        if let path = droppedOn {
            droppedOn = nil
            // bluetoothd may still hold the registration (AlreadyExists otherwise); DoesNotExist is fine too.
            _ = try? await adapter.callBlueZ(
                path: path, interface: BlueZ.advertisingManagerInterface,
                member: "UnregisterAdvertisement", arguments: [.objectPath(objectPath)], timeout: .seconds(5))
        }
        do {
            try await register()
        } catch {
            logger.warning("BlueZ advertisement not registered again", metadata: ["error": "\(error)"])
            eventContinuation.yield(.failed("\(error)"))
        }
    }
}
