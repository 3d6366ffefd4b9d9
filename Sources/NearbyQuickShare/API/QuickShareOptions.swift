import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyWire

/// The operating system a Quick Share endpoint names in its Nearby Connections CONNECTION_RESPONSE (`os_info`).
///
/// Reports from projects tested against shipped Samsung phones say those drop a connection whose response says
/// `linux`; the default is therefore `android`, the value those reports found accepted.
public enum QuickShareReportedOS: String, Sendable, Hashable, CaseIterable {
    /// ANDROID (1).
    case android
    /// CHROME_OS (2).
    case chromeOS = "chromeos"
    /// WINDOWS (3).
    case windows
    /// APPLE (4).
    case apple
    /// LINUX (100).
    case linux

    var wireValue: ProtoOsInfo.OsType {
        switch self {
        case .android: .android
        case .chromeOS: .chromeOs
        case .windows: .windows
        case .apple: .apple
        case .linux: .linux
        }
    }
}

/// Settings of a ``QuickShareReceiver`` or ``QuickShareSender``.
public struct QuickShareOptions: Sendable {
    /// The name phones show for this device. Default: the host name.
    public var deviceName: String
    /// The kind of device phones show. Default: laptop.
    public var deviceType: QuickShareDeviceType
    /// Where received files go. Default: the current directory.
    public var receiveDirectory: URL
    /// The mediums: Wi-Fi LAN (what phones use to find desktops) by default.
    public var mediums: [Medium]
    /// The Bluetooth controller, when `mediums` has `.ble`.
    public var bluetoothController: BluetoothController?
    /// The TCP port a receiver listens on; nil lets the system choose.
    public var listenPort: Int?
    /// What a receiver accepts (attachment counts and sizes).
    public var limits: QuickShareLimits
    /// Limits on the connection itself (bytes, free disk space kept, deadlines).
    public var connectionLimits: ResourceLimits
    /// The operating system named in CONNECTION_RESPONSE frames. Default: ``QuickShareReportedOS/android``.
    public var reportedOS: QuickShareReportedOS
    /// Whether to advertise the 0xFE2C wake-up beacon through BlueZ while running (when `bluetoothd` runs).
    /// Default: true.
    public var wakeUpBeacon: Bool
    /// The logger.
    public var logger: Logger
    /// The clock the share deadlines sleep on (15 s and 60 s phases).
    public var clock: any Clock<Duration>
    /// Test drivers instead of `mediums` (NearbyTesting's in-memory medium).
    package var drivers: [any MediumDriver]?

    /// Creates options.
    public init(
        deviceName: String = ProcessInfo.processInfo.hostName, deviceType: QuickShareDeviceType = .laptop,
        receiveDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        mediums: [Medium] = [.wifiLAN], bluetoothController: BluetoothController? = nil, listenPort: Int? = nil,
        limits: QuickShareLimits = .init(), connectionLimits: ResourceLimits = .init(),
        reportedOS: QuickShareReportedOS = .android, wakeUpBeacon: Bool = true,
        logger: Logger = Logger(label: "nearby.quickshare"), clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.deviceName = deviceName
        self.deviceType = deviceType
        self.receiveDirectory = receiveDirectory
        self.mediums = mediums
        self.bluetoothController = bluetoothController
        self.listenPort = listenPort
        self.limits = limits
        self.connectionLimits = connectionLimits
        self.reportedOS = reportedOS
        self.wakeUpBeacon = wakeUpBeacon
        self.logger = logger
        self.clock = clock
    }

    /// The connection manager's options for a Quick Share endpoint.
    func connectionOptions(fileNames: LockedValue<[String: [Int64: (String, String)]]>) -> ConnectionOptions {
        var options: ConnectionOptions
        if let drivers {
            options = ConnectionOptions(drivers: drivers, receiveDirectory: receiveDirectory, logger: logger)
        } else {
            options = ConnectionOptions(
                mediums: mediums, bluetoothController: bluetoothController, receiveDirectory: receiveDirectory,
                listenPort: listenPort, logger: logger)
        }
        options.listenPort = listenPort
        // Quick Share moves connections itself (Google's sharing layer turns the automatic upgrade off).
        options.autoUpgradeBandwidth = false
        options.limits = connectionLimits
        options.reportedOSType = reportedOS.wireValue
        options.incomingFileNaming = { endpointID, payloadID, _, _ in
            guard let (name, folder) = fileNames.withLock({ $0[endpointID]?[payloadID] }) else { return nil }
            return (fileName: name, parentFolder: folder)
        }
        return options
    }

    /// The bytes the receive directory can still take: free space minus the connection limits' reserve.
    func freeSpace() -> Int64? {
        var info = statvfs()
        guard statvfs(receiveDirectory.path, &info) == 0 else { return nil }
        let available = Int64(info.f_bavail) * Int64(info.f_frsize)
        return available - connectionLimits.minimumFreeDiskSpace
    }
}
