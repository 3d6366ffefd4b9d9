import Dispatch
import Foundation

/// SIGUSR1 cancels every payload in flight (incoming and outgoing) of this `nearby` process; the connection stays
/// up. This is how scripts (the fault soak) cancel a transfer from either side.
enum CancelSignal {
    /// Installs the SIGUSR1 handler; `cancel` runs once per signal. Keep the returned source alive.
    static func install(_ cancel: @escaping @Sendable () async -> Void) -> any DispatchSourceSignal {
        signal(SIGUSR1, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: DispatchQueue(label: "nearby.cancel"))
        source.setEventHandler { Task { await cancel() } }
        source.resume()
        return source
    }
}
