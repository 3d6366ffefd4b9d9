import Foundation

@testable import NearbyMessagesService

/// The service's state file: the fuzzer's bytes are written to a file and loaded. Loading never throws for a file
/// that exists, and what it keeps is only valid entries, each handle once; a file it does not use is moved (or
/// copied) aside. (One file per process, rewritten for each input.)
func fuzzServiceStateFile(_ input: FuzzInput) {
    let url = FuzzStateFile.url
    guard FileManager.default.createFile(atPath: url.path, contents: Data(input.bytes)) else {
        fuzzCheck(false, "cannot write \(url.path)")
        return
    }
    guard let loaded = try? ServiceStateFile(url: url).load() else {
        fuzzCheck(false, "load threw for a readable file")
        return
    }
    var handles = Set<String>()
    for entry in loaded.state.entries {
        fuzzCheck((try? entry.validate()) != nil, "an invalid entry was kept: \(entry.handle)")
        fuzzCheck(handles.insert(entry.handle).inserted, "handle \(entry.handle) kept twice")
    }
    fuzzCheck((loaded.problem == nil) == (loaded.movedAside == nil), "a problem without a file aside, or the reverse")
    if let aside = loaded.movedAside { try? FileManager.default.removeItem(at: aside) }
}

enum FuzzStateFile {
    static let url: URL = {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("nearby-fuzz-state-\(getpid())")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("service.json")
    }()
}
