// swift-tools-version: 6.1
// The swift-nearby package: Google's Nearby Connections protocol, spoken from Linux in Swift.

import PackageDescription

let package = Package(
    name: "swift-nearby",
    // Linux is the platform: the package is built and tested on Linux only. SwiftPM cannot name Linux here, so this
    // line only sets the minimum macOS for resolving the manifest (Duration and Clock need macOS 13+). It does not
    // build on macOS: NearbyWiFiLAN needs libavahi-client (macOS has Bonjour's dns_sd instead), NearbyBLE's
    // `hci:N` is the Linux HCI user channel (macOS gives no process the controller; CoreBluetooth would be needed),
    // and file and socket code imports Glibc. A macOS port would need a DNS-SD client over dns_sd, a BLE medium
    // over CoreBluetooth (or a controller reached over tcp: or uart: only), and Darwin imports.
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "NearbyWire", targets: ["NearbyWire"]),
        .library(name: "NearbySecurity", targets: ["NearbySecurity"]),
        .library(name: "NearbyCore", targets: ["NearbyCore"]),
        .library(name: "NearbyWiFiLAN", targets: ["NearbyWiFiLAN"]),
        .library(name: "NearbyBLE", targets: ["NearbyBLE"]),
        .library(name: "NearbyConnections", targets: ["NearbyConnections"]),
        .library(name: "NearbyMessages", targets: ["NearbyMessages"]),
        .library(name: "NearbyMessagesService", targets: ["NearbyMessagesService"]),
        .library(name: "NearbyQuickShare", targets: ["NearbyQuickShare"]),
        .library(name: "NearbyTesting", targets: ["NearbyTesting"]),
        .executable(name: "nearby", targets: ["nearby"]),
        .executable(name: "nearby-bench", targets: ["nearby-bench"]),
        .library(name: "NearbyAudio", targets: ["NearbyAudio"]),
        .library(name: "NearbyPulseAudio", targets: ["NearbyPulseAudio"]),
        .executable(name: "nearby-bluez-probe", targets: ["nearby-bluez-probe"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-protobuf.git", exact: "1.39.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // `swift package generate-documentation` (scripts/docs.sh); a command plugin, linked into no product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Pure wire layer: generated protobuf messages, framing, frame builders and validators,
        // advertisement codecs, identifiers, and the one error type every layer uses.
        .target(
            name: "NearbyWire",
            dependencies: [
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Pure security layer: UKEY2 handshake state machines, the D2D SecureMessage channel,
        // verification codes.
        .target(
            name: "NearbySecurity",
            dependencies: [
                "NearbyWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // The engine: the Medium protocol, connection lifecycle, payloads, keep-alive.
        .target(
            name: "NearbyCore",
            dependencies: [
                "NearbyWire",
                "NearbySecurity",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ]
        ),
        // libavahi-client, the DNS-SD client library of the Avahi daemon (apt: libavahi-client-dev).
        .systemLibrary(
            name: "CAvahiClient",
            providers: [.apt(["libavahi-client-dev"])]
        ),
        // The Wi-Fi LAN medium: DNS-SD through Avahi and TCP through SwiftNIO.
        .target(
            name: "NearbyWiFiLAN",
            dependencies: [
                "NearbyWire",
                "NearbyCore",
                "CAvahiClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The BLE medium: a user-space HCI host (H4 over TCP, UART or the HCI user channel), GAP, L2CAP LE
        // credit-based channels, and Nearby BLE advertisements.
        .target(
            name: "NearbyBLE",
            dependencies: [
                "NearbyWire",
                "NearbyCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The public API: ConnectionManager, Advertiser, Discoverer (async/await and Google-shaped delegates).
        .target(
            name: "NearbyConnections",
            dependencies: [
                "NearbyCore",
                "NearbyWiFiLAN",
                "NearbyBLE",
                "NearbyBlueZ",
                "NearbyWire",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Nearby Messages on top of Nearby Connections: publish/subscribe of small messages through the endpoint
        // info (larger ones through a connection), consent, radio-state handlers, and BLE beacon decoding. Its
        // mediums come from NearbyConnections' medium factory; NearbyBLE is here for the beacon scanner only.
        .target(
            name: "NearbyMessages",
            dependencies: [
                "NearbyBLE",
                "NearbyConnections",
                "NearbyCore",
                "NearbyWire",
                "NearbyAudio",
                "NearbyPulseAudio",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The background service of Nearby Messages (docs/MESSAGES-SERVICE.md): its JSON-line protocol, state file,
        // core actor, the Unix-socket server and client, and desktop notifications (NearbyBlueZ's D-Bus client for
        // org.freedesktop.Notifications; NearbyConnections depends on NearbyBlueZ already).
        .target(
            name: "NearbyMessagesService",
            dependencies: [
                "NearbyMessages", "NearbyConnections", "NearbyCore", "NearbyWire", "NearbyBlueZ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "NearbyMessagesServiceTests",
            dependencies: [
                "NearbyMessagesService", "NearbyMessages", "NearbyConnections", "NearbyCore", "NearbyWire",
                "NearbyTesting", "NearbyTestSupport", "NearbyBlueZ", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Quick Share (formerly Nearby Share) on Nearby Connections (docs/QUICK-SHARE.md): endpoint-info, instance-name
        // and beacon codecs, the frame sequence as a state machine, a receiver and a sender, and the 0xFE2C wake-up
        // beacon through BlueZ.
        .target(
            name: "NearbyQuickShare",
            dependencies: [
                "NearbyConnections", "NearbyCore", "NearbyWire", "NearbyBlueZ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .testTarget(
            name: "NearbyQuickShareTests",
            dependencies: [
                "NearbyQuickShare", "NearbyConnections", "NearbyCore", "NearbyWire", "NearbySecurity", "NearbyTesting",
                "NearbyTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // The `nearby` command-line tool.
        .executableTarget(
            name: "nearby",
            dependencies: [
                "NearbyConnections",
                "NearbyMessages",
                "NearbyMessagesService",
                "NearbyQuickShare",
                "NearbyCore",
                "NearbyWire",
                // `nearby doctor` asks avahi-daemon and BlueZ directly (package-internal APIs).
                "NearbyWiFiLAN",
                "NearbyBlueZ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The `nearby-bench` benchmark executable.
        .executableTarget(
            name: "nearby-bench",
            dependencies: [
                "NearbyConnections",
                "NearbyCore",
                "NearbyWire",
                "NearbySecurity",
                "NearbyWiFiLAN",
                "NearbyBLE",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // L2CAP LE credit-based channels through a BLERadio (user-space host or kernel sockets), for the BlueZ VM rig.
        .executableTarget(
            name: "nearby-l2cap-probe",
            dependencies: ["NearbyBLE", "NearbyCore", "NearbyWire", .product(name: "Logging", package: "swift-log")]),
        // Examples (Examples/*/README.md).
        .executableTarget(
            name: "nearby-chat", dependencies: ["NearbyMessages", .product(name: "Logging", package: "swift-log")],
            path: "Examples/Chat", exclude: ["README.md"]),
        .executableTarget(
            name: "nearby-file-drop", dependencies: ["NearbyConnections"], path: "Examples/FileDrop", exclude: ["README.md"]),
        // Test doubles for apps and for our own tests: a manual clock, and the in-memory medium that runs the engine
        // without radios.
        .target(
            name: "NearbyTesting",
            dependencies: ["NearbyCore", "NearbyWire", "NearbyConnections"]
        ),
        // Helpers shared by the test targets (seeded randomness, byte mutation, error expectations).
        .target(
            name: "NearbyTestSupport",
            dependencies: ["NearbyWire", "NearbyCore", "NearbyBLE", "NearbyTesting", "NearbyPulseAudio"],
            path: "Tests/NearbyTestSupport"
        ),
        // Unit tests of the CLI's own pieces (progress lines, config file, error text, doctor's parsers), through
        // `@testable import nearby`; the CLI end to end is in NearbyIntegrationTests.
        .testTarget(
            name: "NearbyCLITests",
            dependencies: ["nearby", "NearbyConnections", "NearbyCore"]
        ),
        .testTarget(
            name: "NearbyWireTests",
            dependencies: [
                "NearbyWire",
                "NearbyTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "NearbySecurityTests",
            dependencies: [
                "NearbySecurity",
                "NearbyWire",
                "NearbyTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "NearbyCoreTests",
            dependencies: ["NearbyCore", "NearbyWire", "NearbySecurity", "NearbyTestSupport", "NearbyTesting"]
        ),
        .testTarget(
            name: "NearbyIntegrationTests",
            dependencies: [
                "NearbyConnections", "NearbyCore", "NearbyWire", "NearbySecurity", "NearbyTesting", "NearbyTestSupport",
                "NearbyMessages", "NearbyMessagesService",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "NearbyMessagesTests",
            dependencies: [
                "NearbyMessages", "NearbyConnections", "NearbyCore", "NearbyWire", "NearbyWiFiLAN", "NearbyTestSupport",
                "NearbyTesting", "NearbyAudio", "NearbyPulseAudio",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "NearbyBLETests",
            dependencies: [
                "NearbyBLE", "NearbyWiFiLAN", "NearbyMessages", "NearbyConnections", "NearbyCore", "NearbyWire", "NearbyTestSupport",
                "NearbyTesting", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "NearbyWiFiLANTests",
            dependencies: ["NearbyWiFiLAN", "NearbyCore", "NearbyWire", "NearbyTestSupport"]
        ),
        // The near-ultrasonic audio modem (docs/AUDIO-MODEM.md): pure encoder and streaming decoder of short tokens.
        .target(
            name: "NearbyAudio",
            dependencies: ["NearbyWire"]
        ),
        .testTarget(
            name: "NearbyAudioTests",
            dependencies: ["NearbyAudio", "NearbyWire", "NearbyTestSupport"]
        ),
        // libpulse-simple, PulseAudio's blocking client API; PipeWire serves it too (apt: libpulse-dev).
        .systemLibrary(
            name: "CPulseSimple",
            providers: [.apt(["libpulse-dev"])]
        ),
        // Real audio I/O for the audio modem through the system's sound server (PULSE_SERVER, default sink/source).
        .target(
            name: "NearbyPulseAudio",
            dependencies: ["NearbyAudio", "NearbyWire", "CPulseSimple"]
        ),
        .testTarget(
            name: "NearbyPulseAudioTests",
            dependencies: ["NearbyPulseAudio", "NearbyAudio", "NearbyWire", "NearbyTestSupport"]
        ),
        // libdbus-1, the reference D-Bus client library (apt: libdbus-1-dev).
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        // BlueZ over D-Bus (docs/BLUEZ-BACKEND.md): a small D-Bus layer on libdbus with its main loop on dispatch
        // sources, and BlueZ's adapter, advertising and discovery on top; BlueZGAP plugs it into NearbyBLE's BlueZRadio.
        .target(
            name: "NearbyBlueZ",
            dependencies: [
                "CDBus", "NearbyWire", "NearbyCore", "NearbyBLE", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "NearbyBlueZTests",
            dependencies: [
                "NearbyBlueZ", "NearbyBLE", "NearbyConnections", "NearbyWire", "NearbyTestSupport", "NearbyQuickShare",
            ]
        ),
        // A small CLI driving NearbyBlueZ, run inside the BlueZ VM rig (scripts/test-bluez-vm.sh).
        .executableTarget(
            name: "nearby-bluez-probe",
            dependencies: [
                "NearbyBlueZ", "NearbyWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// libFuzzer targets (docs/FUZZING.md), only when scripts/fuzz.sh sets NEARBY_FUZZ, so the normal build, its
// dependency graph and its products are unaffected. They live in this manifest rather than in a package of their own
// so that they can reach internal decoders through `@testable import`.
if Context.environment["NEARBY_FUZZ"] != nil {
    package.targets.append(.target(name: "CNearbyFuzzMain", path: "Fuzz/Sources/CNearbyFuzzMain"))
    package.targets.append(
        .executableTarget(
            name: "nearby-fuzz",
            dependencies: [
                "CNearbyFuzzMain",
                "NearbyWire", "NearbySecurity", "NearbyCore", "NearbyBLE", "NearbyWiFiLAN", "NearbyMessages",
                "NearbyMessagesService", "NearbyQuickShare", "NearbyBlueZ", "CDBus",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "Fuzz/Sources/NearbyFuzz"
        ))
}
