import CNearbyFuzzMain  // links the process entry point (Fuzz/Sources/CNearbyFuzzMain/entry.c)
import Foundation

/// Every fuzz target in this binary, by the name `scripts/fuzz.sh` passes in `NEARBY_FUZZ_TARGET`.
///
/// One binary holds all targets so that the sanitized dependency graph (SwiftNIO, swift-crypto, SwiftProtobuf) is
/// built and linked once; libFuzzer sees one `LLVMFuzzerTestOneInput` that calls the selected target.
let fuzzTargets: [String: @Sendable (FuzzInput) -> Void] = [
    "framing": fuzzFraming,
    "offline-frame": fuzzOfflineFrame,
    "ukey2-server": fuzzUkey2Server,
    "ukey2-client": fuzzUkey2Client,
    "secure-message": fuzzSecureMessage,
    "wifi-lan-service": fuzzWifiLanService,
    "ble-advertisement": fuzzBleAdvertisement,
    "hci": fuzzHCI,
    "l2cap": fuzzL2CAP,
    "ble-socket": fuzzBLESocket,
    "att": fuzzATT,
    "messages-envelope": fuzzMessagesEnvelope,
    "beacons": fuzzBeacons,
    "connection-state-machine": fuzzConnectionStateMachine,
    "service-protocol": fuzzServiceProtocol,
    "found-lost-flood": fuzzFoundLostFlood,
    "service-state-file": fuzzServiceStateFile,
    "quick-share": fuzzQuickShare,
    "dbus-signals": fuzzDBusSignals,
]

/// The target chosen for this process; an unknown or missing name stops the run before the first input.
let selectedTarget: @Sendable (FuzzInput) -> Void = {
    let name = environment("NEARBY_FUZZ_TARGET") ?? ""
    guard let target = fuzzTargets[name] else {
        let names = fuzzTargets.keys.sorted().joined(separator: ", ")
        FileHandle.standardError.write(Data("NEARBY_FUZZ_TARGET must be one of: \(names)\n".utf8))
        exit(2)
    }
    return target
}()

/// libFuzzer's entry point: runs the selected target on one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    selectedTarget(FuzzInput(bytes))
    return 0
}

/// libFuzzer's set-up hook: with `NEARBY_FUZZ_WRITE_SEEDS=<directory>` the binary writes the seed corpus
/// (``Seeds``) there and exits instead of fuzzing.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: OpaquePointer?, _ argv: OpaquePointer?) -> CInt {
    if let directory = environment("NEARBY_FUZZ_WRITE_SEEDS") {
        // _exit: nothing to clean up, and LeakSanitizer must not count this frame's live values as leaks.
        do {
            try Seeds.write(to: directory)
            _exit(0)
        } catch {
            FileHandle.standardError.write(Data("cannot write seeds: \(error)\n".utf8))
            _exit(1)
        }
    }
    _ = selectedTarget
    return 0
}

/// One environment variable, read without building `ProcessInfo`'s dictionary.
func environment(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}
