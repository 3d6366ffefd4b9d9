import NearbyTestSupport
import Foundation
import NearbyWiFiLAN
import NearbyWire

/// Whether this process runs inside the private network namespace made by `scripts/with-test-network.sh`, with
/// its own dbus-daemon and avahi-daemon.
let isInTestNetwork = ProcessInfo.processInfo.environment["NEARBY_TEST_NETNS"] != nil

/// A service type that no other test uses, in the Nearby form `_<12 hex>._tcp`.
func uniqueServiceType() -> String {
    "_" + (0..<12).map { _ in String("0123456789ABCDEF".randomElement()!) }.joined() + "._tcp"
}

/// An instance name that no other test uses.
func uniqueInstanceName(_ prefix: String) -> String {
    prefix + (0..<10).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement()!) }.joined()
}

/// Collects the events of a browse stream in the background so that tests can poll them.
typealias BrowseRecorder = StreamRecorder<DNSSDBrowseEvent>

extension StreamRecorder where Event == DNSSDBrowseEvent {
    /// The latest `.found` for `name`, if any.
    func found(_ name: String) -> DNSSDResolvedService? {
        for event in events.reversed() {
            if case .found(let service) = event, service.instanceName == name {
                return service
            }
        }
        return nil
    }

    /// Whether `.lost(name)` came after a `.found` for `name`.
    func lostAfterFound(_ name: String) -> Bool {
        var sawFound = false
        for event in events {
            switch event {
            case .found(let service) where service.instanceName == name: sawFound = true
            case .lost(let lost) where lost == name && sawFound: return true
            default: continue
            }
        }
        return false
    }
}

/// What a finished child process printed.
struct ChildProcessResult {
    var status: Int32
    var output: String
}

/// Runs an executable to completion with stdout and stderr captured, killing it (by its PID) after `seconds`.
func runChildProcess(
    _ path: String,
    _ arguments: [String],
    environment: [String: String]? = nil,
    timeout seconds: Double = 10
) async throws -> ChildProcessResult {
    let outputPath = FileManager.default.temporaryDirectory
        .appendingPathComponent("nearby-dnssd-test-\(UUID().uuidString).out").path
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    let process = try SpawnedProcess(path, arguments, environment: environment, outputPath: outputPath)
    let status: Int32
    do {
        status = try await process.waitForExit(within: seconds, "\(path) \(arguments.joined(separator: " ")) to exit")
    } catch {
        await process.kill()
        throw error
    }
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    return ChildProcessResult(status: status, output: output)
}
