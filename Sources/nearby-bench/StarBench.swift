import Foundation
import NearbyConnections
import NearbyCore

/// The star figures: many spokes (in-process `ConnectionManager`s, one connection each, strategy `.star`)
/// against one hub (a `nearby-bench receiver --strategy star` process), with plain TCP doing the same fan-in
/// against the same process as the baseline.
///
/// - `star_connect_all`: from starting every spoke's `requestConnection(toAddress:)` at once until all are
///   connected, against as many plain TCP connects + one 1-byte round trip each, also all at once.
/// - `star_aggregate_throughput`: every spoke of a fan-in sends a file at the same moment; total MB/s until the hub
///   acknowledged every file, against the single-connection file figure of the same run and against plain TCP
///   with the same fan-in (each plain connection also written to disk and fsync'd by the hub process).
struct StarBench {
    let sizes: Sizes
    let report: Report

    private struct Spoke {
        let manager: ConnectionManager
        let tracker: Tracker
        var endpoint: EndpointID?
    }

    func run(singleConnectionMBps: Double?) async {
        let begin = now()
        var hub: ReceiverProcess?
        var spokes: [Spoke] = []
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-bench-star-\(UUID().uuidString)")
        do {
            let peer = try ReceiverProcess(strategy: .star)
            hub = peer
            warn(String(format: "star: hub started in %.1f s", now() - begin))
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for _ in 0..<sizes.starSpokes {
                let manager = ConnectionManager(
                    serviceID: "nearby-bench", strategy: .star, options: benchOptions())
                let tracker = Tracker(manager: manager)
                await tracker.start()
                spokes.append(Spoke(manager: manager, tracker: tracker))
            }
            warn(String(format: "star: hub started and %d spokes created in %.1f s", spokes.count, now() - begin))
            try await connectAll(&spokes, port: peer.nearbyPort, plainPort: peer.tcpPort)
            for fanIn in sizes.starFanIns where fanIn <= spokes.count {
                try await aggregate(Array(spokes.prefix(fanIn)), hub: peer, directory: directory, single: singleConnectionMBps)
            }
        } catch {
            warn("star: \(error)")
            report.emit(Figure(metric: "star_connect_all", value: nil, unit: "ms", lowerIsBetter: true, note: [("error", "\(error)")]))
            report.emit(Figure(metric: "star_aggregate_throughput", value: nil, unit: "MB/s", note: [("error", "\(error)")]))
        }
        let closing = now()
        await withTaskGroup(of: Void.self) { group in
            for spoke in spokes { group.addTask { await closeQuietly(spoke.manager, spoke.tracker, endpoint: spoke.endpoint) } }
        }
        let closed = now()
        try? FileManager.default.removeItem(at: directory)
        hub?.stop()
        warn(String(format: "star: %.1f s in all, of which %.1f s closing %d spokes and %.1f s stopping the hub",
                    now() - begin, closed - closing, spokes.count, now() - closed))
    }

    private func connectAll(_ spokes: inout [Spoke], port: Int, plainPort: Int) async throws {
        let start = now()
        let endpoints = try await withThrowingTaskGroup(of: (Int, EndpointID).self) { group in
            for (index, spoke) in spokes.enumerated() {
                group.addTask {
                    let endpoint = try await bounded(60, "star requestConnection \(index)") {
                        try await spoke.manager.requestConnection(toAddress: "127.0.0.1", port: port, using: Data("spoke-\(index)".utf8))
                    }
                    let settled = await spoke.tracker.wait(timeout: 60) {
                        $0.connected.contains(endpoint) || $0.closed.contains(endpoint)
                    }
                    guard settled, await spoke.tracker.state.connected.contains(endpoint) else {
                        throw BenchFailure("spoke \(index) was not connected within 60 s (\(settled ? "refused or closed" : "timed out"))")
                    }
                    return (index, endpoint)
                }
            }
            var endpoints: [Int: EndpointID] = [:]
            for try await (index, endpoint) in group { endpoints[index] = endpoint }
            return endpoints
        }
        let seconds = now() - start
        for (index, endpoint) in endpoints { spokes[index].endpoint = endpoint }

        let count = spokes.count
        let plainSeconds = try Self.concurrently(count) { _ in _ = try PlainTCP.connectRoundTrip(port: plainPort) }
        report.emit(Figure(
            metric: "star_connect_all", value: seconds * 1000, unit: "ms", baseline: "plain_tcp", baselineValue: plainSeconds * 1000,
            lowerIsBetter: true, note: [("spokes", "\(count)"), ("measured", "all spokes requesting at once until all connected")]))
    }

    private func aggregate(_ spokes: [Spoke], hub: ReceiverProcess, directory: URL, single: Double?) async throws {
        let fanIn = spokes.count
        let perSpoke = sizes.starTotalBytes / fanIn
        let total = perSpoke * fanIn
        let source = directory.appendingPathComponent("star-\(fanIn).bin")
        try Benchmarks(sizes: sizes, report: report).makeFile(at: source, size: perSpoke)
        defer { try? FileManager.default.removeItem(at: source) }

        var acks: [Int] = []
        for spoke in spokes { acks.append(await spoke.tracker.state.acks) }
        let start = now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, spoke) in spokes.enumerated() {
                guard let endpoint = spoke.endpoint else { throw BenchFailure("spoke \(index) is not connected") }
                let target = acks[index] + 1
                group.addTask {
                    _ = try await bounded(60, "star sendResource \(index)") {
                        try await spoke.manager.sendResource(at: source, withName: "star-\(index).bin", to: endpoint)
                    }
                    guard await spoke.tracker.wait(timeout: 600, { $0.acks >= target }) else {
                        throw BenchFailure("spoke \(index)'s file did not arrive")
                    }
                }
            }
            try await group.waitForAll()
        }
        let mbps = Double(total) / Benchmarks.megabyte / (now() - start)
        let path = source.path, port = hub.tcpPort
        let plainSeconds = try Self.concurrently(fanIn) { _ in
            _ = try PlainTCP.transfer(port: port, mode: "F", total: perSpoke, file: path)
        }
        let note = [("spokes", "\(fanIn)"), ("file_bytes", "\(perSpoke)")]
        report.emit(Figure(
            metric: "star_aggregate_throughput", value: mbps, unit: "MB/s", baseline: "single_connection", baselineValue: single,
            note: note))
        report.emit(Figure(
            metric: "star_aggregate_throughput", value: mbps, unit: "MB/s", baseline: "plain_tcp_fan_in",
            baselineValue: Double(total) / Benchmarks.megabyte / plainSeconds, note: note))
    }

    /// Runs `work` on `count` threads at once; returns the wall-clock seconds until all finished.
    static func concurrently(_ count: Int, _ work: @escaping @Sendable (Int) throws -> Void) throws -> Double {
        let group = DispatchGroup()
        let failure = LockedValue<(any Error)?>(nil)
        let start = now()
        for index in 0..<count {
            group.enter()
            Thread.detachNewThread {
                do { try work(index) } catch { failure.withLock { $0 = $0 ?? error } }
                group.leave()
            }
        }
        group.wait()
        let seconds = now() - start
        if let error = failure.withLock({ $0 }) { throw error }
        return seconds
    }
}
