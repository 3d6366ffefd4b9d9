import Logging
import NearbyBLE
import NearbyCore
import NearbyWire

/// A GATT client connection through `bluetoothd`: `Device1.Connect`, the peer's services and characteristics from
/// the object tree once `ServicesResolved`, `GattCharacteristic1.ReadValue`, `WriteValue` with type `request`
/// (write with response) and `StartNotify` with the values from `PropertiesChanged`.
///
/// BlueZ exchanges the ATT MTU by itself (its value is read from the characteristics' `MTU` property) and confirms
/// indications as they arrive, so ``confirmIndication()`` has nothing to do: a slow reader does not hold the server
/// back here, the values wait in the signal stream. `AcquireWrite` and `AcquireNotify` do not apply to the Weave
/// socket: BlueZ offers them only for write-without-response and notify characteristics, and Weave writes with
/// response and indicates.
///
/// The peer must be known to `bluetoothd` (seen while scanning), as every endpoint this medium discovers is.
package actor BlueZGATTClient: BLEGATTClientConnection {
    /// The peer.
    package nonisolated let peer: BLEAddress
    private let adapter: BlueZAdapter
    private let devicePath: String
    private let logger: Logger
    /// Handles of our own numbering for BlueZ's characteristic objects (BlueZ does not tell a client its handles).
    private var handles: [String: UInt16] = [:]
    private var paths: [UInt16: String] = [:]
    private var indicationTasks: [Task<Void, Never>] = []
    private var disconnected = false

    private init(adapter: BlueZAdapter, devicePath: String, peer: BLEAddress, logger: Logger) {
        self.adapter = adapter
        self.devicePath = devicePath
        self.peer = peer
        self.logger = logger
    }

    /// The object path BlueZ gives the device `address` on the adapter at `adapterPath`.
    package static func devicePath(adapterPath: String, address: BLEAddress) -> String {
        let text = "\(address)".split(separator: "/").first.map(String.init) ?? "\(address)"
        return adapterPath + "/dev_" + text.replacingOccurrences(of: ":", with: "_")
    }

    /// Connects to `address` and waits until BlueZ has resolved its services (at most `timeout`).
    /// - Throws: `.mediumUnavailable` when BlueZ does not know the device, `.timeout`, or BlueZ's error.
    package static func connect(
        adapter: BlueZAdapter, address: BLEAddress, timeout: Duration = .seconds(20), logger: Logger
    ) async throws -> BlueZGATTClient {
        guard let state = await adapter.state else { throw NearbyError(.mediumUnavailable, "no BlueZ adapter") }
        let path = devicePath(adapterPath: state.path, address: address)
        let client = BlueZGATTClient(adapter: adapter, devicePath: path, peer: address, logger: logger)
        do {
            try await client.connectDevice(timeout: timeout)
        } catch {
            await client.disconnect()
            throw error
        }
        return client
    }

    private func connectDevice(timeout: Duration) async throws {
        let changes = try await adapter.client.signals(matching: .propertiesChanged(
            sender: BlueZ.service, pathNamespace: devicePath, interface: BlueZ.deviceInterface))
        do {
            _ = try await adapter.callBlueZ(
                path: devicePath, interface: BlueZ.deviceInterface, member: "Connect", timeout: timeout)
        } catch let error as NearbyError {
            if let remote = error.cause as? DBusRemoteError,
                ["org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownMethod"].contains(remote.name)
            {
                throw NearbyError(.mediumUnavailable, "BlueZ does not know \(peer) (not seen while scanning)", cause: error)
            }
            throw error
        }
        if try await deviceProperty("ServicesResolved")?.bool == true { return }
        let path = devicePath
        let resolved = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await signal in changes {
                    guard signal.arguments.first?.string == BlueZ.deviceInterface,
                        let changed = signal.arguments.dropFirst().first?.propertyMap
                    else { continue }
                    if changed["ServicesResolved"]?.bool == true { return true }
                    if changed["Connected"]?.bool == false {
                        throw NearbyError(.endpointIoError, "\(path) disconnected while BlueZ resolved its services")
                    }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        // The signal may have come between Connect's answer and the subscription's first read.
        if !resolved, try await deviceProperty("ServicesResolved")?.bool != true {
            throw NearbyError(.timeout, "BlueZ did not resolve the services of \(peer) within \(timeout)")
        }
    }

    private func deviceProperty(_ name: String) async throws -> DBusValue? {
        try await adapter.callBlueZ(
            path: devicePath, interface: BlueZ.propertiesInterface, member: "Get",
            arguments: [.string(BlueZ.deviceInterface), .string(name)]
        ).first
    }

    /// The device's GATT objects: path → interface → properties.
    private func gattObjects() async throws -> [String: [String: [String: DBusValue]]] {
        let tree = try await adapter.callBlueZ(
            path: "/", interface: BlueZ.objectManagerInterface, member: "GetManagedObjects"
        ).first?.managedObjects ?? [:]
        return tree.filter { $0.key.hasPrefix(devicePath + "/") }
    }

    /// The ATT MTU BlueZ exchanged (the `MTU` of the device's characteristics; 23 when BlueZ does not say).
    package func exchangeMTU() async throws -> Int {
        let mtus = try await gattObjects().values.compactMap { $0[BlueZ.gattCharacteristicInterface]?["MTU"]?.integer }
        return max(23, mtus.max() ?? 23)
    }

    /// The characteristics of the primary service `service`; empty when the peer serves no such service.
    package func discoverCharacteristics(service: BLEUUID) async throws -> [GATTRemoteCharacteristic] {
        let objects = try await gattObjects()
        let services = objects.filter { _, interfaces in
            guard let properties = interfaces[BlueZ.gattServiceInterface],
                let uuid = properties["UUID"]?.string.flatMap(BLEUUID.init(string:))
            else { return false }
            return uuid == service && properties["Primary"]?.bool != false
        }.keys
        guard let servicePath = services.sorted().first else { return [] }
        var found: [GATTRemoteCharacteristic] = []
        for (path, interfaces) in objects.sorted(by: { $0.key < $1.key }) {
            guard let properties = interfaces[BlueZ.gattCharacteristicInterface],
                properties["Service"]?.string == servicePath,
                let uuid = properties["UUID"]?.string.flatMap(BLEUUID.init(string:))
            else { continue }
            let flags = Set(properties["Flags"]?.strings ?? [])
            // No CCCD handle: BlueZ writes the descriptor itself on StartNotify.
            found.append(GATTRemoteCharacteristic(
                uuid: uuid, properties: Self.properties(flags), valueHandle: handle(for: path), cccdHandle: nil))
        }
        return found
    }

    /// GATT properties from BlueZ's `Flags`.
    package static func properties(_ flags: Set<String>) -> GATTCharacteristicDefinition.Properties {
        var properties: GATTCharacteristicDefinition.Properties = []
        if flags.contains("read") { properties.insert(.read) }
        if flags.contains("write-without-response") { properties.insert(.writeWithoutResponse) }
        if flags.contains("write") { properties.insert(.write) }
        if flags.contains("notify") { properties.insert(.notify) }
        if flags.contains("indicate") { properties.insert(.indicate) }
        return properties
    }

    private func handle(for path: String) -> UInt16 {
        if let known = handles[path] { return known }
        let next = UInt16(handles.count + 1)
        handles[path] = next
        paths[next] = path
        return next
    }

    private func path(of characteristic: GATTRemoteCharacteristic) throws -> String {
        guard let path = paths[characteristic.valueHandle] else {
            throw NearbyError(.invalidArgument, "characteristic \(characteristic.uuid) was not found on this connection")
        }
        return path
    }

    /// `ReadValue`: the whole value (BlueZ reads long values itself).
    package func read(_ characteristic: GATTRemoteCharacteristic) async throws -> [UInt8] {
        let reply = try await adapter.callBlueZ(
            path: try path(of: characteristic), interface: BlueZ.gattCharacteristicInterface, member: "ReadValue",
            arguments: [.properties([:])])
        guard let bytes = reply.first?.bytes else {
            throw NearbyError(.malformedMessage, "ReadValue of \(characteristic.uuid) returned no bytes")
        }
        return bytes
    }

    /// `WriteValue` with type `request`: answered once the peer's write response came.
    package func write(_ value: [UInt8], to characteristic: GATTRemoteCharacteristic) async throws {
        _ = try await adapter.callBlueZ(
            path: try path(of: characteristic), interface: BlueZ.gattCharacteristicInterface, member: "WriteValue",
            arguments: [.bytes(value), .properties(["type": .string("request")])])
    }

    /// `StartNotify`, then every new `Value` of the characteristic, in order; the stream ends when the device
    /// disconnects, when ``disconnect()`` is called or when the bus goes away.
    package func subscribeToIndications(_ characteristic: GATTRemoteCharacteristic) async throws -> AsyncStream<[UInt8]> {
        let path = try path(of: characteristic)
        let device = devicePath
        let changes = try await adapter.client.signals(matching: .propertiesChanged(
            sender: BlueZ.service, pathNamespace: device, interface: nil))
        _ = try await adapter.callBlueZ(path: path, interface: BlueZ.gattCharacteristicInterface, member: "StartNotify")
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
        // Owner: this client, which cancels it in `disconnect()`, and the returned stream, whose `onTermination`
        // cancels it. It ends then, when the device disconnects, or when the signal stream ends (the bus went away).
        let task = Task {
            for await signal in changes {
                if Task.isCancelled { break }
                guard let changed = signal.arguments.dropFirst().first?.propertyMap else { continue }
                if signal.path == path, signal.arguments.first?.string == BlueZ.gattCharacteristicInterface,
                    let value = changed["Value"]?.bytes
                {
                    continuation.yield(value)
                } else if signal.path == device, signal.arguments.first?.string == BlueZ.deviceInterface,
                    changed["Connected"]?.bool == false
                {
                    break
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        indicationTasks.append(task)
        return stream
    }

    /// Nothing to do: BlueZ confirms each indication as it arrives.
    package func confirmIndication() async {}

    /// `Device1.Disconnect`; ends the indication streams. Idempotent.
    package func disconnect() async {
        guard !disconnected else { return }
        disconnected = true
        let tasks = indicationTasks
        indicationTasks = []
        for task in tasks { task.cancel() }
        do {
            _ = try await adapter.callBlueZ(
                path: devicePath, interface: BlueZ.deviceInterface, member: "Disconnect", timeout: .seconds(5))
        } catch {
            logger.debug("BlueZ Disconnect failed", metadata: ["device": "\(devicePath)", "error": "\(error)"])
        }
        for task in tasks { await task.value }
    }
}
