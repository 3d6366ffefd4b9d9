import CAvahiClient
import NearbyWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One `browse(serviceType:)` stream: an Avahi service browser over every interface and IP protocol, one resolver
/// per copy of each instance, and the merge of those copies into ``DNSSDBrowseEvent``s.
///
/// All state is guarded by the event-loop lock of ``AvahiConnection``.
///
/// Merging: an instance is reported ``DNSSDBrowseEvent/found(_:)`` as soon as one copy resolved, and again whenever
/// the merged view changes (another copy adds an address, or host, port or TXT change); host, port and TXT come
/// from the most recently resolved copy. ``DNSSDBrowseEvent/lost(instanceName:)`` follows the removal of the
/// last copy.
final class AvahiBrowseSession: @unchecked Sendable {
    /// The most copies (instance × interface × IP protocol) tracked at once; further NEW events are ignored.
    static let maximumCopies = 256
    /// Failed resolves in a row after which a copy is left unresolved until it is removed and seen again.
    static let maximumConsecutiveResolveFailures = 8
    /// The longest pause between resolve attempts, in seconds.
    static let maximumRetryDelaySeconds = 30

    let serviceType: String
    private let continuation: AsyncThrowingStream<DNSSDBrowseEvent, any Error>.Continuation
    private unowned let connection: AvahiConnection
    private let pollAPI: UnsafePointer<AvahiPoll>
    private var browser: OpaquePointer?
    /// Copies by instance name, then by interface and protocol.
    private var instances: [String: [AvahiServiceCopy.Key: AvahiServiceCopy]] = [:]
    private var copyCount = 0
    /// The last event reported per instance.
    private var reported: [String: DNSSDResolvedService] = [:]
    private var resolutionCounter: UInt64 = 0
    /// Whether the stream has been finished; the session then holds no Avahi objects.
    private(set) var isFinished = false

    init(
        serviceType: String,
        continuation: AsyncThrowingStream<DNSSDBrowseEvent, any Error>.Continuation,
        connection: AvahiConnection
    ) {
        self.serviceType = serviceType
        self.continuation = continuation
        self.connection = connection
        self.pollAPI = connection.pollAPI
    }

    /// Creates the service browser. Lock held.
    func startBrowser(on client: OpaquePointer) throws {
        let created = avahi_service_browser_new(
            client,
            AvahiIfIndex(AVAHI_IF_UNSPEC),
            AvahiProtocol(AVAHI_PROTO_UNSPEC),
            serviceType,
            nil,
            AvahiLookupFlags(rawValue: 0),
            { browser, interface, ipProtocol, event, name, _, domain, _, userdata in
                guard let browser, let userdata else { return }
                Unmanaged<AvahiBrowseSession>.fromOpaque(userdata).takeUnretainedValue().browserEvent(
                    browser, interface, ipProtocol, event,
                    name.map { String(cString: $0) }, domain.map { String(cString: $0) }
                )
            },
            Unmanaged.passUnretained(self).toOpaque()
        )
        guard let created else {
            throw AvahiErrorMapping.nearbyError(avahi_client_errno(client), while: "browsing for \(serviceType)")
        }
        browser = created
    }

    /// Whether the session waits for a browser (created when the daemon runs again).
    var needsBrowser: Bool { !isFinished && browser == nil }

    /// The daemon went away with the browser and resolvers: frees their local handles and reports every instance
    /// found so far lost (they are found again once the daemon is back and the session browses again). Lock held.
    func suspend() {
        guard !isFinished else { return }
        freeAvahiObjects()
        let lost = reported.keys.sorted()
        let continuation = self.continuation
        connection.post { for name in lost { continuation.yield(.lost(instanceName: name)) } }
        reported.removeAll()
    }

    /// Frees every Avahi object and finishes the stream, with `error` if given. Idempotent. Lock held.
    func finish(throwing error: (any Error)?) {
        freeAvahiObjects()
        guard !isFinished else { return }
        isFinished = true
        let continuation = self.continuation
        let failure = error.map(AnySendableError.init)
        connection.post {
            if let failure {
                continuation.finish(throwing: failure.error)
            } else {
                continuation.finish()
            }
        }
    }

    /// Frees the browser, resolvers and timeouts. Lock held, or the event loop stopped.
    func freeAvahiObjects() {
        if let browser {
            self.browser = nil
            avahi_service_browser_free(browser)
        }
        for copies in instances.values {
            for copy in copies.values {
                copy.freeAvahiObjects(pollAPI)
            }
        }
        instances.removeAll()
        copyCount = 0
    }

    // MARK: Browser

    /// Poll thread, lock held.
    private func browserEvent(
        _ changed: OpaquePointer,
        _ interface: AvahiIfIndex,
        _ ipProtocol: AvahiProtocol,
        _ event: AvahiBrowserEvent,
        _ name: String?,
        _ domain: String?
    ) {
        guard changed == browser else { return }
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let name, copyCount < Self.maximumCopies else { return }
            let key = AvahiServiceCopy.Key(interfaceIndex: interface, ipProtocol: ipProtocol, instanceName: name)
            guard instances[name]?[key] == nil else { return }
            let copy = AvahiServiceCopy(key: key, domain: domain ?? "local", session: self)
            instances[name, default: [:]][key] = copy
            copyCount += 1
            startResolver(for: copy)
        case AVAHI_BROWSER_REMOVE:
            guard let name else { return }
            let key = AvahiServiceCopy.Key(interfaceIndex: interface, ipProtocol: ipProtocol, instanceName: name)
            guard let copy = instances[name]?.removeValue(forKey: key) else { return }
            copyCount -= 1
            copy.freeAvahiObjects(pollAPI)
            if instances[name]?.isEmpty == true {
                instances[name] = nil
            }
            reportChanges(of: name)
        case AVAHI_BROWSER_FAILURE:
            let code = avahi_client_errno(avahi_service_browser_get_client(changed))
            connection.forget(self)
            finish(throwing: AvahiErrorMapping.nearbyError(code, while: "browsing for \(serviceType)"))
        default:
            break  // CACHE_EXHAUSTED, ALL_FOR_NOW: nothing to report.
        }
    }

    // MARK: Resolvers

    /// Opens a resolver for `copy`; its address lookup uses the copy's IP protocol, so IPv4 copies give IPv4
    /// addresses and IPv6 copies IPv6 addresses. Lock held.
    private func startResolver(for copy: AvahiServiceCopy) {
        guard let client = connection.client else { return }
        let created = avahi_service_resolver_new(
            client,
            copy.key.interfaceIndex,
            copy.key.ipProtocol,
            copy.key.instanceName,
            serviceType,
            copy.domain,
            copy.key.ipProtocol,
            AvahiLookupFlags(rawValue: 0),
            { resolver, interface, _, event, _, _, _, hostName, address, port, txt, _, userdata in
                guard let resolver, let userdata else { return }
                let copy = Unmanaged<AvahiServiceCopy>.fromOpaque(userdata).takeUnretainedValue()
                copy.session.resolverEvent(
                    copy, resolver, event,
                    hostName: hostName.map { String(cString: $0) },
                    address: address.flatMap { AvahiResolvedAddress($0, interfaceIndex: interface) },
                    port: port,
                    txt: AvahiBrowseSession.txtStrings(txt)
                )
            },
            Unmanaged.passUnretained(copy).toOpaque()
        )
        if let created {
            copy.resolver = created
        } else {
            resolveFailed(copy)
        }
    }

    /// Poll thread, lock held.
    private func resolverEvent(
        _ copy: AvahiServiceCopy,
        _ changed: OpaquePointer,
        _ event: AvahiResolverEvent,
        hostName: String?,
        address: AvahiResolvedAddress?,
        port: UInt16,
        txt: [[UInt8]]
    ) {
        guard changed == copy.resolver else { return }
        if event == AVAHI_RESOLVER_FOUND, let hostName {
            copy.consecutiveFailures = 0
            resolutionCounter += 1
            copy.resolution = AvahiServiceCopy.Resolution(
                hostName: hostName,
                address: address,
                port: port,
                txt: DNSSDTXTRecord.decode(txt),
                sequence: resolutionCounter
            )
            reportChanges(of: copy.key.instanceName)
        } else {
            // Timed out (often: NEW came while the publisher was still probing) or failed: try again later. The
            // last resolution, if any, stays in the merged view until the copy is removed.
            copy.resolver = nil
            avahi_service_resolver_free(changed)
            resolveFailed(copy)
        }
    }

    /// Schedules another resolve with exponential backoff, unless the copy failed too often. Lock held.
    private func resolveFailed(_ copy: AvahiServiceCopy) {
        copy.consecutiveFailures += 1
        guard copy.consecutiveFailures < Self.maximumConsecutiveResolveFailures else { return }
        let delay = min(1 << (copy.consecutiveFailures - 1), Self.maximumRetryDelaySeconds)
        var when = timeval()
        gettimeofday(&when, nil)
        when.tv_sec += delay
        copy.retryTimeout = pollAPI.pointee.timeout_new(
            pollAPI,
            &when,
            { timeout, userdata in
                guard let timeout, let userdata else { return }
                let copy = Unmanaged<AvahiServiceCopy>.fromOpaque(userdata).takeUnretainedValue()
                copy.session.retryTimeoutFired(copy, timeout)
            },
            Unmanaged.passUnretained(copy).toOpaque()
        )
    }

    /// Poll thread, lock held.
    private func retryTimeoutFired(_ copy: AvahiServiceCopy, _ timeout: OpaquePointer) {
        guard timeout == copy.retryTimeout else { return }
        copy.retryTimeout = nil
        pollAPI.pointee.timeout_free(timeout)
        startResolver(for: copy)
    }

    // MARK: Events

    /// Yields `.found` when the merged view of `name` changed, or `.lost` when its last copy is gone. Lock held.
    private func reportChanges(of name: String) {
        guard let copies = instances[name] else {
            if reported.removeValue(forKey: name) != nil {
                let continuation = self.continuation
                connection.post { continuation.yield(.lost(instanceName: name)) }
            }
            return
        }
        let resolutions = copies.values.compactMap(\.resolution)
        guard let latest = resolutions.max(by: { $0.sequence < $1.sequence }) else { return }
        var seen = Set<String>()
        let addresses = resolutions.compactMap(\.address)
            .sorted { ($0.isIPv4 ? 0 : 1, $0.interfaceIndex, $0.text) < ($1.isIPv4 ? 0 : 1, $1.interfaceIndex, $1.text) }
            .filter { seen.insert($0.text).inserted }
        guard let first = addresses.first else { return }
        let merged = DNSSDResolvedService(
            instanceName: name,
            serviceType: serviceType,
            hostName: latest.hostName,
            addresses: addresses.map(\.text),
            port: latest.port,
            txt: latest.txt,
            interfaceIndex: first.interfaceIndex
        )
        if reported[name] != merged {
            reported[name] = merged
            let continuation = self.continuation
            connection.post { continuation.yield(.found(merged)) }
        }
    }

    /// The strings of a resolver's string list; libavahi-client hands them over in wire order.
    private static func txtStrings(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var strings: [[UInt8]] = []
        var node = list
        while let current = node {
            let size = avahi_string_list_get_size(current)
            if let text = avahi_string_list_get_text(current) {
                strings.append(Array(UnsafeBufferPointer(start: text, count: size)))
            }
            node = avahi_string_list_get_next(current)
        }
        return strings
    }
}
