import Foundation
import NearbyWire
import Testing

@testable import NearbyMessages

/// Bytes from a hex string with optional spaces.
func hex(_ text: String) -> [UInt8] {
    (try? Hex.decode(text.replacingOccurrences(of: " ", with: ""))) ?? []
}

/// The `NearbyError` code `body` throws, or `nil` when it throws something else or nothing.
func nearbyErrorCode(_ body: () async throws -> Void) async -> NearbyError.Code? {
    do {
        try await body()
        return nil
    } catch let error as NearbyError {
        return error.code
    } catch {
        return nil
    }
}

/// A fresh temporary directory.
func temporaryDirectory(_ tag: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-msg-\(tag)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Polls `condition` until it holds or `seconds` pass.
func eventually(_ seconds: Double = 30, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return condition()
}

/// Collects what a subscription delivers.
final class EventCollector: Sendable {
    private let storage = LockedValue<[MessageEvent]>([])
    var events: [MessageEvent] { storage.withLock { $0 } }
    func append(_ event: MessageEvent) { storage.withLock { $0.append(event) } }

    func found(_ predicate: (Message) -> Bool) -> Bool { events.contains { $0.kind == .found && predicate($0.message) } }
    func lost(_ predicate: (Message) -> Bool) -> Bool { events.contains { $0.kind == .lost && predicate($0.message) } }

    /// Starts collecting from `subscription`.
    func collect(_ subscription: Subscription) -> Task<Void, Never> {
        let stream = subscription.events
        return Task { for await event in stream { self.append(event) } }
    }
}

import NearbyCore

/// A manager that needs no consent prompt, with its consent file in a temporary directory.
func testManager(
    _ serviceID: String, mediums: MediumProvider? = nil, beaconSource: (any AdvertisingReportSource)? = nil,
    onBluetoothProblem: @escaping MessageManager.ProblemHandler = { _ in },
    onMDNSProblem: @escaping MessageManager.ProblemHandler = { _ in }, clock: NearbyClock = .continuous
) throws -> MessageManager {
    MessageManager(
        clock: clock, serviceID: serviceID, debugLogging: false, consent: ConsentStore(directory: try temporaryDirectory("consent")),
        permissionRequest: { .grantForThisRun }, mediums: mediums ?? MessageManager.factoryMediums(bluetoothController: nil),
        beaconSource: beaconSource, onBluetoothProblem: onBluetoothProblem, onMDNSProblem: onMDNSProblem)
}

/// Whether this run is inside scripts/with-test-network.sh.
let inTestNetwork = ProcessInfo.processInfo.environment["NEARBY_TEST_NETNS"] == "1"
