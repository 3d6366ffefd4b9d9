import Foundation
import NearbyConnections
import NearbyQuickShare
#if canImport(Glibc)
import Glibc
#endif

/// Prints Quick Share events (JSON lines, or readable lines with a progress bar showing speed and time left on a
/// terminal) and, for a receiver, makes the accept/reject decision.
actor QuickShareEventPrinter {
    /// How a receiver decides on offers.
    enum Decision: Sendable {
        /// Accept every offer.
        case accept
        /// Ask on a terminal; reject without one.
        case askOrReject
    }

    private let output: EventOutput
    private let isTerminal = isatty(STDOUT_FILENO) == 1
    private var barShown = false
    private var lastProgress: ContinuousClock.Instant?
    private var speed = TransferSpeed()
    /// Whether a share has started (a connection to a receiver is up or requested).
    private(set) var shareStarted = false

    init(output: EventOutput) {
        self.output = output
    }

    /// Prints `event` and, for offers, decides through `receiver`. Returns the result when a share ended.
    func handle(_ event: QuickShareEvent, receiver: QuickShareReceiver, decision: Decision) async -> QuickShareResult? {
        print(event)
        if case .offerReceived(let share) = event {
            let accept = await decide(share, decision: decision)
            let endpointID = share.sender.endpointID
            do {
                if accept { try await receiver.accept(endpointID) } else { try await receiver.reject(endpointID) }
            } catch {
                EventOutput.warn("cannot \(accept ? "accept" : "reject") the share from \(endpointID): \(error)")
            }
            if !accept, decision == .askOrReject, isatty(STDIN_FILENO) != 1 {
                EventOutput.warn("rejected the share from \(endpointID): no terminal to ask on (use --accept)")
            }
        }
        if case .finished(_, let result) = event { return result }
        return nil
    }

    /// Prints one event.
    func print(_ event: QuickShareEvent) {
        switch event {
        case .deviceFound(let device):
            emit("device_found", QuickShareCLIEvents.Device(device), human: "found \(QuickShareCLIEvents.describe(device))")
        case .deviceLost(let endpointID):
            emit("device_lost", QuickShareCLIEvents.EndpointOnly(endpointID: endpointID), human: "lost \(endpointID)")
        case .connected(let device, let pin):
            shareStarted = true
            speed = TransferSpeed()
            emit(
                "connected", QuickShareCLIEvents.Connected(device, pin: pin),
                human: "connected to \(QuickShareCLIEvents.describe(device)) - PIN \(pin)")
        case .offerReceived(let share):
            emit(
                "share_offered", QuickShareCLIEvents.Offer(share),
                human: "\(share.sender.name ?? share.sender.endpointID) wants to send \(QuickShareCLIEvents.summary(share.offer)) (PIN \(share.pin))")
        case .accepted(let endpointID):
            emit("accepted", QuickShareCLIEvents.EndpointOnly(endpointID: endpointID), human: "\(endpointID) accepted; sending")
        case .progress(let endpointID, let bytes, let total):
            progress(endpointID: endpointID, bytes: bytes, total: total)
        case .fileReceived(let endpointID, let file, let url):
            let digest: (digest: String, size: Int64) = (try? Digests.sha256(fileAt: url)) ?? ("", -1)
            emit(
                "file_received",
                QuickShareCLIEvents.FileReceived(
                    endpointID: endpointID, name: file.name, path: url.path, size: digest.size, sha256: digest.digest,
                    mimeType: file.mimeType),
                human: "received \(url.path) (\(EventOutput.size(digest.size)))")
        case .textReceived(let endpointID, let text, let content):
            emit(
                "text_received",
                QuickShareCLIEvents.TextReceived(endpointID: endpointID, kind: text.kind.description, text: content),
                human: "received \(text.kind): \(content)")
        case .wifiCredentialsReceived(let endpointID, let credentials):
            emit(
                "wifi_credentials_received",
                QuickShareCLIEvents.WifiReceived(
                    endpointID: endpointID, ssid: credentials.network.ssid,
                    security: credentials.network.security.description, password: credentials.password,
                    hidden: credentials.isHidden),
                human: "received Wi-Fi network \"\(credentials.network.ssid)\" (\(credentials.network.security)), password: \(credentials.password) (not applied)")
        case .finished(let endpointID, let result):
            emit(
                "share_finished", QuickShareCLIEvents.Finished(endpointID: endpointID, result: result),
                human: "share with \(endpointID) \(result)")
        }
    }

    private func decide(_ share: QuickShareIncomingShare, decision: Decision) async -> Bool {
        switch decision {
        case .accept:
            return true
        case .askOrReject:
            guard isatty(STDIN_FILENO) == 1 else { return false }
            clearBar()
            FileHandle.standardError.write(Data(PeerText.escapedForTerminal(
                "Accept \(QuickShareCLIEvents.summary(share.offer)) from \(share.sender.name ?? share.sender.endpointID), PIN \(share.pin)? [y/N] ").utf8))
            let answer = await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: readLine() ?? "") }
            }
            return answer.lowercased().hasPrefix("y")
        }
    }

    private func emit(_ name: String, _ fields: some Encodable, human: String) {
        clearBar()
        output.event(name, fields, human: human)
    }

    private func progress(endpointID: String, bytes: Int64, total: Int64) {
        let now = ContinuousClock.now
        speed.add(bytes: bytes, at: now)
        let done = total > 0 && bytes >= total
        if !done, let last = lastProgress, now - last < .milliseconds(100) { return }
        lastProgress = now
        if output.json {
            output.event(
                "progress",
                QuickShareCLIEvents.Progress(
                    endpointID: endpointID, bytes: bytes, total: total, bytesPerSecond: speed.bytesPerSecond.map { Int64($0) }),
                human: "")
        } else if isTerminal {
            FileHandle.standardOutput.write(Data(("\r\u{1B}[2K" + speed.line(bytes: bytes, total: total)).utf8))
            barShown = true
        }
    }

    private func clearBar() {
        guard barShown else { return }
        FileHandle.standardOutput.write(Data("\r\u{1B}[2K".utf8))
        barShown = false
    }
}

/// Speed over the last few seconds, and the time left.
struct TransferSpeed {
    private var samples: [(ContinuousClock.Instant, Int64)] = []

    mutating func add(bytes: Int64, at instant: ContinuousClock.Instant) {
        samples.append((instant, bytes))
        while let first = samples.first, instant - first.0 > .seconds(3), samples.count > 2 { samples.removeFirst() }
    }

    /// Bytes per second over the samples kept, once there are two a little apart.
    var bytesPerSecond: Double? {
        guard let first = samples.first, let last = samples.last else { return nil }
        let elapsed = last.0 - first.0
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        guard seconds >= 0.2 else { return nil }
        return Double(last.1 - first.1) / seconds
    }

    /// The bar, percentage, sizes, speed and ETA of a ``TransferLine`` (the caller names the share).
    func line(bytes: Int64, total: Int64) -> String {
        TransferLine(name: "", bytes: bytes, total: total, bytesPerSecond: bytesPerSecond)
            .render(width: 100).trimmingCharacters(in: .whitespaces)
    }
}

/// The JSON shapes of `nearby quickshare` events.
enum QuickShareCLIEvents {
    static func beacon(_ status: QuickShareBeaconStatus, output: EventOutput) {
        switch status {
        case .on(let adapter):
            output.event("beacon", Beacon(status: "on", adapter: adapter, reason: nil), human: status.description)
        case .off(let reason):
            output.event("beacon", Beacon(status: "off", adapter: nil, reason: reason), human: status.description)
        case .disabled:
            output.event("beacon", Beacon(status: "disabled", adapter: nil, reason: nil), human: status.description)
        }
    }

    static func describe(_ device: QuickShareDevice) -> String {
        "\"\(device.name ?? "(hidden)")\" (\(device.deviceType), \(device.endpointID))"
    }

    static func summary(_ offer: QuickShareOffer) -> String {
        var parts: [String] = []
        if !offer.files.isEmpty {
            parts.append(offer.files.count == 1 ? "\(offer.files[0].name) (\(EventOutput.size(offer.files[0].size)))" : "\(offer.files.count) files (\(EventOutput.size(offer.totalFileBytes)))")
        }
        if !offer.texts.isEmpty {
            parts.append(offer.texts.count == 1 ? "a \(offer.texts[0].kind) \"\(offer.texts[0].title)\"" : "\(offer.texts.count) texts")
        }
        if !offer.wifiNetworks.isEmpty { parts.append("Wi-Fi network \"\(offer.wifiNetworks[0].ssid)\"") }
        return parts.joined(separator: " and ")
    }

    struct Beacon: Encodable {
        var status: String
        var adapter: String?
        var reason: String?
    }

    struct EndpointOnly: Encodable {
        var endpointID: String
    }

    struct Device: Encodable {
        var endpointID: String
        var name: String?
        var deviceType: String
        var vendorID: UInt8?

        init(_ device: QuickShareDevice) {
            endpointID = device.endpointID
            name = device.name
            deviceType = device.deviceType.description
            vendorID = device.vendorID
        }
    }

    struct Connected: Encodable {
        var endpointID: String
        var name: String?
        var deviceType: String
        var pin: String

        init(_ device: QuickShareDevice, pin: String) {
            endpointID = device.endpointID
            name = device.name
            deviceType = device.deviceType.description
            self.pin = pin
        }
    }

    struct Offer: Encodable {
        struct File: Encodable {
            var name: String
            var parentFolder: String
            var size: Int64
            var mimeType: String
            var kind: String
        }
        struct Text: Encodable {
            var title: String
            var kind: String
            var size: Int64
        }
        struct Network: Encodable {
            var ssid: String
            var security: String
        }
        var endpointID: String
        var name: String?
        var pin: String
        var files: [File]
        var texts: [Text]
        var wifiNetworks: [Network]
        var totalBytes: Int64

        init(_ share: QuickShareIncomingShare) {
            endpointID = share.sender.endpointID
            name = share.sender.name
            pin = share.pin
            files = share.offer.files.map {
                File(name: $0.name, parentFolder: $0.parentFolder, size: $0.size, mimeType: $0.mimeType, kind: $0.kind.description)
            }
            texts = share.offer.texts.map { Text(title: $0.title, kind: $0.kind.description, size: $0.size) }
            wifiNetworks = share.offer.wifiNetworks.map { Network(ssid: $0.ssid, security: $0.security.description) }
            totalBytes = share.offer.totalFileBytes + share.offer.texts.reduce(0) { $0 + $1.size }
        }
    }

    struct Progress: Encodable {
        var endpointID: String
        var bytes: Int64
        var total: Int64
        var bytesPerSecond: Int64?
    }

    struct FileReceived: Encodable {
        var endpointID: String
        var name: String
        var path: String
        var size: Int64
        var sha256: String
        var mimeType: String
    }

    struct TextReceived: Encodable {
        var endpointID: String
        var kind: String
        var text: String
    }

    struct WifiReceived: Encodable {
        var endpointID: String
        var ssid: String
        var security: String
        var password: String
        var hidden: Bool
    }

    struct Finished: Encodable {
        var endpointID: String
        var result: String
        var status: String?
        var reason: String?
        var confirmed: Bool?

        init(endpointID: String, result: QuickShareResult) {
            self.endpointID = endpointID
            self.result = result.name
            switch result {
            case .completed(let confirmed): self.confirmed = confirmed
            case .refused(let status, let reason):
                self.status = status.rawValue
                self.reason = reason
            case .canceled(let byPeer): reason = byPeer ? "canceled by the peer" : "canceled"
            case .failed(let error):
                status = error.code.rawValue
                reason = error.message
            case .rejected: break
            }
        }
    }
}

/// `nearby quickshare receive`'s first line.
struct QuickShareAdvertisingEvent: Encodable {
    var endpointID: String
    var port: Int
    var serviceType: String
    var instanceName: String
    var name: String
    var deviceType: String
}
