// Every Swift snippet of docs/MIGRATING.md, verbatim, so the guide compiles; the tests run them over the in-memory
// medium. Only NearbyConnections and NearbyTesting are imported, as in an app.
import Foundation
import NearbyConnections
import NearbyTesting
import Testing

// MARK: - Snippets (keep in step with docs/MIGRATING.md)

/// §2: the manager.
func migrationSnippetManager() -> ConnectionManager {
    let connectionManager = ConnectionManager(serviceID: "com.example.chat", strategy: .cluster)
    return connectionManager
}

/// §2: options.
func migrationSnippetOptions() throws -> ConnectionManager {
    let options = ConnectionOptions(
        mediums: [.ble, .wifiLAN], bluetoothController: try BluetoothController("hci:0"),
        receiveDirectory: URL(fileURLWithPath: NSTemporaryDirectory()))
    let manager = ConnectionManager(serviceID: "com.example.chat", strategy: .cluster, options: options)
    return manager
}

/// §3: Google's sample.
final class Chat: AdvertiserDelegate, DiscovererDelegate, ConnectionManagerDelegate {
    let connectionManager: ConnectionManager
    let advertiser: Advertiser
    let discoverer: Discoverer

    init(connectionManager: ConnectionManager) {
        self.connectionManager = connectionManager
        advertiser = Advertiser(connectionManager: connectionManager)
        discoverer = Discoverer(connectionManager: connectionManager)
        advertiser.delegate = self
        discoverer.delegate = self
        connectionManager.delegate = self
    }

    func advertise() { advertiser.startAdvertising(using: Data("Jane".utf8)) }
    func discover() { discoverer.startDiscovery() }
    func stop() {
        advertiser.stopAdvertising()
        discoverer.stopDiscovery()
    }
    func send(_ text: String, to endpointID: EndpointID) -> CancellationToken {
        connectionManager.send(Data(text.utf8), to: [endpointID])
    }

    // AdvertiserDelegate
    func advertiser(
        _ advertiser: Advertiser, didReceiveConnectionRequestFrom endpointID: EndpointID, with context: Data,
        connectionRequestHandler: @escaping (Bool) -> Void
    ) {
        connectionRequestHandler(true)
    }

    // DiscovererDelegate
    func discoverer(_ discoverer: Discoverer, didFind endpointID: EndpointID, with context: Data) {
        discoverer.requestConnection(to: endpointID, using: Data("Jane".utf8))
    }
    func discoverer(_ discoverer: Discoverer, didLose endpointID: EndpointID) {}

    // ConnectionManagerDelegate
    func connectionManager(
        _ connectionManager: ConnectionManager, didReceive verificationCode: String, from endpointID: EndpointID,
        verificationHandler: @escaping (Bool) -> Void
    ) {
        verificationHandler(true)
    }
    func connectionManager(
        _ connectionManager: ConnectionManager, didReceive data: Data, withID payloadID: PayloadID,
        from endpointID: EndpointID
    ) {
        print("\(endpointID): \(String(decoding: data, as: UTF8.self))")
    }
    func connectionManager(
        _ connectionManager: ConnectionManager, didReceive stream: IncomingByteStream, withID payloadID: PayloadID,
        from endpointID: EndpointID, cancellationToken token: CancellationToken
    ) {
        Task { for try await chunk in stream { print("\(chunk.count) bytes") } }
    }
    func connectionManager(
        _ connectionManager: ConnectionManager, didStartReceivingResourceWithID payloadID: PayloadID,
        from endpointID: EndpointID, at localURL: URL, withName name: String, cancellationToken token: CancellationToken
    ) {}
    func connectionManager(
        _ connectionManager: ConnectionManager, didReceiveTransferUpdate update: TransferUpdate,
        from endpointID: EndpointID, forPayload payloadID: PayloadID
    ) {}
    func connectionManager(
        _ connectionManager: ConnectionManager, didChangeTo state: ConnectionState, for endpointID: EndpointID
    ) {}
}

/// §3: a connection restricted to some mediums.
func migrationSnippetRequest(_ discoverer: Discoverer, _ endpointID: EndpointID) {
    discoverer.requestConnection(to: endpointID, using: Data("Jane".utf8), mediums: [.wifiLAN])
}

/// §5: async/await.
func chat(over manager: ConnectionManager) async throws {
    let events = manager.events
    let discoverer = Discoverer(connectionManager: manager)
    try await discoverer.startDiscovery(mediums: [.wifiLAN])
    for await event in events {
        switch event {
        case .endpointFound(let endpointID, _, _):
            discoverer.stopDiscovery()
            try await discoverer.requestConnection(to: endpointID, using: Data("Jane".utf8), mediums: [.wifiLAN])
        case .connectionRequested(let endpointID, _, let code, _):
            print("verification code \(code.digits)")
            try await manager.accept(endpointID)
        case .stateChanged(let endpointID, .connected, _):
            try await manager.send(Data("hello".utf8), to: endpointID)
            return
        default:
            break
        }
    }
}

/// §5: tests without radios.
func migrationSnippetInMemory() -> (InMemoryMedium.Air, ConnectionManager) {
    let air = InMemoryMedium.Air()
    var options = ConnectionOptions()
    options.useInMemoryMediums([InMemoryMedium(air: air)])
    let alice = ConnectionManager(serviceID: "com.example.chat", strategy: .pointToPoint, options: options)
    return (air, alice)
}

// MARK: - Running them

/// A manager on `air`, as the §5 snippet makes one, with a quiet logger and a scratch receive directory.
private func inMemoryManager(_ air: InMemoryMedium.Air, strategy: Strategy = .cluster) -> ConnectionManager {
    var options = ConnectionOptions(receiveDirectory: FileManager.default.temporaryDirectory)
    options.logger.logLevel = .critical
    options.useInMemoryMediums([InMemoryMedium(air: air)])
    return ConnectionManager(serviceID: "com.example.chat", strategy: strategy, options: options)
}

/// Waits (up to a generous bound, never a timing assertion) for the first event `match` accepts.
@discardableResult
private func first<Value: Sendable>(
    _ events: AsyncStream<ConnectionEvent>, _ what: String, _ match: @escaping @Sendable (ConnectionEvent) -> Value?
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value?.self) { group in
        group.addTask {
            for await event in events { if let value = match(event) { return value } }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: .seconds(30))
            return nil
        }
        defer { group.cancelAll() }
        guard let value = try await group.next() ?? nil else {
            throw NearbyError(.timeout, "no \(what) within 30 s")
        }
        return value
    }
}

@Suite("docs/MIGRATING.md snippets", .timeLimit(.minutes(5)))
struct MigrationGuideSnippetTests {
    @Test("the manager and options snippets make managers without opening anything")
    func managers() async throws {
        let plain = migrationSnippetManager()
        #expect(plain.strategy == .cluster)
        let withOptions = try migrationSnippetOptions()
        #expect(withOptions.serviceID == "com.example.chat")
        await plain.shutdown()
        await withOptions.shutdown()
    }

    @Test("Google's delegate sample connects two chats and delivers a message")
    func delegateSample() async throws {
        let air = InMemoryMedium.Air()
        let jane = Chat(connectionManager: inMemoryManager(air))
        let john = Chat(connectionManager: inMemoryManager(air))
        let janeEvents = jane.connectionManager.events
        let johnEvents = john.connectionManager.events
        jane.advertise()
        john.discover()
        let janeID = jane.connectionManager.localEndpointID
        try await first(johnEvents, "connection") { event in
            if case .stateChanged(janeID, .connected, _) = event { return true }
            return nil
        }
        _ = john.send("hi Jane", to: janeID)
        let text = try await first(janeEvents, "message") { event in
            if case .bytesReceived(_, _, let data) = event { return String(decoding: data, as: UTF8.self) }
            return nil
        }
        #expect(text == "hi Jane")
        john.stop()
        jane.stop()
        await jane.connectionManager.shutdown()
        await john.connectionManager.shutdown()
    }

    @Test("the async snippet connects, accepts and sends")
    func asyncSample() async throws {
        let air = InMemoryMedium.Air()
        let advertising = inMemoryManager(air, strategy: .pointToPoint)
        let discovering = inMemoryManager(air, strategy: .pointToPoint)
        let advertiserEvents = advertising.events
        let advertiserMessages = advertising.events
        let advertiser = Advertiser(connectionManager: advertising)
        try await advertiser.startAdvertising(using: Data("Jane".utf8))
        let accepting = Task {
            let id = try await first(advertiserEvents, "request") { event in
                if case .connectionRequested(let id, _, _, _) = event { return id }
                return nil
            }
            try await advertising.accept(id)
        }
        try await chat(over: discovering)
        try await accepting.value
        let text = try await first(advertiserMessages, "message") { event in
            if case .bytesReceived(_, _, let data) = event { return String(decoding: data, as: UTF8.self) }
            return nil
        }
        #expect(text == "hello")
        await advertising.shutdown()
        await discovering.shutdown()
    }

    @Test("requestConnection(to:using:mediums:) refuses an endpoint found over another medium; the snippet's request goes through")
    func requestOverMediums() async throws {
        let air = InMemoryMedium.Air()
        let advertising = inMemoryManager(air, strategy: .pointToPoint)
        let discovering = inMemoryManager(air, strategy: .pointToPoint)
        let requests = advertising.events
        let found = discovering.events
        let advertiser = Advertiser(connectionManager: advertising)
        let discoverer = Discoverer(connectionManager: discovering)
        try await advertiser.startAdvertising(using: Data("Jane".utf8))
        try await discoverer.startDiscovery()
        let endpointID = try await first(found, "endpoint") { event in
            if case .endpointFound(let id, _, _) = event { return id }
            return nil
        }
        let refusal = await #expect(throws: NearbyError.self) {
            try await discoverer.requestConnection(to: endpointID, using: Data("Jane".utf8), mediums: [.ble])
        }
        #expect(refusal?.code == .mediumUnavailable)
        migrationSnippetRequest(discoverer, endpointID)
        let incoming = try await first(requests, "request") { event in
            if case .connectionRequested(_, let context, _, true) = event { return String(decoding: context, as: UTF8.self) }
            return nil
        }
        #expect(incoming == "Jane")
        await advertising.shutdown()
        await discovering.shutdown()
    }

    @Test("the in-memory snippet makes a manager that advertises without radios")
    func inMemory() async throws {
        let (_, alice) = migrationSnippetInMemory()
        let sessions = try await Advertiser(connectionManager: alice).startAdvertising(using: Data("Alice".utf8))
        #expect(sessions.count == 1)
        await alice.shutdown()
    }
}
