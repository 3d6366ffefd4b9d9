import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyMessages
import NearbyMessagesService
import NearbyTesting
import NearbyTestSupport
import NearbyWire

/// A fresh temporary directory.
func temporaryDirectory(_ tag: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-svc-\(tag)-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Managers whose only medium is an in-memory Wi-Fi LAN on `air`, with consent for the run.
func inMemoryManagers(
    _ air: InMemoryMedium.Air, consentDirectory: URL, clock: NearbyClock = .continuous
) -> MessageService.ManagerFactory {
    { serviceID in
        MessageManager(
            clock: clock, serviceID: serviceID, consent: ConsentStore(directory: consentDirectory),
            permissionRequest: { .grantForThisRun },
            mediums: { kind, _ in
                guard kind == .wifiLAN else { throw NearbyError(.mediumUnavailable, "only the in-memory Wi-Fi LAN") }
                return InMemoryMedium(air: air)
            })
    }
}

/// A service on `air` saving to `stateFile`.
func inMemoryService(
    _ air: InMemoryMedium.Air, stateFile: URL?, notifier: (any ServiceNotifier)? = nil, clock: NearbyClock = .continuous
) throws -> MessageService {
    MessageService(
        managerFactory: inMemoryManagers(air, consentDirectory: try temporaryDirectory("consent"), clock: clock),
        strategy: MessageStrategy(mediums: .wifiLAN), stateFile: stateFile.map(ServiceStateFile.init(url:)),
        notifier: notifier)
}

/// Records what a client of the service receives.
final class EventRecorder: Sendable {
    private let storage = LockedValue<[ServiceEvent]>([])
    var events: [ServiceEvent] { storage.withLock { $0 } }
    var sink: MessageService.EventSink { { event in self.storage.withLock { $0.append(event) } } }

    /// Waits until an event satisfies `predicate` (bounded).
    func waitFor(_ what: String, _ predicate: @escaping (ServiceEvent) -> Bool) async throws -> ServiceEvent {
        try await eventually(within: 20, what) { events.first(where: predicate) }
    }
}

extension ServiceNotifier where Self == RecordingNotifier {
    static var recording: RecordingNotifier { RecordingNotifier() }
}

/// A notifier that records instead of showing.
final class RecordingNotifier: ServiceNotifier {
    let recorder = EventRecorder()
    func notify(_ event: ServiceEvent) { recorder.sink(event) }
}
