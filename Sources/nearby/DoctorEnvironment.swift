import Foundation
import NearbyCore

#if canImport(Glibc)
import Glibc
#endif

/// Where `nearby doctor` looks: the environment, `/sys`, `/proc` and the tools on `PATH`. Tests point the roots
/// at fakes (`NEARBY_DOCTOR_SYSFS`, `NEARBY_DOCTOR_PROCFS`) and put fake `nft`, `iptables`, `ufw` and
/// `firewall-cmd` first on `PATH`.
struct DoctorEnvironment: Sendable {
    var variables: [String: String]
    var sysfs: String
    var procfs: String

    init(variables: [String: String] = ProcessInfo.processInfo.environment) {
        self.variables = variables
        sysfs = variables["NEARBY_DOCTOR_SYSFS"] ?? "/sys"
        procfs = variables["NEARBY_DOCTOR_PROCFS"] ?? "/proc"
    }

    /// The text of a file, trimmed; `nil` when it cannot be read.
    func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The entries of a directory, sorted; empty when it cannot be read.
    func list(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path)
    }

    /// A tool's path on `PATH` (and the sbin directories, where firewall tools live), if it is there.
    func tool(_ name: String) -> String? {
        let directories = (variables["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
            + ["/usr/sbin", "/sbin"]
        return directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// What a tool printed (stdout and stderr together) and its exit status, or `nil` when it is not installed.
    /// The tool gets `timeout` seconds, then it is killed.
    func run(_ name: String, _ arguments: [String], timeout: Double = 3) -> (status: Int32, output: String)? {
        guard let path = tool(name) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = variables.merging(["LC_ALL": "C"]) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        do { try process.run() } catch { return nil }
        // Read on a thread of its own, so a chatty tool never blocks on a full pipe while we wait for it.
        let collected = LockedValue<Data?>(nil)
        let reader = Thread {
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            collected.withLock { $0 = data }
        }
        reader.start()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            let reap = Date().addingTimeInterval(2)
            while process.isRunning && Date() < reap { usleep(10_000) }
            return (-1, "timed out after \(Int(timeout)) s")
        }
        let drained = Date().addingTimeInterval(2)
        while collected.withLock({ $0 == nil }) && Date() < drained { usleep(5_000) }
        return (process.terminationStatus, String(decoding: collected.withLock { $0 } ?? Data(), as: UTF8.self))
    }
}
