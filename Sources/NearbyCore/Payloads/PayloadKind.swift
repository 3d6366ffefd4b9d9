import NearbyWire

/// Payload identifiers: random in (0, Int64.max]; 0 is never valid.
public typealias PayloadID = Int64

extension PayloadID {
    /// A fresh random payload ID in (0, Int64.max].
    public static func unique() -> PayloadID {
        Int64.random(in: 1...Int64.max)
    }
}

/// The three kinds of payload.
public enum PayloadKind: String, Sendable, Hashable {
    /// A byte array sent in one chunk (at most ``PayloadLimits/maxBytesPayloadSize`` bytes).
    case bytes
    /// A file with a name, streamed in chunks.
    case file
    /// A byte stream of unknown length.
    case stream

    init?(_ type: ProtoPayloadTransferFrame.PayloadHeader.PayloadType) {
        switch type {
        case .bytes: self = .bytes
        case .file: self = .file
        case .stream: self = .stream
        default: return nil
        }
    }

    var wireType: ProtoPayloadTransferFrame.PayloadHeader.PayloadType {
        switch self {
        case .bytes: .bytes
        case .file: .file
        case .stream: .stream
        }
    }
}

/// Size limits of payloads.
public enum PayloadLimits {
    /// The largest BYTES payload: 1 MiB − 1024, Android's `MAX_BYTES_DATA_SIZE`.
    public static let maxBytesPayloadSize = 1_047_552
    /// The default most payloads that may be arriving from one endpoint at once; the limit in force is
    /// ``ResourceLimits/maxConcurrentIncomingPayloads``.
    public static let maxConcurrentIncomingPayloads = 64
}

/// How a payload transfer stands, as reported to both sides.
public enum TransferStatus: String, Sendable, Hashable {
    /// Bytes are moving.
    case inProgress = "in_progress"
    /// Every byte arrived (receiver) or was written (sender).
    case success
    /// The transfer broke: I/O error, protocol error, disconnection.
    case failure
    /// One side cancelled it.
    case canceled
}

/// A progress report for one payload.
public struct PayloadTransferUpdate: Sendable, Hashable {
    /// The payload.
    public var payloadID: PayloadID
    /// Its kind.
    public var kind: PayloadKind
    /// Where it stands.
    public var status: TransferStatus
    /// Bytes transferred so far.
    public var bytesTransferred: Int64
    /// The total, or −1 for a stream.
    public var totalBytes: Int64

    /// Creates an update.
    public init(payloadID: PayloadID, kind: PayloadKind, status: TransferStatus, bytesTransferred: Int64, totalBytes: Int64) {
        self.payloadID = payloadID
        self.kind = kind
        self.status = status
        self.bytesTransferred = bytesTransferred
        self.totalBytes = totalBytes
    }
}
