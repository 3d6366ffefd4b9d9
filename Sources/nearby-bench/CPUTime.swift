import Foundation

/// CPU time (user + system, all threads) of a process, from /proc/PID/stat, in seconds.
func processCPUSeconds(pid: Int32) -> Double? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return nil }
    // After "pid (comm)": field 3 is the state; utime and stime are fields 14 and 15.
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// CPU time (user + system, all threads, also those that ended) of this process, in seconds, to the microsecond.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// CPU seconds used by the sender (this process) and the receiver (`pid`, to the clock tick) while `work` runs.
struct CPUSample {
    var sender: Double?
    var receiver: Double?

    static func measure<T>(receiver pid: Int32, _ work: () async throws -> T) async rethrows -> (T, CPUSample) {
        let sender0: Double? = ownCPUSeconds(), receiver0 = processCPUSeconds(pid: pid)
        let value = try await work()
        let sender1: Double? = ownCPUSeconds(), receiver1 = processCPUSeconds(pid: pid)
        var sample = CPUSample()
        if let sender0, let sender1 { sample.sender = sender1 - sender0 }
        if let receiver0, let receiver1 { sample.receiver = receiver1 - receiver0 }
        return (value, sample)
    }

    /// Seconds per GiB moved, for each side.
    func perGiB(_ bytes: Int) -> CPUSample {
        let gib = Double(bytes) / Double(1 << 30)
        return CPUSample(sender: sender.map { $0 / gib }, receiver: receiver.map { $0 / gib })
    }

    /// Two `cpu_seconds_per_gib` lines (sender, receiver), each against plain TCP's for the same transfer.
    static func emit(stack: CPUSample, plain: CPUSample, bytes: Int, to report: Report) {
        let stack = stack.perGiB(bytes), plain = plain.perGiB(bytes)
        for (side, value, baseline) in [("sender", stack.sender, plain.sender), ("receiver", stack.receiver, plain.receiver)] {
            report.emit(Figure(
                metric: "cpu_seconds_per_gib", value: value, unit: "s", baseline: "plain_tcp", baselineValue: baseline,
                lowerIsBetter: true, note: [("side", side), ("measured", "user+system CPU of the whole process, file transfer")]))
        }
    }
}
