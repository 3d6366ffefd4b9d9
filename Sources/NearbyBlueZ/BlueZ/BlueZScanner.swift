import Logging
import NearbyWire

/// `Adapter1.SetDiscoveryFilter`'s settings.
package struct BlueZDiscoveryFilter: Sendable, Hashable {
    /// `UUIDs`: BlueZ matches them against the advertised service UUID lists only, not against service data keys.
    package var uuids: [String] = []
    /// `Pattern`: a prefix of the address or name.
    package var pattern: String?
    /// `DuplicateData`: report every advertisement, not only changes (true for presence tracking).
    package var duplicateData = true
    /// `RSSI`: the weakest signal reported.
    package var rssi: Int16?

    /// Creates a filter (LE transport always).
    package init(uuids: [String] = [], pattern: String? = nil, duplicateData: Bool = true, rssi: Int16? = nil) {
        self.uuids = uuids
        self.pattern = pattern
        self.duplicateData = duplicateData
        self.rssi = rssi
    }

    /// The `a{sv}` argument.
    package var properties: [String: DBusValue] {
        var properties: [String: DBusValue] = ["Transport": .string("le"), "DuplicateData": .boolean(duplicateData)]
        if !uuids.isEmpty { properties["UUIDs"] = .strings(uuids) }
        if let pattern { properties["Pattern"] = .string(pattern) }
        if let rssi { properties["RSSI"] = .int16(rssi) }
        return properties
    }
}

/// LE discovery through BlueZ: `SetDiscoveryFilter` + `StartDiscovery` on the adapter, and `Device1`'s service
/// data and RSSI (InterfacesAdded/PropertiesChanged) turned into `BlueZScanReport`s. Discovery is started again
/// when `bluetoothd` or the adapter comes back.
package actor BlueZScanner {
    private let adapter: BlueZAdapter
    private let logger: Logger
    private var filter = BlueZDiscoveryFilter()
    private var serviceDataUUIDs: Set<String> = []
    private var table: BlueZDeviceReports?
    private var discoveringOn: String?
    private var tasks: [Task<Void, Never>] = []
    private var output: AsyncStream<BlueZScanReport>.Continuation?

    /// Creates a scanner on `adapter`.
    package init(adapter: BlueZAdapter, logger: Logger = Logger(label: "nearby.bluez")) {
        self.adapter = adapter
        self.logger = logger
    }

    /// Starts discovery and returns the reports; only devices with service data for one of `serviceDataUUIDs`
    /// are reported (empty: all).
    /// - Throws: `.mediumUnavailable` without a powered adapter, or BlueZ's refusal.
    package func start(
        filter: BlueZDiscoveryFilter = BlueZDiscoveryFilter(), serviceDataUUIDs: Set<String> = []
    ) async throws -> AsyncStream<BlueZScanReport> {
        await stop()
        self.filter = filter
        self.serviceDataUUIDs = Set(serviceDataUUIDs.map { $0.lowercased() })
        let (stream, continuation) = AsyncStream.makeStream(of: BlueZScanReport.self, bufferingPolicy: .bufferingNewest(1024))
        output = continuation
        let signals = try await adapter.client.signals(matching: [
            .objectManager(sender: BlueZ.service, member: "InterfacesAdded"),
            .objectManager(sender: BlueZ.service, member: "InterfacesRemoved"),
            .propertiesChanged(sender: BlueZ.service, pathNamespace: "/org/bluez", interface: BlueZ.deviceInterface),
        ], timeout: adapter.callTimeout)
        let adapterEvents = await adapter.events()
        // Owner: `tasks`; `stop()` (also the next `start`) cancels it. It ends then, or when the bus's signal stream
        // ends.
        tasks.append(Task { [weak self] in
            for await signal in signals { await self?.handle(signal) }
        })
        // Owner: `tasks`, as above; it ends when cancelled or when the adapter's event stream ends.
        tasks.append(Task { [weak self] in
            for await event in adapterEvents { await self?.adapterChanged(event) }
        })
        do {
            try await startDiscovery()
        } catch {
            await stop()
            throw error
        }
        return stream
    }

    /// Stops discovery; the report stream finishes.
    package func stop() async {
        for task in tasks { task.cancel() }
        tasks.removeAll()
        output?.finish()
        output = nil
        if let path = discoveringOn {
            discoveringOn = nil
            _ = try? await adapter.callBlueZ(
                path: path, interface: BlueZ.adapterInterface, member: "StopDiscovery", timeout: .seconds(5))
        }
    }

    private func startDiscovery() async throws {
        guard let state = await adapter.state else { throw NearbyError(.mediumUnavailable, "no BlueZ adapter") }
        guard state.powered else { throw NearbyError(.mediumUnavailable, "BlueZ adapter \(state.name) is powered off") }
        let objects = try await adapter.callBlueZ(
            path: "/", interface: BlueZ.objectManagerInterface, member: "GetManagedObjects")
        var table = BlueZDeviceReports(adapterPath: state.path, serviceDataUUIDs: serviceDataUUIDs)
        table.known(objects.first?.managedObjects ?? [:])
        self.table = table
        _ = try await adapter.callBlueZ(
            path: state.path, interface: BlueZ.adapterInterface, member: "SetDiscoveryFilter",
            arguments: [.properties(filter.properties)])
        _ = try await adapter.callBlueZ(path: state.path, interface: BlueZ.adapterInterface, member: "StartDiscovery")
        discoveringOn = state.path
        logger.info("BlueZ discovery started", metadata: ["adapter": "\(state.name)"])
    }

    private func handle(_ signal: DBusReceivedMessage) {
        guard var table, let output else { return }
        let report = table.apply(signal)
        self.table = table
        if let report { output.yield(report) }
    }

    private func adapterChanged(_ event: BlueZAdapterEvent) async {
        switch event {
        case .daemonGone, .removed:
            discoveringOn = nil
        case .available(let state) where state.powered:
            await restart()
        case .powered(true):
            await restart()
        case .powered(false):
            discoveringOn = nil
        default:
            break
        }
    }

    private func restart() async {
        guard output != nil, discoveringOn == nil else { return }
        do {
            try await startDiscovery()
        } catch {
            logger.warning("BlueZ discovery not restarted", metadata: ["error": "\(error)"])
        }
    }
}
