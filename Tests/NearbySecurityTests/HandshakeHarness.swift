import NearbySecurity
import NearbyWire

/// Runs a UKEY2 handshake between a client and a server entirely in memory.
enum HandshakeHarness {
    struct Outcome {
        var client: Ukey2HandshakeResult
        var server: Ukey2HandshakeResult
        var clientInit: [UInt8]
        var serverInit: [UInt8]
        var clientFinished: [UInt8]
    }

    static func run(client: Ukey2Client = Ukey2Client(), server: Ukey2Server = Ukey2Server()) throws -> Outcome {
        var client = client
        var server = server
        let clientInit = try client.start()
        guard case .send(let serverInit) = server.receive(clientInit) else {
            throw NearbyError(.handshakeFailed, "server did not answer ClientInit")
        }
        guard case .sendAndComplete(let clientFinished, let clientResult) = client.receive(serverInit) else {
            throw NearbyError(.handshakeFailed, "client did not finish")
        }
        guard case .complete(let serverResult) = server.receive(clientFinished) else {
            throw NearbyError(.handshakeFailed, "server did not complete")
        }
        return Outcome(
            client: clientResult, server: serverResult, clientInit: clientInit, serverInit: serverInit,
            clientFinished: clientFinished)
    }
}

extension Ukey2Action {
    /// The alert bytes and error of a failed action, or nil.
    var failure: (alert: [UInt8]?, error: NearbyError)? {
        if case .fail(let alert, let error) = self { return (alert, error) }
        return nil
    }
}
