import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

import NearbyBLE

/// A BLE peer that stops granting L2CAP credits cannot stall a session: the write waiting for credits is bounded
/// by the session's write deadline, which closes the channel (failing the credit wait) and ends the session.
@Suite(
    "BLE stalled writes", .serialized,
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"), .timeLimit(.minutes(5)))
struct BLEStalledWriteTests {
    static let peerAddress = "C0:00:00:00:00:0B"

    @Test("a session whose write waits for credits that never come ends with a write timeout")
    func creditStarvedWriteEndsTheSession() async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        // The Bumble peer grants one credit and never reads, so never grants another.
        let server = try RigProcess.python(
            "peer.py", ["stall", String(controllers.ports[0]), Self.peerAddress, "129", "512", "100", "1"])
        defer { server.kill() }
        _ = try await server.waitForLine("READY")
        var configuration = BLEHost.Configuration()
        configuration.channelParameters = CreditChannelParameters(mtu: 4096, mps: 247, credits: 16)
        let host = try await BLEHost.open(
            controllers.spec(1), configuration: configuration, logger: BLETestEnvironment.logger("host"))
        let handle = try await host.connect(to: BLEAddress(string: Self.peerAddress)!)
        let channel = try await host.openChannel(handle: handle, psm: 129)

        var limits = ResourceLimits()
        limits.writeTimeout = .seconds(1)
        var timeouts = EndpointSession.Timeouts()
        // Far beyond the write deadline, so that only the write deadline can end the session.
        timeouts.handshake = .seconds(120)
        let failure = LockedValue<NearbyError?>(nil)
        let session = EndpointSession(
            channel: await BLESocketChannel.assumingEstablished(
                link: L2CAPMessageLink(channel: channel), serviceID: "credit-starved"),
            machine: .outgoing(
                local: .init(endpointID: "BLE1", endpointInfo: Array("credit-starved".utf8)), medium: .ble,
                peerEndpointID: "PEER", peerEndpointInfo: []),
            keepAlive: .default, receiveDirectory: FileManager.default.temporaryDirectory, timeouts: timeouts,
            limits: limits, logger: BLETestEnvironment.logger("session"),
            onEvent: { event in
                if case .connectionFailed(_, let error) = event { failure.withLock { $0 = error } }
            })
        // The CONNECTION_REQUEST and the UKEY2 ClientInit need more than the one 100-byte K-frame credited.
        try await withTestTimeout(30, "the credit-starved session to end") { await session.run() }
        let error = try #require(failure.withLock { $0 })
        #expect(error.code == .timeout, "\(error)")
        #expect(error.message.contains("write"), "\(error)")
        await host.close()
    }
}
