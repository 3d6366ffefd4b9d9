import Logging
import NearbyConnections
import NearbyCore
import NearbyWire

extension MessageStrategy.Mediums {
    /// Near-ultrasonic audio (18.5–20 kHz, docs/AUDIO-MEDIUM.md): a publication plays a token in a loop; a
    /// subscription hears it. Not part of ``all``, so apps opt in.
    ///
    /// The message itself still travels over Wi-Fi LAN (and BLE when also named); audio proves that the devices
    /// hear each other. A subscription whose mediums are **only** `.audio` reports a message only while it hears
    /// that publication's token, and reports it lost when the sound stops; a strategy with other mediums besides
    /// audio finds messages as it would without it. Google's value (`kGNSDiscoveryMediumsAudio`) is 1.
    public static let audio = MessageStrategy.Mediums(rawValue: 1 << 0)

    /// Whether these mediums are audio alone (the audio rule applies).
    var isAudioOnly: Bool { self == .audio }

    /// The Connections mediums that carry discovery and content: those named, or Wi-Fi LAN when only audio is.
    var transportKinds: [MediumKind] {
        isAudioOnly ? [.wifiLAN] : kinds
    }
}

/// The audio medium's settings of one manager: its sound I/O, its status handler and its timings.
package final class AudioMediumSettings: Sendable {
    struct Values: Sendable {
        var io: any AudioMediumIO = PulseAudioMediumIO()
        var statusHandler: (@Sendable (AudioDeviceStatus) -> Void)?
        var audibleFor: Duration = .seconds(5)
        var gap: Duration = .milliseconds(200)
        var retryAfter: Duration = .seconds(2)
    }

    let values = LockedValue(Values())

    package init() {}
}

extension MessageManager {
    /// Called when the microphone (subscriptions scanning audio) or speaker (publications broadcasting audio) has
    /// a problem — no device, permission denied, device busy, no sound server — and again, with `hasError` false,
    /// when it has cleared; the audio medium retries every 2 s meanwhile. Google's
    /// `microphonePermissionErrorHandler`, with the device and reason added.
    public var audioStatusHandler: (@Sendable (AudioDeviceStatus) -> Void)? {
        get { audio.values.withLock { $0.statusHandler } }
        set { audio.values.withLock { $0.statusHandler = newValue } }
    }

    /// Uses `io` for the audio medium's sound instead of the system's sound server (tests: an in-memory air).
    package func useAudio(
        _ io: any AudioMediumIO, audibleFor: Duration? = nil, gap: Duration? = nil, retryAfter: Duration? = nil
    ) {
        audio.values.withLock { values in
            values.io = io
            if let audibleFor { values.audibleFor = audibleFor }
            if let gap { values.gap = gap }
            if let retryAfter { values.retryAfter = retryAfter }
        }
    }

    /// Reports an audio device's status to the handler and the log.
    func reportAudio(_ status: AudioDeviceStatus) {
        if status.hasError {
            logger.warning("audio problem", metadata: ["status": "\(status)"])
        } else {
            logger.info("audio problem cleared", metadata: ["device": "\(status.device.rawValue)"])
        }
        audio.values.withLock { $0.statusHandler }?(status)
    }

    /// Refuses audio publication options this port cannot honour.
    func validateAudio(_ options: PublishOptions) throws {
        if options.strategy.mediums.contains(.audio), options.plainEndpointInfo {
            throw NearbyError(.invalidArgument, "a plain endpoint info publication cannot use the audio medium")
        }
    }
}
