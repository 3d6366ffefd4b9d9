import Foundation
import NearbyWire

/// Something to share: a file on disk, a text, or a Wi-Fi network's credentials.
public enum QuickShareItem: Sendable, Hashable {
    /// A regular file, shared under its last path component.
    case file(URL)
    /// A text; shared as a URL when it is one (`http`/`https` with a host), as plain text otherwise.
    case text(String)
    /// A Wi-Fi network's credentials.
    case wifiNetwork(ssid: String, password: String, security: QuickShareWifiNetwork.Security, hidden: Bool = false)
}

/// What a sender sends in one share: the introduction, the order of its payloads and where each one's bytes come
/// from.
struct QuickShareOutgoingPlan: Sendable {
    /// Where a payload's bytes come from.
    enum Source: Sendable {
        /// A file, sent as a FILE payload under `name`.
        case file(URL, name: String)
        /// Bytes, sent as a BYTES payload.
        case bytes([UInt8])
    }

    /// The INTRODUCTION frame's body.
    var introduction: ProtoSharingIntroduction
    /// The payload IDs in sending order: texts, then files, then Wi-Fi networks (Google's order).
    var order: [Int64]
    /// Each payload's bytes.
    var sources: [Int64: Source]
    /// The bytes of every payload together.
    var totalBytes: Int64

    /// Builds the plan for `items`, drawing payload and attachment IDs (positive, non-zero, distinct) from
    /// `generator`.
    /// - Throws: `NearbyError` `.invalidArgument` for no items, a file that is not a readable regular file, an empty
    ///   text or one over 1,047,552 bytes.
    init(items: [QuickShareItem], using generator: inout some RandomNumberGenerator) throws(NearbyError) {
        guard !items.isEmpty else { throw NearbyError(.invalidArgument, "nothing to share") }
        var used = Set<Int64>()
        func nextID() -> Int64 {
            while true {
                let id = Int64.random(in: 1...Int64.max, using: &generator)
                if used.insert(id).inserted { return id }
            }
        }
        var introduction = ProtoSharingIntroduction()
        introduction.useCase = .nearbyShare
        introduction.startTransfer = true
        var texts: [Int64] = []
        var files: [Int64] = []
        var networks: [Int64] = []
        var sources: [Int64: Source] = [:]
        var total: Int64 = 0
        for item in items {
            switch item {
            case .file(let url):
                let size = try Self.regularFileSize(url)
                var metadata = ProtoSharingFileMetadata()
                metadata.name = url.lastPathComponent
                metadata.size = size
                let mime = QuickShareMIMEType.guess(fileName: url.lastPathComponent)
                metadata.mimeType = mime
                metadata.kind = QuickShareMIMEType.kind(mimeType: mime, fileName: url.lastPathComponent)
                metadata.payloadID = nextID()
                metadata.id = nextID()
                introduction.files.append(metadata)
                files.append(metadata.payloadID)
                sources[metadata.payloadID] = .file(url, name: url.lastPathComponent)
                total += size
            case .text(let text):
                let bytes = Array(text.utf8)
                guard !bytes.isEmpty, bytes.count <= 1_047_552 else {
                    throw NearbyError(.invalidArgument, "a shared text has 1 to 1047552 bytes, got \(bytes.count)")
                }
                var metadata = ProtoSharingTextMetadata()
                let (kind, title) = QuickShareTextPreview.describe(text)
                metadata.kind = kind
                metadata.title = title
                metadata.size = Int64(bytes.count)
                metadata.payloadID = nextID()
                metadata.id = nextID()
                introduction.texts.append(metadata)
                texts.append(metadata.payloadID)
                sources[metadata.payloadID] = .bytes(bytes)
                total += Int64(bytes.count)
            case .wifiNetwork(let ssid, let password, let security, let hidden):
                var metadata = ProtoSharingWifiNetworkMetadata()
                metadata.ssid = ssid
                metadata.security = ProtoSharingWifiNetworkMetadata.Security(rawValue: security.rawValue) ?? .unknownSecurity
                metadata.payloadID = nextID()
                metadata.id = nextID()
                introduction.wifiNetworks.append(metadata)
                networks.append(metadata.payloadID)
                var body = ProtoSharingWifiPassword()
                body.password = password
                body.hiddenSsid = hidden
                let bytes = (try? body.serializedBytes() as [UInt8]) ?? []
                sources[metadata.payloadID] = .bytes(bytes)
                total += Int64(bytes.count)
            }
        }
        self.introduction = introduction
        self.order = texts + files + networks
        self.sources = sources
        self.totalBytes = total
    }

    private static func regularFileSize(_ url: URL) throws(NearbyError) -> Int64 {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        } catch {
            throw NearbyError(.invalidArgument, "cannot read \(url.path): \(error.localizedDescription)")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw NearbyError(.invalidArgument, "\(url.path) is not a regular file")
        }
        guard FileManager.default.isReadableFile(atPath: url.path) else {
            throw NearbyError(.invalidArgument, "cannot read \(url.path)")
        }
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }
}

/// The kind and preview title of a shared text, as Google's sender derives them: a URL's host, else the first 32
/// bytes followed by "…".
enum QuickShareTextPreview {
    static func describe(_ text: String) -> (ProtoSharingTextMetadata.Kind, String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = url.host, !host.isEmpty, !trimmed.contains(where: \.isWhitespace)
        {
            return (.url, host)
        }
        return (.text, preview(text))
    }

    static func preview(_ text: String) -> String {
        guard text.utf8.count > 32 else { return text }
        var kept = ""
        var bytes = 0
        for scalar in text.unicodeScalars {
            let size = String(scalar).utf8.count
            if bytes + size > 32 { break }
            kept.unicodeScalars.append(scalar)
            bytes += size
        }
        return kept + "…"
    }
}

/// MIME types and file kinds from file name extensions (a short table of the common ones).
enum QuickShareMIMEType {
    private static let table: [String: String] = [
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
        "heic": "image/heic", "bmp": "image/bmp", "svg": "image/svg+xml",
        "mp4": "video/mp4", "mkv": "video/x-matroska", "webm": "video/webm", "mov": "video/quicktime",
        "avi": "video/x-msvideo", "3gp": "video/3gpp",
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "ogg": "audio/ogg", "opus": "audio/opus", "wav": "audio/wav",
        "flac": "audio/flac",
        "pdf": "application/pdf", "txt": "text/plain", "md": "text/markdown", "html": "text/html", "csv": "text/csv",
        "doc": "application/msword", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "zip": "application/zip", "json": "application/json",
        "vcf": "text/x-vcard", "apk": "application/vnd.android.package-archive",
    ]

    /// The MIME type for `fileName`'s extension, `application/octet-stream` when unknown.
    static func guess(fileName: String) -> String {
        let ext = (fileName as NSString).pathExtension.lowercased()
        return table[ext] ?? "application/octet-stream"
    }

    /// The file kind Quick Share announces for a MIME type.
    static func kind(mimeType: String, fileName: String) -> ProtoSharingFileMetadata.Kind {
        if mimeType.hasPrefix("image/") { return .image }
        if mimeType.hasPrefix("video/") { return .video }
        if mimeType.hasPrefix("audio/") { return .audio }
        if mimeType == "text/x-vcard" { return .contactCard }
        if mimeType == "application/vnd.android.package-archive" { return .androidApp }
        if mimeType == "application/pdf" || mimeType.hasPrefix("text/") || mimeType.contains("document")
            || mimeType.contains("msword") || mimeType.contains("ms-excel") || mimeType.contains("ms-powerpoint")
        {
            return .document
        }
        return .unknown
    }
}
