import Logging
import NearbyBLE
import NearbyCore
import NearbyWire

/// NearbyBLE's `BlueZGAPProvider` on NearbyBlueZ: advertising through `BlueZAdvertiser`, scanning through
/// `BlueZScanner` (reports rebuilt into AD structures by `BlueZRadioMapping`), and the adapter's state from
/// `BlueZAdapter`. One system bus connection, opened on first use and again after it was lost or shut down; one
/// `BlueZAdapter` per adapter name on it.
///
/// Scanning and advertising survive `bluetoothd` restarts and the adapter going away and coming back (the scanner
/// starts discovery again, the advertiser registers again); `states(adapter:)` reports the gap meanwhile.
package actor BlueZGAP: BlueZGAPProvider {
    private let logger: Logger
    private let connectBus: @Sendable () async throws -> DBusClient
    private let callTimeout: Duration
    private var client: DBusClient?
    private var adapters: [String: BlueZAdapter] = [:]
    private var advertisers: [String: BlueZAdvertiser] = [:]
    /// Adapters being opened, shared by every caller that asks for one meanwhile (advertising asks twice at once:
    /// for the radio's state and to open it).
    private var opening: [String: Task<BlueZAdapter, any Error>] = [:]

    /// A provider on the system bus, or on the bus `connect` opens (tests use a private bus). Every D-Bus call and
    /// registration waits at most `callTimeout`, then fails with `.timeout`.
    package init(
        logger: Logger = Logger(label: "nearby.bluez"), callTimeout: Duration = BlueZ.callTimeout,
        connect: (@Sendable () async throws -> DBusClient)? = nil
    ) {
        self.logger = logger
        self.callTimeout = callTimeout
        self.connectBus = connect ?? { try await DBusClient.system(logger: logger, timeout: callTimeout) }
    }

    /// The followed adapter `name`, opening the bus first when needed.
    private func followed(_ name: String) async throws -> BlueZAdapter {
        if let client, await client.isConnected, let adapter = adapters[name] { return adapter }
        if let pending = opening[name] { return try await pending.value }
        // Owner: `opening`, until this call ends; every caller for `name` meanwhile awaits it. It ends when the bus
        // and the adapter are open or have failed, each D-Bus step bounded by `callTimeout`.
        let task = Task { try await self.openFollowed(name) }
        opening[name] = task
        defer { opening[name] = nil }
        return try await task.value
    }

    private func openFollowed(_ name: String) async throws -> BlueZAdapter {
        logger.debug("opening BlueZ adapter", metadata: ["adapter": "\(name)"])
        let client = try await bus()
        if let adapter = adapters[name] { return adapter }
        let adapter = try await BlueZAdapter.open(on: client, name: name, logger: logger, callTimeout: callTimeout)
        if let raced = adapters[name] {
            await adapter.stop()
            return raced
        }
        adapters[name] = adapter
        return adapter
    }

    private func bus() async throws -> DBusClient {
        if let client, await client.isConnected { return client }
        await dropAll()
        do {
            let opened = try await connectBus()
            if let raced = client, await raced.isConnected {
                await opened.close()
                return raced
            }
            client = opened
            logger.debug("connected to the system bus for BlueZ", metadata: ["unique_name": "\(opened.uniqueName)"])
            return opened
        } catch {
            let why = (error as? NearbyError)?.message ?? "\(error)"
            throw NearbyError(
                NearbyError.Code(rawValue: "bluetoothUnavailable"), "cannot reach BlueZ on the system bus: \(why)",
                cause: error)
        }
    }

    private func dropAll() async {
        let advertisers = self.advertisers.values
        let adapters = self.adapters.values
        let client = self.client
        self.advertisers = [:]
        self.adapters = [:]
        self.client = nil
        for advertiser in advertisers { await advertiser.stop() }
        for adapter in adapters { await adapter.stop() }
        await client?.close()
    }

    package func open(adapter name: String) async throws {
        let adapter = try await followed(name)
        if case .unavailable(let error) = BlueZRadioMapping.radioState(
            adapter: await adapter.state, daemonPresent: await adapter.daemonPresent, name: name)
        {
            throw error
        }
    }

    /// The adapter's identity address (`Adapter1.Address` with its `AddressType`), which the kernel's L2CAP sockets
    /// bind to.
    /// - Throws: `bluetoothUnavailable` when `bluetoothd` or the adapter is missing or the address cannot be read.
    package func adapterAddress(adapter name: String) async throws -> BLEAddress? {
        let adapter = try await followed(name)
        let code = NearbyError.Code(rawValue: "bluetoothUnavailable")
        guard let state = await adapter.state else {
            if case .unavailable(let error) = BlueZRadioMapping.radioState(
                adapter: nil, daemonPresent: await adapter.daemonPresent, name: name)
            {
                throw error
            }
            throw NearbyError(code, "BlueZ has no adapter \(name)")
        }
        guard let address = BlueZRadioMapping.localAddress(state) else {
            throw NearbyError(code, "BlueZ adapter \(name) has no usable address ('\(state.address)', \(state.addressType))")
        }
        return address
    }

    package func supportsExtendedAdvertising(adapter name: String) async throws -> Bool {
        let adapter = try await followed(name)
        return try await BlueZAdvertiser(adapter: adapter, logger: logger).capabilities().supportsExtendedAdvertising
    }

    /// Registers the advertisement, replacing the one this provider registered on `name` before.
    package func startAdvertising(_ advertisement: BLEAdvertisement, adapter name: String) async throws -> BLERadioHandle {
        let adapter = try await followed(name)
        if let previous = advertisers.removeValue(forKey: name) { await previous.stop() }
        let advertiser = BlueZAdvertiser(adapter: adapter, logger: logger)
        let data = BlueZAdvertisement(
            kind: .peripheral, serviceData: [BlueZ.uuid(advertisement.serviceUUID): advertisement.serviceData],
            secondaryChannel: advertisement.extended ? "1M" : nil)
        do {
            try await advertiser.start(data)
        } catch {
            await advertiser.stop()
            throw error
        }
        advertisers[name] = advertiser
        logger.debug("BlueZ advertising", metadata: ["adapter": "\(name)", "psm": "\(advertisement.psm)"])
        return BLERadioHandle { [weak self] in
            await advertiser.stop()
            await self?.forget(advertiser, on: name)
        }
    }

    private func forget(_ advertiser: BlueZAdvertiser, on name: String) {
        if advertisers[name] === advertiser { advertisers[name] = nil }
    }

    package nonisolated func scan(adapter name: String, preset: ScanPreset) -> AsyncThrowingStream<AdvertisingReport, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: AdvertisingReport.self, throwing: (any Error).self)
        // Owner: the returned stream, whose `onTermination` cancels it when the consumer stops; it ends then (after
        // the D-Bus steps under way, each bounded by `callTimeout`), when opening fails, or when the scanner's
        // reports end.
        let task = Task {
            let scanner: BlueZScanner
            let reports: AsyncStream<BlueZScanReport>
            do {
                try await self.open(adapter: name)
                let adapter = try await self.followed(name)
                scanner = BlueZScanner(adapter: adapter, logger: self.logger)
                reports = try await scanner.start(filter: BlueZDiscoveryFilter(duplicateData: true))
            } catch let error as NearbyError where error.code.rawValue == "bluetoothUnavailable" {
                continuation.finish(throwing: error)
                return
            } catch {
                continuation.finish(throwing: NearbyError(
                    NearbyError.Code(rawValue: "bluetoothUnavailable"), "BlueZ discovery on \(name) failed", cause: error))
                return
            }
            for await report in reports {
                if Task.isCancelled { break }
                if let converted = BlueZRadioMapping.advertisingReport(report) { continuation.yield(converted) }
            }
            await scanner.stop()
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    package nonisolated func states(adapter name: String) -> AsyncStream<BLERadioState> {
        let (stream, continuation) = AsyncStream.makeStream(of: BLERadioState.self)
        // Owner: the returned stream, whose `onTermination` cancels it when the consumer stops; it ends then, when
        // following the adapter fails, or when the adapter's event stream ends (the adapter stopped).
        let task = Task {
            let adapter: BlueZAdapter
            do {
                adapter = try await self.followed(name)
            } catch {
                let nearby = (error as? NearbyError)
                    ?? NearbyError(NearbyError.Code(rawValue: "bluetoothUnavailable"), "BlueZ unavailable", cause: error)
                continuation.yield(.unavailable(nearby))
                continuation.finish()
                return
            }
            let events = await adapter.events()
            var last: String?
            func report() async {
                let state = BlueZRadioMapping.radioState(
                    adapter: await adapter.state, daemonPresent: await adapter.daemonPresent, name: name)
                let key = "\(state)"
                guard key != last else { return }
                last = key
                continuation.yield(state)
            }
            await report()
            for await _ in events {
                if Task.isCancelled { break }
                await report()
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Connects to `address` as a GATT client through `bluetoothd` (``BlueZGATTClient``).
    /// - Throws: `bluetoothUnavailable` when BlueZ or the adapter is missing, `.mediumUnavailable` when BlueZ does
    ///   not know the device, `.timeout`, or BlueZ's error.
    package func connectGATT(to address: BLEAddress, adapter name: String) async throws -> any BLEGATTClientConnection {
        try await open(adapter: name)
        let adapter = try await followed(name)
        return try await BlueZGATTClient.connect(adapter: adapter, address: address, logger: logger)
    }

    package func shutdown() async {
        await dropAll()
    }
}
