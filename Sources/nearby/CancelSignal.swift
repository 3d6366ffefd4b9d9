import Foundation
import UnixSignals

/// SIGUSR1 cancels every payload in flight (incoming and outgoing) of this `nearby` process; the connection stays
/// up. This is how scripts (the fault soak) cancel a transfer from either side.
enum CancelSignal {
    /// Traps SIGUSR1 and runs `cancel` once per signal, until the returned task is cancelled. The handler is in
    /// place when this returns.
    static func install(_ cancel: @escaping @Sendable () async -> Void) async -> Task<Void, Never> {
        signal(SIGUSR1, SIG_IGN)
        let signals = await UnixSignalsSequence(trapping: .sigusr1)
        return Task {
            for await _ in signals { await cancel() }
        }
    }
}
