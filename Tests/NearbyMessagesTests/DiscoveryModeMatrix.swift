import Foundation
import NearbyCore
import NearbyWire
import NearbyConnections
import Testing

@testable import NearbyMessages

/// Every pairing of discovery modes at once: three publications (broadcast, scan, both) and three subscriptions
/// (broadcast, scan, both) of one service, each on its own manager. A subscription finds a publication iff one
/// of the two broadcasts and the other scans.
struct DiscoveryModeMatrix {
    static let modes: [(name: String, mode: MessageStrategy.Mode)] = [("b", .broadcast), ("s", .scan), ("bs", .both)]

    /// Whether a subscription in `sub` mode finds a publication in `pub` mode.
    static func finds(pub: MessageStrategy.Mode, sub: MessageStrategy.Mode) -> Bool {
        (pub.contains(.broadcast) && sub.contains(.scan)) || (pub.contains(.scan) && sub.contains(.broadcast))
    }

    /// Runs the matrix on managers from `makeManager` with `mediums`; `content` makes each publication's content
    /// (large content exercises the descriptor and fetch path).
    static func run(
        mediums: MessageStrategy.Mediums, within seconds: Double,
        content: (String) -> Data = { Data("pub-\($0)".utf8) },
        makeManager: () throws -> MessageManager
    ) async throws {
        var subs: [(mode: MessageStrategy.Mode, subscription: Subscription, collector: EventCollector)] = []
        var tasks: [Task<Void, Never>] = []
        defer { for task in tasks { task.cancel() } }
        for (_, mode) in modes {
            var options = SubscribeOptions(strategy: MessageStrategy(mediums: mediums), ttl: nil)
            options.discoveryMode = mode
            let subscription = try await makeManager().subscribe(options: options)
            let collector = EventCollector()
            tasks.append(collector.collect(subscription))
            subs.append((mode, subscription, collector))
        }
        var pubs: [(mode: MessageStrategy.Mode, publication: Publication)] = []
        for (name, mode) in modes {
            var options = PublishOptions(strategy: MessageStrategy(mediums: mediums), ttl: nil)
            options.discoveryMode = mode
            options.redeliveryInterval = .seconds(1)
            let message = Message(content: content(name), namespace: "modes", type: name)
            pubs.append((mode, try await makeManager().publish(message, options: options)))
        }
        let publications = pubs
        let subscriptions = subs
        @Sendable func expected(_ sub: MessageStrategy.Mode) -> Set<Message> {
            Set(publications.filter { finds(pub: $0.mode, sub: sub) }.map(\.publication.message))
        }
        for entry in subscriptions {
            let wanted = expected(entry.mode)
            #expect(
                await eventually(seconds) { wanted.isSubset(of: entry.subscription.foundMessages) },
                "subscription \(entry.mode.rawValue): \(entry.collector.events)")
        }
        // Before checking that nothing else was found: every scanning publication has finished a delivery to each
        // subscription it delivers to, and again (so late deliveries would have shown), and the scanning
        // subscriptions have seen the other advertisements (two publications, and the subscriptions that broadcast).
        let scanningSubscriptions = subscriptions.filter { $0.mode.contains(.scan) }
        #expect(await eventually(seconds) {
            publications.allSatisfy { pub in
                guard let delivery = pub.publication.delivery else { return true }
                let targets = pub.mode.contains(.broadcast) ? 1 : 2  // sub "b" only, or "b" and "bs"
                let counts = delivery.completedDeliveries.values.filter { $0 >= 2 }
                return counts.count >= targets
            }
                && scanningSubscriptions.allSatisfy { $0.subscription.handledEndpoints.withLock { $0.found.count } >= 3 }
        })
        for entry in subscriptions {
            #expect(
                entry.subscription.foundMessages == expected(entry.mode),
                "subscription \(entry.mode.rawValue) found \(entry.subscription.foundMessages.map(\.type))")
            #expect(entry.collector.events.allSatisfy { $0.kind == .found }, "\(entry.collector.events)")
        }
        for pub in publications { await pub.publication.cancel() }
        for entry in subscriptions { await entry.subscription.cancel() }
    }
}
