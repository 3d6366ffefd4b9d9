import Foundation
import NearbyWire

/// Limits a Quick Share receiver puts on what a sender may offer. Memory stays bounded whatever the sender says:
/// an introduction is one BYTES payload (at most 1 MiB) and is refused past these counts and sizes.
public struct QuickShareLimits: Sendable, Hashable {
    /// The most attachments (files, texts and Wi-Fi networks together) in one share. Default 1,000.
    public var maxAttachments: Int = 1_000
    /// The largest file accepted, in bytes. Default 1 TiB.
    public var maxFileSize: Int64 = 1 << 40
    /// The largest text accepted, in bytes (a BYTES payload holds at most 1,047,552). Default 1 MiB.
    public var maxTextSize: Int64 = 1_047_552
    /// The most folder levels of a file's parent folder. Default 32.
    public var maxFolderDepth: Int = 32

    /// Creates the default limits.
    public init() {}
}

/// Why a receiver refuses an introduction: the status it answers with and a readable reason.
package struct QuickShareRefusal: Sendable, Equatable, Error {
    /// The RESPONSE status sent to the sender.
    package var status: ProtoSharingResponse.Status
    /// Why, for the local user and logs.
    package var reason: String
}

/// Turns a received introduction into a ``QuickShareOffer``, or refuses it.
///
/// Refused with UNSUPPORTED_ATTACHMENT_TYPE: no attachment; apps or streams (not supported here); more than
/// ``QuickShareLimits/maxAttachments`` attachments; a file size below 0 or over the limit; a text of size 0 or over
/// the limit; a payload ID of 0 or used twice; a file name that is empty, `.` or `..`, over 255 bytes, or holds a
/// path separator, NUL or another control character; a parent folder with `..`, a backslash, a control character,
/// or too many levels. Sizes whose sum overflows are refused with NOT_ENOUGH_SPACE, as Google's receiver does.
package enum QuickShareOfferValidator {
    /// Checks `introduction` against `limits`.
    package static func validate(
        _ introduction: ProtoSharingIntroduction, limits: QuickShareLimits
    ) -> Result<QuickShareOffer, QuickShareRefusal> {
        func refuse(_ reason: String) -> Result<QuickShareOffer, QuickShareRefusal> {
            .failure(QuickShareRefusal(status: .unsupportedAttachmentType, reason: reason))
        }
        if !introduction.apps.isEmpty { return refuse("the share holds Android apps, which are not supported") }
        if !introduction.streams.isEmpty { return refuse("the share holds streams, which are not supported") }
        let count = introduction.files.count + introduction.texts.count + introduction.wifiNetworks.count
        guard count > 0 else { return refuse("the introduction announces nothing to share") }
        guard count <= limits.maxAttachments else {
            return refuse("the share has \(count) attachments, more than the \(limits.maxAttachments) accepted")
        }
        var payloadIDs = Set<Int64>()
        var files: [QuickShareFile] = []
        var total: Int64 = 0
        for file in introduction.files {
            guard file.size >= 0, file.size <= limits.maxFileSize else {
                return refuse("file size \(file.size) is outside 0...\(limits.maxFileSize)")
            }
            let (sum, overflow) = total.addingReportingOverflow(file.size)
            guard !overflow else {
                return .failure(QuickShareRefusal(status: .notEnoughSpace, reason: "the file sizes add up past 2^63"))
            }
            total = sum
            if let problem = nameProblem(file.name) { return refuse("file name \(quoted(file.name)) \(problem)") }
            if let problem = folderProblem(file.parentFolder, maxDepth: limits.maxFolderDepth) {
                return refuse("parent folder \(quoted(file.parentFolder)) \(problem)")
            }
            guard file.payloadID != 0, payloadIDs.insert(file.payloadID).inserted else {
                return refuse("payload ID \(file.payloadID) is 0 or announced twice")
            }
            files.append(
                QuickShareFile(
                    name: file.name, parentFolder: file.parentFolder, size: file.size,
                    mimeType: String(file.mimeType.prefix(255)), kind: QuickShareFile.Kind(rawValue: file.kind.rawValue) ?? .unknown,
                    payloadID: file.payloadID, id: file.id))
        }
        var texts: [QuickShareText] = []
        for text in introduction.texts {
            guard text.size > 0, text.size <= limits.maxTextSize else {
                return refuse("text size \(text.size) is outside 1...\(limits.maxTextSize)")
            }
            guard text.payloadID != 0, payloadIDs.insert(text.payloadID).inserted else {
                return refuse("payload ID \(text.payloadID) is 0 or announced twice")
            }
            texts.append(
                QuickShareText(
                    title: ReceivedTextPreview.clip(text.title), kind: QuickShareText.Kind(rawValue: text.kind.rawValue) ?? .unknown,
                    size: text.size, payloadID: text.payloadID, id: text.id))
        }
        var networks: [QuickShareWifiNetwork] = []
        for network in introduction.wifiNetworks {
            guard network.payloadID != 0, payloadIDs.insert(network.payloadID).inserted else {
                return refuse("payload ID \(network.payloadID) is 0 or announced twice")
            }
            guard network.ssid.utf8.count <= 255 else { return refuse("a Wi-Fi network name is over 255 bytes") }
            networks.append(
                QuickShareWifiNetwork(
                    ssid: network.ssid, security: QuickShareWifiNetwork.Security(rawValue: network.security.rawValue) ?? .unknown,
                    payloadID: network.payloadID, id: network.id))
        }
        return .success(QuickShareOffer(files: files, texts: texts, wifiNetworks: networks))
    }

    /// Why `name` cannot be a received file's name, or nil.
    package static func nameProblem(_ name: String) -> String? {
        if name.isEmpty || name == "." || name == ".." { return "is empty, . or .." }
        if name.utf8.count > 255 { return "is over 255 bytes" }
        if let scalar = name.unicodeScalars.first(where: isForbidden) {
            return "holds \(scalar == "/" || scalar == "\\" ? "a path separator" : "a control character") (U+\(String(scalar.value, radix: 16, uppercase: true)))"
        }
        return nil
    }

    /// Why `folder` cannot be a received file's parent folder, or nil (empty is fine).
    package static func folderProblem(_ folder: String, maxDepth: Int) -> String? {
        guard !folder.isEmpty else { return nil }
        if folder.utf8.count > 1024 { return "is over 1024 bytes" }
        if folder.unicodeScalars.contains(where: { $0 != "/" && isForbidden($0) }) {
            return "holds a backslash or a control character"
        }
        let components = folder.split(separator: "/", omittingEmptySubsequences: true)
        if components.contains(where: { $0 == ".." || $0 == "." }) { return "climbs with . or .." }
        if components.count > maxDepth { return "has \(components.count) levels, more than \(maxDepth)" }
        return nil
    }

    private static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x2F, 0x5C: true
        case 0x202A...0x202E, 0x2066...0x2069: true  // bidirectional overrides: names that lie about their extension
        default: false
        }
    }

    private static func quoted(_ text: String) -> String {
        "\"" + text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined() + "\""
    }
}

/// Short previews of received text.
package enum ReceivedTextPreview {
    /// `text` cut to at most 256 UTF-8 bytes at a character boundary.
    package static func clip(_ text: String) -> String {
        guard text.utf8.count > 256 else { return text }
        var kept = ""
        var bytes = 0
        for character in text {
            let size = String(character).utf8.count
            if bytes + size > 256 { break }
            kept.append(character)
            bytes += size
        }
        return kept
    }
}
