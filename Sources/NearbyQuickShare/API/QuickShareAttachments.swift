import Foundation

/// A file in a share, as its introduction describes it; its bytes follow as a Nearby Connections FILE payload.
public struct QuickShareFile: Sendable, Hashable {
    /// What kind of file the sender says it is.
    public enum Kind: Int, Sendable, Hashable, CustomStringConvertible {
        /// Not said.
        case unknown = 0
        /// An image.
        case image = 1
        /// A video.
        case video = 2
        /// An Android app.
        case androidApp = 3
        /// Audio.
        case audio = 4
        /// A document.
        case document = 5
        /// A contact card.
        case contactCard = 6

        /// The lower-case name (`image`, `android_app`, …).
        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .image: "image"
            case .video: "video"
            case .androidApp: "android_app"
            case .audio: "audio"
            case .document: "document"
            case .contactCard: "contact_card"
            }
        }
    }

    /// The file's name, without folders (e.g. `Cookbook.pdf`).
    public var name: String
    /// Folders to put it in, `/`-separated, or empty.
    public var parentFolder: String
    /// Its size in bytes.
    public var size: Int64
    /// Its MIME type (`application/octet-stream` when unknown).
    public var mimeType: String
    /// Its kind.
    public var kind: Kind
    /// The id of the FILE payload carrying it.
    public var payloadID: Int64
    /// The attachment's id in this share (non-zero).
    public var id: Int64

    /// Creates a file description.
    public init(
        name: String, parentFolder: String = "", size: Int64, mimeType: String = "application/octet-stream",
        kind: Kind = .unknown, payloadID: Int64, id: Int64
    ) {
        self.name = name
        self.parentFolder = parentFolder
        self.size = size
        self.mimeType = mimeType
        self.kind = kind
        self.payloadID = payloadID
        self.id = id
    }
}

/// A piece of text in a share; the text follows as a BYTES payload.
public struct QuickShareText: Sendable, Hashable {
    /// What the text is.
    public enum Kind: Int, Sendable, Hashable, CustomStringConvertible {
        /// Not said.
        case unknown = 0
        /// Plain text.
        case text = 1
        /// A URL (phones open it in a browser).
        case url = 2
        /// A street address.
        case address = 3
        /// A phone number.
        case phoneNumber = 4

        /// The lower-case name (`text`, `url`, `phone_number`, …).
        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .text: "text"
            case .url: "url"
            case .address: "address"
            case .phoneNumber: "phone_number"
            }
        }
    }

    /// A preview shown before accepting (the text's start, or a URL's host).
    public var title: String
    /// What the text is.
    public var kind: Kind
    /// The text's size in bytes.
    public var size: Int64
    /// The id of the BYTES payload carrying it.
    public var payloadID: Int64
    /// The attachment's id in this share (non-zero).
    public var id: Int64

    /// Creates a text description.
    public init(title: String, kind: Kind, size: Int64, payloadID: Int64, id: Int64) {
        self.title = title
        self.kind = kind
        self.size = size
        self.payloadID = payloadID
        self.id = id
    }
}

/// A Wi-Fi network in a share; its password follows as a BYTES payload. swift-nearby shows received credentials and
/// never applies them.
public struct QuickShareWifiNetwork: Sendable, Hashable {
    /// The network's security.
    public enum Security: Int, Sendable, Hashable, CustomStringConvertible {
        /// Not said.
        case unknown = 0
        /// No password.
        case open = 1
        /// WPA pre-shared key.
        case wpaPSK = 2
        /// WEP.
        case wep = 3
        /// WPA3 SAE.
        case sae = 4

        /// The lower-case name (`open`, `wpa_psk`, …).
        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .open: "open"
            case .wpaPSK: "wpa_psk"
            case .wep: "wep"
            case .sae: "sae"
            }
        }
    }

    /// The network's name.
    public var ssid: String
    /// Its security.
    public var security: Security
    /// The id of the BYTES payload carrying the password.
    public var payloadID: Int64
    /// The attachment's id in this share.
    public var id: Int64

    /// Creates a network description.
    public init(ssid: String, security: Security, payloadID: Int64, id: Int64) {
        self.ssid = ssid
        self.security = security
        self.payloadID = payloadID
        self.id = id
    }
}

/// Everything a sender offers in one share (its introduction), checked against the receiver's limits.
public struct QuickShareOffer: Sendable, Hashable {
    /// The files.
    public var files: [QuickShareFile]
    /// The texts.
    public var texts: [QuickShareText]
    /// The Wi-Fi networks.
    public var wifiNetworks: [QuickShareWifiNetwork]

    /// Creates an offer.
    public init(files: [QuickShareFile] = [], texts: [QuickShareText] = [], wifiNetworks: [QuickShareWifiNetwork] = []) {
        self.files = files
        self.texts = texts
        self.wifiNetworks = wifiNetworks
    }

    /// The bytes of every file together.
    public var totalFileBytes: Int64 { files.reduce(0) { $0 + $1.size } }

    /// Every payload id the offer announces.
    public var payloadIDs: [Int64] { files.map(\.payloadID) + texts.map(\.payloadID) + wifiNetworks.map(\.payloadID) }
}

/// Received Wi-Fi credentials: shown to the user, never applied.
public struct QuickShareWifiCredentials: Sendable, Hashable {
    /// The network.
    public var network: QuickShareWifiNetwork
    /// The password (empty for an open network).
    public var password: String
    /// Whether the network hides its SSID.
    public var isHidden: Bool

    /// Creates credentials.
    public init(network: QuickShareWifiNetwork, password: String, isHidden: Bool) {
        self.network = network
        self.password = password
        self.isHidden = isHidden
    }
}
