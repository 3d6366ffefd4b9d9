import Logging
import NearbyWire

/// One look at the system's BlueZ: is the bus reachable, does `bluetoothd` own `org.bluez`, and which adapters does
/// it export. It decides whether BLE is used through BlueZ by default (no `--hci`), and names the adapter.
///
/// Every D-Bus step is bounded by the probe's timeout (libdbus's own call timeouts, on the connection's dispatch
/// queue: no thread waits), and the connection is closed again before the probe returns.
package enum BlueZSystemProbe {
    /// What the probe found.
    package enum Result: Sendable, Hashable {
        /// `bluetoothd` runs and exports these adapters (at least one), lowest index first.
        case available([BlueZAdapterState])
        /// BlueZ cannot be used; the reason says why (no system bus, no `bluetoothd`, no adapter).
        case unavailable(String)

        /// The adapter BlueZ-backed BLE uses by default: the one with the lowest index.
        package var defaultAdapter: BlueZAdapterState? {
            if case .available(let adapters) = self { return adapters.first }
            return nil
        }
    }

    /// Probes the bus `connect` opens (the system bus by default), giving each step at most `timeout`.
    package static func run(
        timeout: Duration = .seconds(2), logger: Logger = Logger(label: "nearby.bluez"),
        connect: (@Sendable (Duration) async throws -> DBusClient)? = nil
    ) async -> Result {
        let client: DBusClient
        do {
            client = try await (connect ?? { try await DBusClient.system(logger: logger, timeout: $0) })(timeout)
        } catch {
            return .unavailable("the system bus cannot be reached (\(error))")
        }
        let result = await probe(client, timeout: timeout)
        await client.close()
        logger.debug("BlueZ probe", metadata: ["result": "\(result)"])
        return result
    }

    private static func probe(_ client: DBusClient, timeout: Duration) async -> Result {
        do {
            let owner = try await client.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "NameHasOwner", arguments: [.string(BlueZ.service)], timeout: timeout)
            guard owner.first?.bool == true else { return .unavailable("bluetoothd is not on the system bus") }
            let reply = try await client.call(
                destination: BlueZ.service, path: "/", interface: BlueZ.objectManagerInterface,
                member: "GetManagedObjects", timeout: timeout)
            guard let objects = reply.first?.managedObjects else {
                return .unavailable("bluetoothd returned no object tree")
            }
            let adapters = adapters(in: objects)
            return adapters.isEmpty ? .unavailable("bluetoothd has no Bluetooth adapter") : .available(adapters)
        } catch {
            return .unavailable("BlueZ did not answer on the system bus (\(error))")
        }
    }

    /// The adapters of a `GetManagedObjects` tree (objects with `org.bluez.Adapter1`), lowest index first.
    package static func adapters(in objects: [String: [String: [String: DBusValue]]]) -> [BlueZAdapterState] {
        objects.compactMap { path, interfaces in
            interfaces[BlueZ.adapterInterface].map { BlueZAdapterTracker.state(path: path, properties: $0) }
        }
        .sorted { (index($0.name), $0.name) < (index($1.name), $1.name) }
    }

    private static func index(_ name: String) -> Int {
        Int(name.drop { !$0.isNumber }) ?? Int.max
    }
}
