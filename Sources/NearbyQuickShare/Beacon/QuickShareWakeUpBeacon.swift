import Logging
import NearbyBlueZ
import NearbyWire

/// Whether the 0xFE2C wake-up beacon is on the air.
public enum QuickShareBeaconStatus: Sendable, Hashable, CustomStringConvertible {
    /// BlueZ advertises it on this adapter (`hci0`).
    case on(adapter: String)
    /// It is off, and why (no system bus, no `bluetoothd`, no adapter, or BlueZ refused the advertisement).
    case off(reason: String)
    /// It was not asked for.
    case disabled

    /// A line for people: "wake-up beacon on (hci0)" or "wake-up beacon off: …".
    public var description: String {
        switch self {
        case .on(let adapter): "Bluetooth wake-up beacon on (\(adapter))"
        case .off(let reason): "Bluetooth wake-up beacon off: \(reason)"
        case .disabled: "Bluetooth wake-up beacon disabled"
        }
    }
}

/// The Quick Share fast-init beacon (``QuickShareFastInitBeacon``) advertised through BlueZ
/// (`org.bluez.LEAdvertisingManager1`) as non-connectable service data of 0xFE2C, so that Android phones nearby
/// notice a sharing device. The desktop keeps its Bluetooth; BlueZ registers the advertisement again when
/// `bluetoothd` or the adapter comes back.
package final class QuickShareWakeUpBeacon: Sendable {
    private let client: DBusClient
    private let adapter: BlueZAdapter
    private let advertiser: BlueZAdvertiser

    private init(client: DBusClient, adapter: BlueZAdapter, advertiser: BlueZAdvertiser) {
        self.client = client
        self.adapter = adapter
        self.advertiser = advertiser
    }

    /// The BlueZ advertisement carrying `beacon`: broadcast (non-connectable), the 24 bytes as service data of
    /// 0xFE2C and nothing else, so it fits legacy advertising (flags 3 + service data 28 = 31 bytes).
    package static func advertisement(_ beacon: QuickShareFastInitBeacon) -> BlueZAdvertisement {
        BlueZAdvertisement(kind: .broadcast, serviceData: [BlueZ.uuid(QuickShareFastInitBeacon.serviceUUID): beacon.bytes])
    }

    /// Starts advertising `beacon` through BlueZ on `adapterName` (nil: the default adapter).
    ///
    /// Never throws: when BlueZ cannot be used the beacon is off and the status says why.
    /// - Parameter connect: Opens the bus (default: the system bus, 2 s to answer); tests pass a private bus.
    package static func start(
        _ beacon: QuickShareFastInitBeacon, adapterName: String? = nil,
        connect: (@Sendable () async throws -> DBusClient)? = nil, logger: Logger = Logger(label: "nearby.quickshare")
    ) async -> (QuickShareWakeUpBeacon?, QuickShareBeaconStatus) {
        let client: DBusClient
        do {
            client = try await (connect ?? { try await DBusClient.system(logger: logger, timeout: .seconds(2)) })()
        } catch {
            return (nil, .off(reason: "the system bus cannot be reached (\(Self.message(error)))"))
        }
        let adapter: BlueZAdapter
        do {
            adapter = try await BlueZAdapter.find(on: client, name: adapterName, logger: logger)
        } catch {
            await client.close()
            return (nil, .off(reason: Self.message(error)))
        }
        let advertiser = BlueZAdvertiser(adapter: adapter, logger: logger)
        do {
            try await advertiser.start(advertisement(beacon))
        } catch {
            await adapter.stop()
            await client.close()
            return (nil, .off(reason: "BlueZ did not take the advertisement (\(Self.message(error)))"))
        }
        let name = await adapter.state?.name ?? adapterName ?? "default adapter"
        logger.info("wake-up beacon on", metadata: ["adapter": "\(name)", "service_data": "\(Hex.encode(beacon.bytes))"])
        return (QuickShareWakeUpBeacon(client: client, adapter: adapter, advertiser: advertiser), .on(adapter: name))
    }

    /// Withdraws the advertisement and closes the bus connection.
    package func stop() async {
        await advertiser.stop()
        await adapter.stop()
        await client.close()
    }

    private static func message(_ error: any Error) -> String {
        (error as? NearbyError)?.message ?? "\(error)"
    }
}
