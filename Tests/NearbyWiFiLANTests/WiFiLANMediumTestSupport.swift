import NearbyTestSupport
import Foundation
import NearbyCore
import NearbyWiFiLAN
import NearbyWire

/// Whether the private network namespace of `scripts/with-test-network.sh` (with its own avahi-daemon) is up.
let wifiLANMediumHasAvahi = ProcessInfo.processInfo.environment["NEARBY_TEST_NETNS"] != nil

/// A service ID no other test uses, so parallel tests never see each other's advertisements.
func wifiLANMediumUniqueServiceID() -> String {
    "swift-nearby-test-\(UUID().uuidString)"
}

/// A value behind a lock, for test doubles.
final class WiFiLANMediumTestBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var storedValue: Value

    init(_ value: Value) {
        storedValue = value
    }

    var value: Value {
        lock.lock()
        defer { lock.unlock() }
        return storedValue
    }

    func update(_ body: (inout Value) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        body(&storedValue)
    }
}

/// A scripted DNS-SD backend: records what is registered and withdrawn, and plays browse events the test feeds.
final class WiFiLANMediumFakeDNSSD: DNSServiceDiscovery {
    let registered = WiFiLANMediumTestBox<[DNSSDService]>([])
    let withdrawn = WiFiLANMediumTestBox<[String]>([])
    let browsedTypes = WiFiLANMediumTestBox<[String]>([])
    let registerError: NearbyError?
    let events: AsyncThrowingStream<DNSSDBrowseEvent, any Error>
    let feed: AsyncThrowingStream<DNSSDBrowseEvent, any Error>.Continuation

    init(registerError: NearbyError? = nil) {
        self.registerError = registerError
        (events, feed) = AsyncThrowingStream.makeStream(of: DNSSDBrowseEvent.self, throwing: (any Error).self)
    }

    func register(_ service: DNSSDService) async throws -> DNSSDRegistration {
        if let registerError {
            throw registerError
        }
        registered.update { $0.append(service) }
        let withdrawn = self.withdrawn
        let done = WiFiLANMediumTestBox(false)
        return DNSSDRegistration(
            withdraw: {
                var first = false
                done.update { isDone in
                    first = !isDone
                    isDone = true
                }
                if first {
                    withdrawn.update { $0.append(service.instanceName) }
                }
            },
            failure: { nil }
        )
    }

    func browse(serviceType: String) -> AsyncThrowingStream<DNSSDBrowseEvent, any Error> {
        browsedTypes.update { $0.append(serviceType) }
        return events
    }
}

/// Collects a discovery stream in the background so that tests can wait for events with a bound.
typealias WiFiLANMediumDiscoveryRecorder = StreamRecorder<DiscoveryEvent>

/// The `found` endpoint with `endpointID` in `event`, if that is what it is.
func wifiLANMediumFound(_ endpointID: String) -> (DiscoveryEvent) -> DiscoveredEndpoint? {
    { event in
        if case .found(let endpoint) = event, endpoint.endpointID == endpointID {
            return endpoint
        }
        return nil
    }
}

/// Runs `avahi-browse -rpt serviceType` (a child process, ended by its PID if it overruns) and returns its output.
func wifiLANMediumAvahiBrowse(_ serviceType: String, within seconds: Double = 15) async throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/avahi-browse")
    process.arguments = ["-rpt", serviceType]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let exited = WiFiLANMediumTestBox(false)
    let (terminations, terminated) = AsyncStream.makeStream(of: Void.self)
    process.terminationHandler = { _ in
        exited.update { $0 = true }
        terminated.yield()
        terminated.finish()
    }
    try process.run()
    // Read while it runs, so a full pipe cannot block it.
    let reader = Task.detached { output.fileHandleForReading.readDataToEndOfFile() }
    do {
        try await withTestTimeout(seconds, "avahi-browse to exit") {
            for await _ in terminations {}
        }
    } catch {
        if !exited.value {
            process.terminate()
        }
        throw error
    }
    return String(decoding: await reader.value, as: UTF8.self)
}
