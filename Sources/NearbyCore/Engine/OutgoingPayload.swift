import Foundation
import NearbyWire

/// Where the bytes of an outgoing payload come from.
public enum OutgoingPayloadSource: Sendable {
    /// A byte array, sent in one chunk.
    case bytes([UInt8])
    /// A file on disk, read in chunks; `name` and `parentFolder` are what the peer is told.
    case file(URL, name: String, parentFolder: String)
    /// A stream of unknown length: `next` returns the next bytes, or `nil` at the end.
    case stream(next: @Sendable () async throws -> [UInt8]?)

    /// The payload kind of this source.
    public var kind: PayloadKind {
        switch self {
        case .bytes: .bytes
        case .file: .file
        case .stream: .stream
        }
    }
}

/// The state of one payload being sent, shared between the session and its sending task.
struct OutgoingPayloadState: Sendable {
    var kind: PayloadKind
    var cancelRequested = false
    var peerEvent: ProtoPayloadTransferFrame.ControlMessage.EventType?
}

/// Reads an outgoing payload in chunks.
struct PayloadChunkReader: Sendable {
    let source: OutgoingPayloadSource
    var chunkSize: Int
    private let handle: FileHandle?
    private var bytesSent = false
    private var pending = Data()

    init(source: OutgoingPayloadSource, chunkSize: Int) throws(NearbyError) {
        self.source = source
        self.chunkSize = chunkSize
        if case .file(let url, _, _) = source {
            do {
                handle = try FileHandle(forReadingFrom: url)
            } catch {
                throw NearbyError(.invalidArgument, "cannot open \(url.path) for reading", cause: error)
            }
        } else {
            handle = nil
        }
    }

    /// The next chunk, or `nil` when the source is exhausted. BYTES come whole, in one chunk.
    mutating func next() async throws -> Data? {
        switch source {
        case .bytes(let bytes):
            if bytesSent { return nil }
            bytesSent = true
            return Data(bytes)
        case .file:
            let data = try handle!.read(upToCount: chunkSize) ?? Data()
            return data.isEmpty ? nil : data
        case .stream(let next):
            while pending.isEmpty {
                guard let bytes = try await next() else { return nil }
                pending = Data(bytes)
            }
            let chunk = pending.prefix(chunkSize)
            pending = pending.count > chunkSize ? Data(pending.dropFirst(chunkSize)) : Data()
            return Data(chunk)
        }
    }

    func close() {
        try? handle?.close()
    }
}
