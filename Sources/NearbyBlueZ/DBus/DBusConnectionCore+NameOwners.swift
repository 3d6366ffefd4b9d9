import NearbyCore
import NearbyWire

extension DBusConnectionCore {
    /// Follows the owner of the well-known `name` from now on: asks the bus for `NameOwnerChanged` of `name`
    /// (AddMatch), then for its current owner (`GetNameOwner`, applied on the queue in the order the bus answered,
    /// so no change in between is lost). Returns at once when `name` is followed already; a caller that comes while
    /// another one looks it up waits for that lookup.
    /// - Throws: `.timeout` when the bus does not answer within `timeout`, `.mediumUnavailable` when it refuses or
    ///   the connection closes.
    func followOwner(of name: String, timeout: Duration) async throws {
        enum Step: Sendable { case followed, wait, lookUp }
        let step: Step = try await onQueue {
            guard !self.closed else { throw self.unavailable() }
            if self.owners.isWatched(name) { return .followed }
            if self.ownerLookups[name] != nil { return .wait }
            self.ownerLookups[name] = []
            return .lookUp
        }
        switch step {
        case .followed:
            return
        case .wait:
            try await withHandoffContinuation { (waiter: HandoffResumer<Void>) in
                queue.async {
                    if self.owners.isWatched(name) {
                        waiter.resume(returning: ())
                    } else if self.ownerLookups[name] != nil, !self.closed {
                        self.ownerLookups[name]?.append(waiter)
                    } else {
                        waiter.resume(throwing: NearbyError(
                            .mediumUnavailable, "D-Bus: the owner of \(name) could not be looked up"))
                    }
                }
            }
        case .lookUp:
            do {
                _ = try await call(
                    destination: DBusNameOwners.busName, path: "/org/freedesktop/DBus", interface: DBusNameOwners.busName,
                    member: "AddMatch", arguments: [.string(DBusMatch.nameOwnerChanged(name).ruleString)],
                    timeout: timeout)
                _ = try await call(
                    destination: DBusNameOwners.busName, path: "/org/freedesktop/DBus", interface: DBusNameOwners.busName,
                    member: "GetNameOwner", arguments: [.string(name)], timeout: timeout,
                    onResult: { result in self.ownerLookedUp(name, result) })
            } catch let error as NearbyError where error.dbusErrorName == Self.nameHasNoOwner {
                return
            } catch {
                // AddMatch failed, or the call was cancelled before it was sent: no result reached the queue.
                await onQueue { self.ownerLookupFailed(name, error) }
                throw error
            }
        }
    }

    static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"

    /// `GetNameOwner`'s answer for `name` (on the queue, in dispatch order): `name` is followed from now on, or,
    /// when the bus did not answer, not at all.
    private func ownerLookedUp(_ name: String, _ result: Result<[DBusValue], any Error>) {
        switch result {
        case .success(let values):
            owners.set(name, owner: values.first?.string)
        case .failure(let error as NearbyError) where error.dbusErrorName == Self.nameHasNoOwner:
            owners.set(name, owner: nil)
        case .failure(let error):
            return ownerLookupFailed(name, error)
        }
        let waiters = ownerLookups.removeValue(forKey: name) ?? []
        for waiter in waiters { waiter.resume(returning: ()) }
    }

    private func ownerLookupFailed(_ name: String, _ error: any Error) {
        guard !owners.isWatched(name), let waiters = ownerLookups.removeValue(forKey: name) else { return }
        for waiter in waiters { waiter.resume(throwing: error) }
    }
}

extension DBusClient {
    /// Whether `sender` (a unique name, as the bus stamps messages) owns the well-known `name` now, as far as this
    /// connection follows it (`signals(matching:)` with `name` as the sender starts following it); an unfollowed
    /// name has no known owner. Exported objects use it to answer only the service they registered with (e.g.
    /// `LEAdvertisement1.Release` from `bluetoothd` alone).
    package func isOwner(_ sender: String, of name: String) async -> Bool {
        await core.onQueue { [core = self.core] in core.owners.accepts(sender: sender, as: name) }
    }
}

extension DBusClient {
    /// Whether the well-known `name` has an owner now, as this connection follows it (no bus round trip); an
    /// unfollowed name counts as unowned.
    package func isOwned(_ name: String) async -> Bool {
        await core.onQueue { [core = self.core] in core.owners.owner(of: name) != nil }
    }
}
