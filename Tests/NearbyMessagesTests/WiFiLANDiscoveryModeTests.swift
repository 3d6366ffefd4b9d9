import Foundation
import NearbyTestSupport
import Testing

@testable import NearbyMessages

/// The nine pairings of discovery modes over real Wi-Fi LAN (Avahi and TCP in the private network namespace of
/// scripts/with-test-network.sh), small and large messages.
@Suite(
    "Discovery modes over Wi-Fi LAN", .serialized,
    .enabled(if: inTestNetwork, "needs scripts/with-test-network.sh (private avahi-daemon)"), .timeLimit(.minutes(5)))
struct WiFiLANDiscoveryModeTests {
    @Test("every pairing of modes: found iff one side broadcasts and the other scans")
    func matrix() async throws {
        try await withTestTimeout(120, "discovery mode matrix over Wi-Fi LAN") {
            let service = WiFiLANMessagesTests.serviceID("modes")
            try await DiscoveryModeMatrix.run(mediums: .wifiLAN, within: 60) { try testManager(service) }
        }
    }

    @Test("a scanning publication delivers a 20 KB message to a broadcasting subscription")
    func largeDelivery() async throws {
        try await withTestTimeout(120, "large delivery over Wi-Fi LAN") {
            let service = WiFiLANMessagesTests.serviceID("modes-large")
            var subscribeOptions = SubscribeOptions(strategy: WiFiLANMessagesTests.wifiOnly)
            subscribeOptions.discoveryMode = .broadcast
            let subscription = try await testManager(service).subscribe(options: subscribeOptions)
            let collector = EventCollector()
            let collecting = collector.collect(subscription)
            defer { collecting.cancel() }
            var publishOptions = PublishOptions(strategy: WiFiLANMessagesTests.wifiOnly)
            publishOptions.discoveryMode = .scan
            let message = Message(content: Data((0..<20_000).map { UInt8($0 % 251) }), namespace: "files", type: "blob")
            let publication = try await testManager(service).publish(message, options: publishOptions)
            #expect(await eventually(90) { collector.found { $0 == message } }, "\(collector.events)")
            await publication.cancel()
            await subscription.cancel()
        }
    }
}
