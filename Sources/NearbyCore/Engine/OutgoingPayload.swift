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
    /// Every frame is queued and the peer's PAYLOAD_ACK is awaited: the bytes and total to report it with.
    var awaitingAck: (bytes: Int64, total: Int64)?
    /// The peer's PAYLOAD_ACK arrived before the sending task got to wait for it.
    var acknowledged = false
    /// While the payload waits for the peer's acknowledgement: its reader, kept so that it can go on after a
    /// reconnect.
    var parkedReader: PayloadChunkReader?
    /// Auto-resume: where the sending task goes on (the receiver's next chunk), set after a reconnect.
    var rewind: (offset: Int64, index: Int32)?
    /// Auto-resume: the receiver has the whole payload.
    var receivedWhole = false
}

/// Reads an outgoing payload in chunks.
struct PayloadChunkReader: Sendable {
    let source: OutgoingPayloadSource
    var chunkSize: Int
    private let handle: FileHandle?
    private var bytesSent = false
    private var pending = Data()
    /// Stream bytes handed out (``StreamReplay``), and how many so far.
    private var replay = StreamReplay()
    private var streamPosition: Int64 = 0

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
            let chunk = Data(pending.prefix(chunkSize))
            pending = pending.count > chunkSize ? Data(pending.dropFirst(chunkSize)) : Data()
            replay.record(chunk, at: streamPosition)
            streamPosition += Int64(chunk.count)
            return chunk
        }
    }

    /// Goes back (or on) to `offset`, so that the next chunk starts there: after a reconnect the payload continues
    /// from the receiver's offset. BYTES only go back to 0 (they are re-sent whole); a stream only as far back as
    /// its ``StreamReplay`` reaches.
    mutating func rewind(to offset: Int64) throws(NearbyError) {
        switch source {
        case .bytes:
            guard offset == 0 else { throw NearbyError(.invalidArgument, "a bytes payload resumes only from 0") }
            bytesSent = false
        case .file:
            do {
                try handle!.seek(toOffset: UInt64(offset))
            } catch {
                throw NearbyError(.endpointIoError, "cannot go back to offset \(offset) of the file", cause: error)
            }
        case .stream:
            let notYetSent = pending
            guard let again = replay.bytes(from: offset) else {
                throw NearbyError(
                    .endpointIoError,
                    "the stream cannot go back to offset \(offset): only the last \(StreamReplay.capacity) bytes are kept")
            }
            // Bytes handed out from `offset` on come again; they are recorded again as they go.
            replay = StreamReplay()
            pending = again + notYetSent
            streamPosition = offset
        }
    }

    func close() {
        try? handle?.close()
    }
}
