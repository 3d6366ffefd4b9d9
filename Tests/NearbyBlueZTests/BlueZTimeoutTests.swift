import Logging
import NearbyBLE
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// A bluetoothd that stops answering (a held `RegisterAdvertisement` or `StartDiscovery`): every D-Bus step ends
/// with a `.timeout` NearbyError naming the call, never a silent wait.
@Suite(.timeLimit(.minutes(2))) struct BlueZTimeoutTests {
    static let timeout: Duration = .milliseconds(600)

    @Test func registrationBluetoothdNeverAnswersFailsWithATimeout() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            fake.held.withLock { $0 = ["RegisterAdvertisement"] }
            let client = try await bus.connect()
            let adapter = try await BlueZAdapter.find(on: client, name: "hci0", callTimeout: Self.timeout)
            let advertiser = BlueZAdvertiser(adapter: adapter)
            let error = try await #require(throws: NearbyError.self) { try await advertiser.start(.nearby([1, 2, 3])) }
            #expect(error.code == .timeout)
            #expect(error.message.contains("LEAdvertisingManager1.RegisterAdvertisement"), "\(error.message)")
            #expect(await advertiser.isRegistered == false)
            // Once bluetoothd answers again, the same advertiser registers.
            fake.answerHeldCalls()
            try await advertiser.start(.nearby([1, 2, 3]))
            #expect(await advertiser.isRegistered)
            await advertiser.stop()
            await adapter.stop()
            await fake.connection.close()
            await client.close()
        }
    }

    @Test func discoveryBluetoothdNeverStartsFailsWithATimeout() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            fake.held.withLock { $0 = ["StartDiscovery"] }
            let client = try await bus.connect()
            let adapter = try await BlueZAdapter.find(on: client, callTimeout: Self.timeout)
            let scanner = BlueZScanner(adapter: adapter)
            let error = try await #require(throws: NearbyError.self) { _ = try await scanner.start() }
            #expect(error.code == .timeout)
            #expect(error.message.contains("Adapter1.StartDiscovery"), "\(error.message)")
            fake.answerHeldCalls()
            await adapter.stop()
            await fake.connection.close()
            await client.close()
        }
    }

    /// The same through `BlueZGAP`, as `nearby advertise --hci bluez` uses it: the advertising call throws.
    @Test func gapAdvertisingFailsWithATimeoutWhenBluetoothdHangs() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            fake.held.withLock { $0 = ["RegisterAdvertisement"] }
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let gap = BlueZGAP(logger: logger, callTimeout: Self.timeout, connect: { try await bus.connect() })
            try await gap.open(adapter: "hci0")
            let advertisement = BLEAdvertisement(
                serviceUUID: 0xFEF3, serviceData: [1, 2, 3], extended: false, psm: 0x80, intervalMillis: 100)
            let error = try await #require(throws: NearbyError.self) {
                _ = try await gap.startAdvertising(advertisement, adapter: "hci0")
            }
            #expect(error.code == .timeout)
            fake.answerHeldCalls()
            await gap.shutdown()
            await fake.connection.close()
        }
    }
}
