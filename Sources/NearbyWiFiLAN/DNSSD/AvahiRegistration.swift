import CAvahiClient
import NearbyWire

/// One service published through an Avahi entry group.
///
/// All state is guarded by the event-loop lock of ``AvahiConnection``. The instance name is fixed by the Nearby
/// protocol, so a name collision ends the registration with an error instead of picking another name.
final class AvahiRegistration: @unchecked Sendable {
    let service: DNSSDService
    /// The TXT strings in the order they go on the wire.
    private let txtStrings: [[UInt8]]
    private unowned let connection: AvahiConnection
    /// The pending `register` call, resumed when the group is established or the registration ends.
    var waiter: CheckedContinuation<Void, any Error>?
    /// Whether the registration ended (cancelled or failed); it is never published again.
    private(set) var isFinished = false
    /// Why an established registration ended on its own.
    private(set) var failure: NearbyError?
    /// Why the service is not published for now (avahi-daemon went away); cleared once it is established again.
    private(set) var suspension: NearbyError?
    /// Why the service is not published: its ``failure``, else its ``suspension``; `nil` while published.
    var problem: NearbyError? { failure ?? suspension }
    /// Whether the service still has to be added and committed (first time, or after the daemon reset it).
    private(set) var needsPublishing = true
    private var group: OpaquePointer?

    init(service: DNSSDService, txtStrings: [[UInt8]], connection: AvahiConnection) {
        self.service = service
        self.txtStrings = txtStrings
        self.connection = connection
    }

    /// Adds the service to the entry group (creating it first) and commits it. Lock held.
    func publish(on client: OpaquePointer) {
        guard !isFinished else { return }
        do {
            let group = try entryGroup(on: client)
            try addService(to: group)
            let committed = avahi_entry_group_commit(group)
            guard committed >= 0 else {
                throw AvahiErrorMapping.nearbyError(committed, while: "publishing \"\(service.instanceName)\"")
            }
            needsPublishing = false
        } catch {
            connection.forget(self)
            finish(with: error)
        }
    }

    /// Withdraws the records so that they can be published again once the daemon is running. Lock held.
    func reset() {
        guard !isFinished else { return }
        if let group {
            avahi_entry_group_reset(group)
        }
        needsPublishing = true
    }

    /// The daemon went away with the entry group: forgets the group (it was freed with the client's connection,
    /// so only the local handle is freed) and waits to be published again on the next client. Lock held.
    func suspend(_ error: NearbyError) {
        guard !isFinished else { return }
        freeGroup()
        suspension = error
        needsPublishing = true
    }

    /// Resumes a pending `register` with success (after the lock is released): the registration is kept and
    /// published when it can be. Lock held.
    func resumeWaiter() {
        if let waiter {
            self.waiter = nil
            connection.post { waiter.resume() }
        }
    }

    /// Ends the registration: frees the entry group (peers see the service go), records `error` as the failure
    /// if the service had been established, and resumes a pending `register` with `error`. Lock held.
    func finish(with error: any Error) {
        freeGroup()
        if !isFinished {
            isFinished = true
            if waiter == nil, let error = error as? NearbyError {
                failure = error
            }
        }
        if let waiter {
            self.waiter = nil
            let failure = AnySendableError(error)
            connection.post { waiter.resume(throwing: failure.error) }
        }
    }

    /// Frees the entry group, if any. Lock held, or the event loop stopped.
    func freeGroup() {
        if let group {
            self.group = nil
            avahi_entry_group_free(group)
        }
    }

    private func entryGroup(on client: OpaquePointer) throws -> OpaquePointer {
        if let group {
            return group
        }
        let created = avahi_entry_group_new(
            client,
            { group, state, userdata in
                guard let group, let userdata else { return }
                Unmanaged<AvahiRegistration>.fromOpaque(userdata).takeUnretainedValue()
                    .groupStateChanged(group, state)
            },
            Unmanaged.passUnretained(self).toOpaque()
        )
        guard let created else {
            throw AvahiErrorMapping.nearbyError(avahi_client_errno(client), while: "creating an entry group")
        }
        group = created
        return created
    }

    private func addService(to group: OpaquePointer) throws {
        // avahi_string_list_add_* prepends and the client library publishes a list tail first, so adding the
        // strings in wire order puts them on the wire in that order.
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        for string in txtStrings {
            list = string.withUnsafeBufferPointer { avahi_string_list_add_arbitrary(list, $0.baseAddress, $0.count) }
            guard list != nil else {
                throw NearbyError(.unknown, "out of memory building the TXT record")
            }
        }
        defer { avahi_string_list_free(list) }
        let added = avahi_entry_group_add_service_strlst(
            group,
            AvahiIfIndex(AVAHI_IF_UNSPEC),
            AvahiProtocol(AVAHI_PROTO_UNSPEC),
            AvahiPublishFlags(rawValue: 0),
            service.instanceName,
            service.serviceType,
            nil,
            nil,
            service.port,
            list
        )
        guard added >= 0 else {
            throw AvahiErrorMapping.nearbyError(added, while: "adding service \"\(service.instanceName)\"")
        }
    }

    /// Reacts to the entry group's state. Poll thread, lock held.
    private func groupStateChanged(_ changed: OpaquePointer, _ state: AvahiEntryGroupState) {
        guard changed == group else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            suspension = nil
            resumeWaiter()
        case AVAHI_ENTRY_GROUP_COLLISION:
            connection.forget(self)
            finish(with: AvahiErrorMapping.collision("publishing \"\(service.instanceName)\" as \(service.serviceType)"))
        case AVAHI_ENTRY_GROUP_FAILURE:
            let code = avahi_client_errno(avahi_entry_group_get_client(changed))
            connection.forget(self)
            finish(with: AvahiErrorMapping.nearbyError(code, while: "publishing \"\(service.instanceName)\""))
        default:
            break
        }
    }
}

/// An error carried into a posted call-out.
struct AnySendableError: @unchecked Sendable {
    let error: any Error

    init(_ error: any Error) { self.error = error }
}
