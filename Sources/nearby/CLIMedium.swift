import ArgumentParser
import NearbyCore
import NearbyMessages

/// `--medium wifi-lan|ble|audio`, parsed once by ArgumentParser. Audio (near-ultrasonic tokens through the sound
/// server) is a Nearby Messages medium: only `nearby publish` and `nearby subscribe` take it.
enum CLIMedium: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Wi-Fi LAN.
    case wifiLAN = "wifi-lan"
    /// BLE.
    case ble
    /// Near-ultrasonic audio (Nearby Messages only).
    case audio

    /// The Connections medium, or `nil` for audio.
    var kind: MediumKind? {
        switch self {
        case .wifiLAN: .wifiLAN
        case .ble: .ble
        case .audio: nil
        }
    }
}

/// `audio_status`: the microphone or speaker of the audio medium has a problem (`has_error` true) or it cleared.
struct AudioStatusEvent: Encodable {
    var device: String
    var hasError: Bool
    var problem: String?
    var error: String?

    init(_ status: AudioDeviceStatus) {
        device = status.device.rawValue
        hasError = status.hasError
        problem = status.problem?.rawValue
        error = status.error?.message
    }
}

extension MessageManager {
    /// Prints the audio medium's device problems and their clearing as `audio_status` events.
    func printAudioStatus(to output: EventOutput) {
        audioStatusHandler = { status in
            output.event("audio_status", AudioStatusEvent(status), human: "audio: \(status)")
        }
    }
}
