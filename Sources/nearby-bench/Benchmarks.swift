import Foundation
import NearbyConnections
import NearbySecurity

/// Runs every figure in order. A figure that fails is still printed, with `"error"` and a null value.
struct Benchmarks {
    let sizes: Sizes
    let report: Report
    static let bytesPayloadSize = 1_047_552
    static let megabyte = 1_000_000.0

    func runAll(only: String? = nil) async throws {
        if only == nil || only == "throughput" {
            // 1. The cipher's ceiling, in process, one core, next to the bare primitives.
            let limits = CryptoLimits.measure(bytes: sizes.cryptoBytes)
            limits.emit(to: report)
            // The writer sealing on several tasks at once, against that one-core ceiling.
            await SealingBench.emit(bytes: sizes.cryptoBytes / 2, cryptoLimit: limits.seal, to: report)

            // 2. Throughput and connection latency against one receiver process.
            let single = await throughputAndLatency(cryptoLimit: limits.seal)

            // 3. Many spokes at once against one star hub.
            await StarBench(sizes: sizes, report: report).run(singleConnectionMBps: single)
        }
        if only == "star" { await StarBench(sizes: sizes, report: report).run(singleConnectionMBps: nil) }
        if only == "file" {
            // The file transfer alone (for profilers: no cipher measurement in this process, no BYTES).
            await throughputAndLatency(cryptoLimit: nil, latency: false, bytes: false)
        }
        if only == "crypto" {
            // The cipher's ceilings and the sealing stage only (seconds, no receiver process).
            let limits = CryptoLimits.measure(bytes: sizes.cryptoBytes)
            limits.emit(to: report)
            await SealingBench.emit(bytes: sizes.cryptoBytes / 2, cryptoLimit: limits.seal, to: report)
        }
        if only == "transfer" {
            // Crypto limits and the single-connection transfers only (for profiling the data path).
            let limits = CryptoLimits.measure(bytes: sizes.cryptoBytes)
            limits.emit(to: report)
            await SealingBench.emit(bytes: sizes.cryptoBytes / 2, cryptoLimit: limits.seal, to: report)
            await throughputAndLatency(cryptoLimit: limits.seal, latency: false)
        }
        // 4. A transfer cut once and resumed, against the same transfer uncut.
        if only == nil || only == "resume" { await ResumeBench(sizes: sizes, report: report).run() }

        // 5. Memory per idle connection, against a fresh receiver process.
        if only == nil || only == "idle" { await idleConnectionMemory() }

        // 6. Discovery, when Avahi is there.
        if only == nil || only == "discovery" { await discoveryLatency() }

        let abandoned = abandonedCalls.withLock { $0 }
        if !abandoned.isEmpty { warn("calls abandoned after 5 s (hung in the stack): \(abandoned)") }
    }

    // MARK: - Throughput, RSS, connect latency

    /// Returns the single-connection file throughput (MB/s), the star figures' baseline.
    @discardableResult
    func throughputAndLatency(cryptoLimit: Double?, latency: Bool = true, bytes: Bool = true) async -> Double? {
        var singleFileMBps: Double?
        let fileMetric = "wifi_lan_file_throughput", bytesMetric = "wifi_lan_bytes_throughput"
        var receiver: ReceiverProcess?
        var sourceDirectory: URL?
        do {
            let peer = try ReceiverProcess()
            receiver = peer
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-bench-send-\(UUID().uuidString)")
            sourceDirectory = directory
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let source = directory.appendingPathComponent("source.bin")
            try makeFile(at: source, size: sizes.fileBytes)

            let (manager, tracker, endpoint) = try await Benchmarks.connect(to: peer.nearbyPort)
            let idleRSS = procStatusKB(pid: peer.pid, field: "VmRSS")

            // The file through the stack.
            var acks = await tracker.state.acks
            var start = now()
            let (fileSeconds, stackCPU) = try await CPUSample.measure(receiver: peer.pid) {
                _ = try await bounded(60, "sendResource") { try await manager.sendResource(at: source, withName: "bench.bin", to: endpoint) }
                let target = acks + 1
                guard await tracker.wait(timeout: 600, { $0.acks >= target }) else { throw BenchFailure("the file did not arrive") }
                return now() - start
            }
            let peakKB = procStatusKB(pid: peer.pid, field: "VmHWM")

            // The same file over plain TCP, also written to disk and fsync'd on the receiver.
            let (plainFileSeconds, plainCPU) = try await CPUSample.measure(receiver: peer.pid) {
                try PlainTCP.transfer(port: peer.tcpPort, mode: "F", total: sizes.fileBytes, file: source.path)
            }
            let fileMBps = Double(sizes.fileBytes) / Self.megabyte / fileSeconds
            singleFileMBps = fileMBps
            report.emit(Figure(metric: fileMetric, value: fileMBps, unit: "MB/s", baseline: "plain_tcp",
                               baselineValue: Double(sizes.fileBytes) / Self.megabyte / plainFileSeconds))
            report.emit(Figure(metric: fileMetric, value: fileMBps, unit: "MB/s", baseline: "crypto_limit", baselineValue: cryptoLimit))
            CPUSample.emit(stack: stackCPU, plain: plainCPU, bytes: sizes.fileBytes, to: report)
            report.emit(Figure(
                metric: "rss_during_transfer", value: peakKB.map { Double($0) / 1024 }, unit: "MB",
                baseline: "receiver_idle_rss", baselineValue: idleRSS.map { Double($0) / 1024 }, lowerIsBetter: true,
                note: [("file_bytes", "\(sizes.fileBytes)")]))

            if !bytes {
                await closeQuietly(manager, tracker, endpoint: endpoint)
                receiver?.stop()
                try? FileManager.default.removeItem(at: directory)
                return singleFileMBps
            }

            // BYTES payloads back to back.
            let payload = Data((0..<Self.bytesPayloadSize).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            acks = await tracker.state.acks
            start = now()
            for _ in 0..<sizes.bytesPayloads { _ = try await bounded(60, "send") { try await manager.send(payload, to: endpoint) } }
            let bytesTarget = acks + sizes.bytesPayloads
            guard await tracker.wait(timeout: 600, { $0.acks >= bytesTarget }) else { throw BenchFailure("the BYTES payloads did not arrive") }
            let bytesSeconds = now() - start
            let bytesTotal = Self.bytesPayloadSize * sizes.bytesPayloads
            let plainBytesSeconds = try PlainTCP.transfer(port: peer.tcpPort, mode: "B", total: bytesTotal, file: nil)
            let bytesMBps = Double(bytesTotal) / Self.megabyte / bytesSeconds
            report.emit(Figure(metric: bytesMetric, value: bytesMBps, unit: "MB/s", baseline: "plain_tcp",
                               baselineValue: Double(bytesTotal) / Self.megabyte / plainBytesSeconds))
            report.emit(Figure(metric: bytesMetric, value: bytesMBps, unit: "MB/s", baseline: "crypto_limit", baselineValue: cryptoLimit))

            await closeQuietly(manager, tracker, endpoint: endpoint)
        } catch {
            warn("throughput: \(error)")
            for (metric, unit) in [(fileMetric, "MB/s"), ("rss_during_transfer", "MB"), (bytesMetric, "MB/s")] {
                report.emit(Figure(metric: metric, value: nil, unit: unit, note: [("error", "\(error)")]))
            }
        }
        if let sourceDirectory { try? FileManager.default.removeItem(at: sourceDirectory) }

        if !latency {
            receiver?.stop()
            return singleFileMBps
        }
        do {
            guard let peer = receiver else { throw BenchFailure("no receiver process") }
            var stack: [Double] = []
            var plain: [Double] = []
            var failures = 0
            let port = peer.nearbyPort
            for index in 0..<sizes.connections {
                if index > 0, index % 100 == 0 { warn("connect latency: \(index) of \(sizes.connections)") }
                do {
                    let elapsed = try await bounded(60, "connection \(index)") {
                        let (manager, tracker, endpoint, seconds) = try await Benchmarks.timedConnect(to: port)
                        await closeQuietly(manager, tracker, endpoint: endpoint)
                        return seconds * 1000
                    }
                    stack.append(elapsed)
                } catch {
                    failures += 1
                    warn("connect latency: \(error)")
                    if failures > 5 { throw BenchFailure("more than 5 connections failed; last: \(error)") }
                }
                plain.append(try PlainTCP.connectRoundTrip(port: peer.tcpPort) * 1000)
            }
            let abandoned = abandonedCalls.withLock { $0 }
            let count = [("connections", "\(stack.count)"), ("failed", "\(failures)")]
                + (abandoned.isEmpty ? [] : [("abandoned_calls", abandoned.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: ","))])
            report.emit(Figure(metric: "connect_latency", value: median(stack), unit: "ms", baseline: "plain_tcp",
                               baselineValue: median(plain), lowerIsBetter: true, note: [("statistic", "median")] + count))
            report.emit(Figure(metric: "connect_latency_p99", value: percentile(stack, 99), unit: "ms", baseline: "plain_tcp",
                               baselineValue: percentile(plain, 99), lowerIsBetter: true, note: [("statistic", "p99")] + count))
        } catch {
            warn("connect latency: \(error)")
            report.emit(Figure(metric: "connect_latency", value: nil, unit: "ms", lowerIsBetter: true, note: [("error", "\(error)")]))
            report.emit(Figure(metric: "connect_latency_p99", value: nil, unit: "ms", lowerIsBetter: true, note: [("error", "\(error)")]))
        }
        receiver?.stop()
        return singleFileMBps
    }

    /// A new manager connected by address to the receiver, both sides accepted.
    static func connect(to port: Int) async throws -> (ConnectionManager, Tracker, EndpointID) {
        let (manager, tracker, endpoint, _) = try await timedConnect(to: port)
        return (manager, tracker, endpoint)
    }

    /// ``connect(to:)``, also returning the seconds from the connection request to this side's `connected`
    /// (creating the manager and subscribing to its events are set-up, not part of the connection).
    static func timedConnect(to port: Int) async throws -> (ConnectionManager, Tracker, EndpointID, Double) {
        let manager = ConnectionManager(
            serviceID: "nearby-bench", strategy: .cluster,
            options: benchOptions())
        let tracker = Tracker(manager: manager)
        await tracker.start()
        let endpoint: EndpointID
        let start = now()
        do {
            endpoint = try await bounded(30, "requestConnection(toAddress:)") {
                try await manager.requestConnection(toAddress: "127.0.0.1", port: port, using: Data("bench-sender".utf8))
            }
        } catch {
            await closeQuietly(manager, tracker, endpoint: nil)
            throw error
        }
        guard await tracker.wait(timeout: 30, { $0.connected.contains(endpoint) }) else {
            await closeQuietly(manager, tracker, endpoint: endpoint)
            throw BenchFailure("no connection to 127.0.0.1:\(port) within 30 s")
        }
        return (manager, tracker, endpoint, now() - start)
    }

    func makeFile(at url: URL, size: Int) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw BenchFailure("cannot create \(url.path)") }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for index in block.indices {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            block[index] = UInt8(truncatingIfNeeded: state >> 33)
        }
        let data = Data(block)
        var written = 0
        while written < size {
            let piece = min(data.count, size - written)
            try handle.write(contentsOf: data.prefix(piece))
            written += piece
        }
    }

    // MARK: - idle_connection_memory

    func idleConnectionMemory() async {
        var receiver: ReceiverProcess?
        var held: [(ConnectionManager, Tracker)] = []
        do {
            let peer = try ReceiverProcess()
            receiver = peer
            // One connection first, so lazily created state is not counted.
            let (warmManager, warmTracker, _) = try await Benchmarks.connect(to: peer.nearbyPort)
            held.append((warmManager, warmTracker))
            try await Task.sleep(for: .milliseconds(500))
            guard let before = procStatusKB(pid: peer.pid, field: "VmRSS") else { throw BenchFailure("cannot read the receiver's RSS") }
            for _ in 0..<sizes.idleConnections {
                let (manager, tracker, _) = try await Benchmarks.connect(to: peer.nearbyPort)
                held.append((manager, tracker))
            }
            try await Task.sleep(for: .seconds(1))
            guard let after = procStatusKB(pid: peer.pid, field: "VmRSS") else { throw BenchFailure("cannot read the receiver's RSS") }
            report.emit(Figure(
                metric: "idle_connection_memory", value: Double(after - before) / Double(sizes.idleConnections), unit: "KB",
                baseline: nil, baselineValue: nil, lowerIsBetter: true,
                note: [("connections", "\(sizes.idleConnections)"), ("measured", "receiver VmRSS growth per connected endpoint")]))
        } catch {
            warn("idle connection memory: \(error)")
            report.emit(Figure(metric: "idle_connection_memory", value: nil, unit: "KB", lowerIsBetter: true, note: [("error", "\(error)")]))
        }
        for (manager, tracker) in held { await closeQuietly(manager, tracker, endpoint: nil) }
        receiver?.stop()
    }

    // MARK: - discovery_latency

    func discoveryLatency() async {
        let metric = "discovery_latency"
        let socketPaths = ["/run/avahi-daemon/socket", "/var/run/avahi-daemon/socket"]
        let avahiHere = socketPaths.contains(where: { FileManager.default.fileExists(atPath: $0) })
            || ProcessInfo.processInfo.environment["NEARBY_TEST_AVAHI_PID"] != nil
        guard avahiHere else {
            report.emit(Figure(metric: metric, value: nil, unit: "ms", lowerIsBetter: true, note: [("skipped", "avahi-daemon not running")]))
            return
        }
        var samples: [Double] = []
        do {
            for run in 0..<sizes.discoveryRuns {
                let serviceID = "nearby-bench-\(getpid())-\(run)"
                let seeker = ConnectionManager(serviceID: serviceID, strategy: .cluster, options: benchOptions())
                let tracker = Tracker(manager: seeker)
                await tracker.start()
                let discoverer = Discoverer(connectionManager: seeker)
                try await bounded(15, "startDiscovery") { try await discoverer.startDiscovery(mediums: [.wifiLAN]) }
                let publisher = ConnectionManager(serviceID: serviceID, strategy: .cluster, options: benchOptions())
                let advertiser = Advertiser(connectionManager: publisher)
                let start = now()
                let sessions = try await bounded(15, "startAdvertising") { try await advertiser.startAdvertising(using: Data("bench-\(run)".utf8), mediums: [.wifiLAN]) }
                if let problem = sessions.compactMap(\.discoverabilityProblem).first {
                    await closeQuietly(publisher, tracker, endpoint: nil)
                    await closeQuietly(seeker, tracker, endpoint: nil)
                    throw BenchFailure("advertising is not discoverable: \(problem.message)")
                }
                let found = await tracker.wait(timeout: 15) { !$0.found.isEmpty }
                let elapsed = (now() - start) * 1000
                try? await bounded(5, "stopDiscovery") { await discoverer.stopDiscoveryAndWait() }
                try? await bounded(5, "stopAdvertising") { await advertiser.stopAdvertisingAndWait() }
                await closeQuietly(publisher, tracker, endpoint: nil)
                await closeQuietly(seeker, tracker, endpoint: nil)
                withExtendedLifetime((discoverer, advertiser)) {}
                guard found else { throw BenchFailure("the published endpoint was not found within 15 s") }
                samples.append(elapsed)
            }
            var baseline: [Double] = []
            if AvahiToolsBaseline.available() {
                for run in 0..<sizes.discoveryRuns {
                    if let value = AvahiToolsBaseline.once(name: "nearby-bench-\(getpid())-\(run)") { baseline.append(value) }
                }
            }
            report.emit(Figure(
                metric: metric, value: median(samples), unit: "ms", baseline: baseline.isEmpty ? nil : "avahi_tools",
                baselineValue: baseline.isEmpty ? nil : median(baseline), lowerIsBetter: true,
                note: [("statistic", "median"), ("runs", "\(sizes.discoveryRuns)")]
                    + (baseline.isEmpty ? [("baseline_note", "avahi-browse/avahi-publish not available or never saw the service")] : [])))
        } catch {
            warn("discovery latency: \(error)")
            report.emit(Figure(metric: metric, value: nil, unit: "ms", lowerIsBetter: true, note: [("error", "\(error)")]))
        }
    }
}

/// The discovery baseline: Avahi's own tools. `avahi-browse -r -p` is started first (as our discoverer is), then
/// the time from launching `avahi-publish -s` to browse printing the resolved (`=`) line for the same name.
enum AvahiToolsBaseline {
    static let serviceType = "_nb-bench._tcp"

    static func available() -> Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/avahi-browse")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/stdbuf")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/avahi-publish")
    }

    /// One run, in milliseconds; nil when the service was not seen within 15 s.
    static func once(name: String) -> Double? {
        let browse = Process()
        // Line-buffered, or avahi-browse holds its lines in a pipe until it exits.
        browse.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
        browse.arguments = ["-oL", "/usr/bin/avahi-browse", "-r", "-p", serviceType]
        let output = Pipe()
        browse.standardOutput = output
        browse.standardError = FileHandle.nullDevice
        let publish = Process()
        publish.executableURL = URL(fileURLWithPath: "/usr/bin/avahi-publish")
        publish.arguments = ["-s", name, serviceType, "9"]
        publish.standardOutput = FileHandle.nullDevice
        publish.standardError = FileHandle.nullDevice
        defer {
            for process in [publish, browse] where process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                let deadline = now() + 2
                while process.isRunning, now() < deadline { usleep(10_000) }
            }
        }
        do { try browse.run() } catch { return nil }
        usleep(300_000)  // let the browser register before publishing
        let seen = DispatchSemaphore(value: 0)
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            var buffer = ""
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { return }
                buffer += String(decoding: chunk, as: UTF8.self)
                if buffer.split(separator: "\n").contains(where: { $0.hasPrefix("=") && $0.contains(name) }) {
                    seen.signal()
                    return
                }
            }
        }
        let start = now()
        do { try publish.run() } catch { return nil }
        guard seen.wait(timeout: .now() + 15) == .success else { return nil }
        return (now() - start) * 1000
    }
}
