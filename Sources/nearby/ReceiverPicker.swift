import Foundation
import NearbyConnections
import NearbyCore
import NearbyWire

/// `nearby send` with no target: discovers the service's receivers and picks one. After the first is found it waits
/// ``settleTime`` for others (mDNS answers come close together); one found is the target; several are listed and
/// asked about on a terminal, or make the command fail with the list (pick one with `--to-name` or `--endpoint`).
enum ReceiverPicker {
    /// How long discovery goes on after the first receiver is found.
    static let settleTime = 1.5

    static func pick(
        manager: ConnectionManager, discoverer: Discoverer, common: CommonOptions, output: EventOutput
    ) async throws -> String {
        let subscription = manager.events  // before discovery starts, so nothing found is missed
        let found = LockedValue<[(id: String, name: String)]>([])
        let (signals, signal) = AsyncStream<CLIFailure?>.makeStream()
        // Owned here: cancelled below once the choice is made (its loop then ends).
        let watcher = Task {
            for await event in subscription {
                switch event {
                case .endpointFound(let id, let context, _):
                    found.withLock { list in
                        if !list.contains(where: { $0.id == id }) { list.append((id, PeerSession.display(context))) }
                    }
                    signal.yield(nil)
                case .endpointLost(let id):
                    found.withLock { $0.removeAll { $0.id == id } }
                case .discoveryFailed(let medium, let error):
                    signal.yield(CLIFailure("discovery over \(medium) failed: \(error.message)"))
                default:
                    continue
                }
            }
        }
        defer { watcher.cancel() }
        output.note("looking for receivers of \(common.serviceID)…")
        do {
            try await discoverer.startDiscovery(mediums: common.announcedMediums)
        } catch {
            throw CLIFailure("cannot discover: \(ErrorText.describe(error)) (`nearby doctor` checks why)")
        }
        for await failure in signals {
            if let failure { throw failure }
            break
        }
        try? await Task.sleep(for: .milliseconds(Int(settleTime * 1000)))
        let candidates = found.withLock { $0 }
        guard let first = candidates.first else { throw CLIFailure("discovery ended without finding a receiver") }
        if candidates.count == 1 { return first.id }
        let list = candidates.map { "\($0.name) (\($0.id))" }
        guard isatty(STDIN_FILENO) == 1 else {
            throw CLIFailure(
                "found \(candidates.count) receivers: \(list.joined(separator: ", ")); "
                    + "pick one with --to-name NAME or --endpoint ID")
        }
        var prompt = "Several receivers found:\n"
        for (index, entry) in list.enumerated() { prompt += "  \(index + 1). \(entry)\n" }
        prompt += "Send to which one? [1-\(list.count)] "
        FileHandle.standardError.write(Data(prompt.utf8))  // the names in it are escaped already
        let answer = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: readLine() ?? "") }
        }
        guard let choice = Int(answer.trimmingCharacters(in: .whitespaces)), (1...candidates.count).contains(choice) else {
            throw CLIFailure("no receiver chosen")
        }
        return candidates[choice - 1].id
    }
}
