import Foundation
import Logging
import NearbyCore
import NearbyWiFiLAN

/// Settings of a ``ConnectionManager`` beyond Google's API.
public struct ConnectionOptions: Sendable {
    /// The mediums to use, in priority order. Default: Wi-Fi LAN.
    public var mediums: [any NearbyCore.Medium]
    /// Where received files are written. Default: the current directory.
    public var receiveDirectory: URL
    /// Keep-alive timing asked of peers. Default: 5 s interval, 30 s timeout.
    public var keepAlive: KeepAliveSettings
    /// The TCP port to listen on when advertising; `nil` lets the system choose.
    public var listenPort: Int?
    /// The logger. Set its level to `.debug` for the debug log of every internal event.
    public var logger: Logger

    /// Creates options.
    public init(
        mediums: [any NearbyCore.Medium]? = nil,
        receiveDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        keepAlive: KeepAliveSettings = .default, listenPort: Int? = nil,
        logger: Logger = Logger(label: "nearby")
    ) {
        self.mediums = mediums ?? [WiFiLANMedium(logger: logger)]
        self.receiveDirectory = receiveDirectory
        self.keepAlive = keepAlive
        self.listenPort = listenPort
        self.logger = logger
    }
}
