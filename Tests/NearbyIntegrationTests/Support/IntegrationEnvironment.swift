import Foundation
import Testing

/// Facts about the environment the integration tests run in.
enum IntegrationEnvironment {
    /// Whether `scripts/with-test-network.sh` is up (private namespace with its own avahi-daemon).
    static var inTestNetwork: Bool {
        ProcessInfo.processInfo.environment["NEARBY_TEST_NETNS"] != nil
    }

    /// A service ID no other test uses, so tests never see each other's advertisements.
    static func uniqueServiceID(_ tag: String) -> String {
        "swift-nearby-it-\(tag)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// The built `nearby` executable: `$NEARBY_CLI`, else beside the test runner binary, else under
    /// `$NEARBY_REPO_ROOT/.build/debug`.
    static func nearbyExecutable() throws -> URL {
        var candidates: [String] = []
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["NEARBY_CLI"] { candidates.append(explicit) }
        if let runner = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: runner).deletingLastPathComponent().appendingPathComponent("nearby").path)
        }
        if let root = environment["NEARBY_REPO_ROOT"] {
            candidates.append(root + "/.build/debug/nearby")
        }
        candidates.append(FileManager.default.currentDirectoryPath + "/.build/debug/nearby")
        for path in candidates where FileManager.default.isExecutableFile(atPath: path) {
            return URL(fileURLWithPath: path)
        }
        throw IntegrationFailure("the `nearby` executable is not built (looked at \(candidates)); run `swift build --product nearby`")
    }
}

/// A failure of the test machinery itself (missing binary, timeout, unexpected exit), with a readable message.
struct IntegrationFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
