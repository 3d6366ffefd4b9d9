import NearbyWire

/// The HCI command flow as a value-type state machine: Num_HCI_Command_Packets credits, a FIFO of commands waiting
/// for a credit, the commands the controller has not answered yet, and their timeouts.
///
/// The host actor feeds it commands, Command Complete / Command Status events and fired timers, and performs the
/// ``Action``s it returns (write a packet, start or stop a timer, resume or fail a waiting caller). It never
/// touches I/O or time itself.
///
/// Commands are answered by opcode, oldest first. A command whose opcode is already waiting for an answer stays
/// queued (and holds back the queue behind it) until that answer arrives, so answers are never ambiguous.
package struct HCICommandFlow: Sendable {
    /// Identifies one submitted command.
    package typealias CommandID = Int

    /// What the host must do.
    package enum Action: Sendable {
        /// Write this H4 packet (indicator included) to the transport.
        case write(CommandID, [UInt8])
        /// Start the timeout of command `CommandID`; call ``timedOut(_:)`` when it fires.
        case scheduleTimeout(CommandID, after: Duration)
        /// Stop the timeout of command `CommandID`.
        case cancelTimeout(CommandID)
        /// The command succeeded: Command Complete's return parameters after the status byte, or `[]` for
        /// Command Status.
        case succeed(CommandID, [UInt8])
        /// The command failed.
        case fail(CommandID, NearbyError)
    }

    private struct Queued: Sendable {
        let id: CommandID
        let command: HCICommand
        let timeout: Duration
    }

    private struct Outstanding: Sendable {
        let id: CommandID
        let opcode: HCIOpcode
    }

    /// How many commands the controller accepts now (Num_HCI_Command_Packets of its last answer; 1 at start).
    package private(set) var credits = 1
    private var queue: [Queued] = []
    private var outstanding: [Outstanding] = []
    private var nextID: CommandID = 0
    private var failure: NearbyError?

    /// Creates the flow of a freshly opened controller (one credit).
    package init() {}

    /// The number of commands queued for a credit.
    package var queuedCount: Int { queue.count }
    /// The number of commands sent and not yet answered.
    package var outstandingCount: Int { outstanding.count }

    /// Submits `command`, to be answered within `timeout` of being written.
    package mutating func submit(_ command: HCICommand, timeout: Duration) -> (CommandID, [Action]) {
        nextID += 1
        let id = nextID
        if let failure { return (id, [.fail(id, failure)]) }
        queue.append(Queued(id: id, command: command, timeout: timeout))
        return (id, drain())
    }

    /// Feeds an event from the controller; only Command Complete and Command Status matter here.
    /// Returns `nil` for an answer that matches no outstanding command (late after a timeout, or unsolicited).
    package mutating func receive(_ event: HCIEvent) -> [Action]? {
        switch event {
        case .commandComplete(let numCommands, let opcode, let parameters):
            credits = Int(numCommands)
            let status = parameters.first ?? 0
            return answer(opcode: opcode, status: status, parameters: Array(parameters.dropFirst()))
        case .commandStatus(let status, let numCommands, let opcode):
            credits = Int(numCommands)
            return answer(opcode: opcode, status: status, parameters: [])
        default:
            return []
        }
    }

    /// The timeout of `id` fired: the command fails with `.timeout`, and the controller is assumed to accept the
    /// next command (it lost this one).
    package mutating func timedOut(_ id: CommandID) -> [Action] {
        guard let index = outstanding.firstIndex(where: { $0.id == id }) else { return [] }
        let command = outstanding.remove(at: index)
        credits = max(credits, 1)
        let error = NearbyError(.timeout, "the HCI controller did not answer command \(command.opcode)")
        return [.fail(id, error)] + drain()
    }

    /// Writing command `id` to the transport failed with `error`.
    package mutating func writeFailed(_ id: CommandID, _ error: NearbyError) -> [Action] {
        guard let index = outstanding.firstIndex(where: { $0.id == id }) else { return [] }
        outstanding.remove(at: index)
        credits = max(credits, 1)
        return [.cancelTimeout(id), .fail(id, error)] + drain()
    }

    /// The host stopped: every queued and outstanding command fails with `error`, and so does every later one.
    package mutating func failAll(_ error: NearbyError) -> [Action] {
        guard failure == nil else { return [] }
        failure = error
        var actions: [Action] = []
        for command in outstanding { actions += [.cancelTimeout(command.id), .fail(command.id, error)] }
        for command in queue { actions.append(.fail(command.id, error)) }
        outstanding = []
        queue = []
        return actions
    }

    private mutating func answer(opcode: HCIOpcode, status: UInt8, parameters: [UInt8]) -> [Action]? {
        guard let index = outstanding.firstIndex(where: { $0.opcode == opcode }) else {
            // A credit update (opcode 0x0000) or a late answer: more commands may go out now.
            let next = drain()
            return opcode.rawValue == 0 || !next.isEmpty ? next : nil
        }
        let command = outstanding.remove(at: index)
        var actions: [Action] = [.cancelTimeout(command.id)]
        if status != 0 {
            actions.append(
                .fail(
                    command.id,
                    NearbyError(.hciCommandFailed, "HCI command \(opcode) failed with status 0x\(String(status, radix: 16))")))
        } else {
            actions.append(.succeed(command.id, parameters))
        }
        return actions + drain()
    }

    /// Sends queued commands while the controller has credits, oldest first.
    private mutating func drain() -> [Action] {
        var actions: [Action] = []
        while credits > 0, let next = queue.first, !outstanding.contains(where: { $0.opcode == next.command.opcode }) {
            queue.removeFirst()
            credits -= 1
            outstanding.append(Outstanding(id: next.id, opcode: next.command.opcode))
            actions.append(.scheduleTimeout(next.id, after: next.timeout))
            actions.append(.write(next.id, H4Packet.command(next.command.encoded).encoded))
        }
        return actions
    }
}
