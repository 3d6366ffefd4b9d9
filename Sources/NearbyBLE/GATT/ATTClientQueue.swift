import NearbyWire

/// The client side of one ATT bearer as a value-type machine: requests go out one at a time (ATT allows one
/// outstanding request per direction), each matched to the next response or error and bounded by the ATT
/// transaction timeout (30 s, after which the bearer is unusable, as the spec says). Indications and notifications
/// from the server are passed on; the caller confirms an indication once its consumer took the value, so a slow
/// reader holds the server back (one indication is outstanding at a time).
package struct ATTClientQueue: Sendable {
    /// Identifies a submitted request.
    package typealias RequestID = Int

    /// What the caller does.
    package enum Action: Sendable {
        /// Send this PDU.
        case send(ATTPDU)
        /// The request got this response (never an Error Response: see ``fail(_:_:)``).
        case complete(RequestID, ATTPDU)
        /// The request failed.
        case fail(RequestID, NearbyError)
        /// Start the transaction timer of this request.
        case scheduleTimeout(RequestID, Duration)
        /// Cancel it.
        case cancelTimeout(RequestID)
        /// The server indicated (the caller confirms it) or notified a value.
        case value(handle: UInt16, value: [UInt8], indicated: Bool)
    }

    /// The ATT transaction timeout.
    package let timeout: Duration
    private var nextID = 0
    private var waiting: [(RequestID, ATTPDU)] = []
    private var outstanding: (id: RequestID, opcode: UInt8)?
    private var failure: NearbyError?

    /// A queue whose transactions time out after `timeout`.
    package init(timeout: Duration = .seconds(30)) {
        self.timeout = timeout
    }

    /// Queues a request; it goes out at once when nothing is outstanding.
    package mutating func submit(_ request: ATTPDU) -> (RequestID, [Action]) {
        nextID += 1
        let id = nextID
        if let failure { return (id, [.fail(id, failure)]) }
        waiting.append((id, request))
        return (id, sendNext())
    }

    /// Feeds a PDU from the server that is not a request to this side's server role.
    package mutating func receive(_ pdu: ATTPDU) -> [Action] {
        switch pdu {
        case .indication(let handle, let value):
            return [.value(handle: handle, value: value, indicated: true)]
        case .notification(let handle, let value):
            return [.value(handle: handle, value: value, indicated: false)]
        default:
            break
        }
        guard let current = outstanding else { return [] }
        let matches: Bool
        switch pdu {
        case .errorResponse(let opcode, _, _): matches = opcode == current.opcode
        default: matches = pdu.opcode == current.opcode + 1
        }
        guard matches else { return [] }
        outstanding = nil
        var actions: [Action] = [.cancelTimeout(current.id)]
        if case .errorResponse(_, let handle, let code) = pdu {
            actions.append(.fail(current.id, NearbyError(
                .gattRequestFailed,
                "the GATT server answered request 0x\(String(current.opcode, radix: 16)) on handle \(handle) with ATT error 0x\(String(code, radix: 16))")))
        } else {
            actions.append(.complete(current.id, pdu))
        }
        return actions + sendNext()
    }

    /// The transaction timer of `id` fired: the request and every later one fail, and the bearer stays failed.
    package mutating func timedOut(_ id: RequestID) -> [Action] {
        guard outstanding?.id == id else { return [] }
        return failAll(NearbyError(.timeout, "the GATT server did not answer within \(timeout)"))
    }

    /// Fails every request, now and later (the connection ended).
    package mutating func failAll(_ error: NearbyError) -> [Action] {
        failure = failure ?? error
        var actions: [Action] = []
        if let current = outstanding {
            actions += [.cancelTimeout(current.id), .fail(current.id, error)]
            outstanding = nil
        }
        actions += waiting.map { .fail($0.0, error) }
        waiting = []
        return actions
    }

    private mutating func sendNext() -> [Action] {
        guard outstanding == nil, !waiting.isEmpty else { return [] }
        let (id, request) = waiting.removeFirst()
        outstanding = (id, request.opcode)
        return [.send(request), .scheduleTimeout(id, timeout)]
    }
}
