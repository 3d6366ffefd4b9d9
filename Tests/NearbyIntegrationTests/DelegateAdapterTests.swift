import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import Testing

/// Google's delegate shape over the engine (in-memory medium: this tests the adapter, not a medium).
final class RecordingDelegates: ConnectionManagerDelegate, AdvertiserDelegate, DiscovererDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var log: [String] = []
    let acceptRequests: Bool

    init(acceptRequests: Bool) { self.acceptRequests = acceptRequests }

    var entries: [String] { lock.withLock { log } }
    private func record(_ entry: String) { lock.withLock { log.append(entry) } }

    func connectionManager(_ connectionManager: ConnectionManager, didReceive verificationCode: String, from endpointID: EndpointID, verificationHandler: @escaping (Bool) -> Void) {
        record("code:\(verificationCode.count)")
        verificationHandler(true)
    }
    func connectionManager(_ connectionManager: ConnectionManager, didReceive data: Data, withID payloadID: PayloadID, from endpointID: EndpointID) {
        record("data:\(String(decoding: data, as: UTF8.self))")
    }
    func connectionManager(_ connectionManager: ConnectionManager, didReceive stream: IncomingByteStream, withID payloadID: PayloadID, from endpointID: EndpointID, cancellationToken token: CancellationToken) {
        record("stream")
    }
    func connectionManager(_ connectionManager: ConnectionManager, didStartReceivingResourceWithID payloadID: PayloadID, from endpointID: EndpointID, at localURL: URL, withName name: String, cancellationToken token: CancellationToken) {
        record("resource:\(name)")
    }
    func connectionManager(_ connectionManager: ConnectionManager, didReceiveTransferUpdate update: TransferUpdate, from endpointID: EndpointID, forPayload payloadID: PayloadID) {
        if update == .success { record("success") }
    }
    func connectionManager(_ connectionManager: ConnectionManager, didChangeTo state: ConnectionState, for endpointID: EndpointID) {
        record("state:\(state)")
    }
    func advertiser(_ advertiser: Advertiser, didReceiveConnectionRequestFrom endpointID: EndpointID, with context: Data, connectionRequestHandler: @escaping (Bool) -> Void) {
        record("request:\(String(decoding: context, as: UTF8.self))")
        connectionRequestHandler(acceptRequests)
    }
    func discoverer(_ discoverer: Discoverer, didFind endpointID: EndpointID, with context: Data) {
        record("found:\(String(decoding: context, as: UTF8.self))")
    }
    func discoverer(_ discoverer: Discoverer, didLose endpointID: EndpointID) {
        record("lost")
    }
}

struct DelegateAdapterTests {
    private func manager(_ air: InMemoryMedium.Air, _ directory: URL) -> ConnectionManager {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var options = ConnectionOptions(receiveDirectory: directory, logger: logger)
        options.useInMemoryMediums([InMemoryMedium(air: air)])
        return ConnectionManager(serviceID: "delegates", strategy: .pointToPoint, options: options)
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        // A bound for slow, shared machines, not a timing assertion.
        for _ in 0..<800 where !condition() { try await Task.sleep(for: .milliseconds(25)) }
    }

    @Test("Delegates see discovery, the request, the code, the connection and a payload, in Google's order", .timeLimit(.minutes(5)), arguments: [true, false])
    func delegateFlow(accept: Bool) async throws {
        let air = InMemoryMedium.Air()
        let directory = FileManager.default.temporaryDirectory
        let advertisingManager = manager(air, directory)
        let discoveringManager = manager(air, directory)
        let advertiserSide = RecordingDelegates(acceptRequests: accept)
        let discovererSide = RecordingDelegates(acceptRequests: true)
        let advertiser = Advertiser(connectionManager: advertisingManager)
        let discoverer = Discoverer(connectionManager: discoveringManager)
        advertiser.delegate = advertiserSide
        advertisingManager.delegate = advertiserSide
        discoverer.delegate = discovererSide
        discoveringManager.delegate = discovererSide

        try await advertiser.startAdvertising(using: Data("adv".utf8))
        try await discoverer.startDiscovery()
        try await waitUntil { discovererSide.entries.contains("found:adv") }
        #expect(discovererSide.entries.contains("found:adv"))
        try await discoverer.requestConnection(to: advertisingManager.localEndpointID, using: Data("disc".utf8))
        let expected = accept ? "state:connected" : "state:rejected"
        try await waitUntil { advertiserSide.entries.contains(expected) && discovererSide.entries.contains(expected) }
        // An approved request goes on to the verification code; a refused one is rejected straight away.
        let flow = accept ? ["request:disc", "state:connecting", "code:5"] : ["request:disc", "state:rejected"]
        #expect(
            Array(advertiserSide.entries.prefix(flow.count)) == flow,
            "advertiser saw \(advertiserSide.entries); discoverer saw \(discovererSide.entries)")
        #expect(discovererSide.entries.contains(expected))
        if accept {
            discoveringManager.send(Data("hi".utf8), to: [advertisingManager.localEndpointID])
            try await waitUntil { advertiserSide.entries.contains("data:hi") }
            #expect(advertiserSide.entries.contains("data:hi"))
        }
        advertiser.stopAdvertising()
        try await waitUntil { discovererSide.entries.contains("lost") }
        #expect(discovererSide.entries.contains("lost"))
        await advertisingManager.shutdown()
        await discoveringManager.shutdown()
    }
}
