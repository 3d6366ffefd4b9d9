import Testing

/// The integration tests of "Nearby Connections over Wi-Fi LAN": real Avahi, real TCP, the `nearby` CLI in child
/// processes and managers in this process. They need `scripts/with-test-network.sh` (run them with
/// `scripts/test.sh --filter NearbyIntegrationTests`) and run one at a time: they move hundreds of megabytes.
@Suite(
    "Nearby Connections over Wi-Fi LAN", .serialized,
    .enabled(if: IntegrationEnvironment.inTestNetwork, "needs scripts/with-test-network.sh (private avahi-daemon)"), .timeLimit(.minutes(5)))
struct WiFiLANIntegration {}
