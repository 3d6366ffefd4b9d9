import Foundation
import NearbyCore

/// Sending and disconnecting in Google's callback shape.
extension ConnectionManager {
    /// Sends bytes to each endpoint under one payload ID; the handler reports whether the send was accepted (not
    /// delivery): `nil` once at least one endpoint took the payload, otherwise the first endpoint's error
    /// (`.endpointUnknown` when none is connected). As in Google's API, an endpoint that could not take it while
    /// others did gets a `.failure` transfer update; see ``send(_:toEach:id:)``.
    @discardableResult
    public func send(
        _ data: Data, to endpointIDs: [EndpointID], id: PayloadID? = nil,
        completionHandler: (@Sendable ((any Error)?) -> Void)? = nil
    ) -> CancellationToken {
        startInBackground(.bytes(Array(data)), to: endpointIDs, id: id ?? .unique(), completionHandler)
    }

    /// Sends a file to each endpoint under `resourceName` and one payload ID; the handler is called as for
    /// ``send(_:to:id:completionHandler:)``.
    @discardableResult
    public func sendResource(
        at resourceURL: URL, withName resourceName: String, to endpointIDs: [EndpointID], id: PayloadID? = nil,
        completionHandler: (@Sendable ((any Error)?) -> Void)? = nil
    ) -> CancellationToken {
        let (fileName, folder) = Self.split(resourceName)
        return startInBackground(
            .file(resourceURL, name: fileName, parentFolder: folder), to: endpointIDs, id: id ?? .unique(),
            completionHandler)
    }

    private func startInBackground(
        _ source: OutgoingPayloadSource, to endpointIDs: [EndpointID], id: PayloadID,
        _ completionHandler: (@Sendable ((any Error)?) -> Void)?
    ) -> CancellationToken {
        tasks.spawn { [self] in
            do {
                _ = try await start(source, toEach: endpointIDs, id: id)
                completionHandler?(nil)
            } catch {
                completionHandler?(error)
            }
        }
        return CancellationToken(payloadID: id, engine: engine)
    }

    /// Sends what `stream` yields to one endpoint, read in 64 KiB pieces.
    @discardableResult
    public func startStream(
        _ stream: InputStream, to endpointIDs: [EndpointID], id: PayloadID? = nil,
        completionHandler: (@Sendable ((any Error)?) -> Void)? = nil
    ) -> CancellationToken {
        let id = id ?? .unique()
        let reader = InputStreamReader(stream)
        let engine = self.engine
        tasks.spawn {
            do {
                for endpoint in endpointIDs.prefix(1) {
                    try await engine.send(.stream(next: { reader.read() }), to: endpoint, id: id)
                }
                completionHandler?(nil)
            } catch {
                completionHandler?(error)
            }
        }
        return CancellationToken(payloadID: id, engine: engine)
    }

    /// Disconnects from an endpoint (Google's callback form).
    public func disconnect(from endpointID: EndpointID, completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        let engine = self.engine
        tasks.spawn {
            await engine.disconnect(from: endpointID)
            completionHandler?(nil)
        }
    }
}

/// Reads an `InputStream` in 64 KiB pieces for a stream payload.
final class InputStreamReader: @unchecked Sendable {
    private let stream: InputStream
    private let lock = NSLock()

    init(_ stream: InputStream) {
        self.stream = stream
    }

    func read() -> [UInt8]? {
        lock.withLock {
            if stream.streamStatus == .notOpen { stream.open() }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else {
                stream.close()
                return nil
            }
            return Array(buffer.prefix(count))
        }
    }
}
