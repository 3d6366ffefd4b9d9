import Logging
import NIOCore
import NIOPosix
import NearbyCore
import NearbyWire

/// The Wi-Fi LAN medium: endpoints are advertised and discovered with DNS-SD (mDNS) and connected over TCP.
///
/// Advertising listens on a TCP port and publishes a service of type `_<12 hex>._tcp` (from the service ID) whose
/// instance name is the 10-byte `WifiLanServiceInfo` in base64 and whose TXT key `n` holds the
/// endpoint info. Discovering browses that type and reports each matching endpoint with a TCP route to it.
///
/// DNS-SD goes through ``AvahiServiceDiscovery`` unless another ``DNSServiceDiscovery`` is injected. When
/// avahi-daemon is not running, advertising still listens (and says so in
/// `AdvertisingSession.discoverabilityProblem`) and its service is published once the daemon runs; connecting by
/// address still works; discovery finishes with `.mediumUnavailable`, or, made with `waitForMDNS`, waits for the
/// daemon.
package final class WiFiLANMedium: MediumDriver {
    /// The longest time publishing the DNS-SD service may take before advertising goes on without it.
    package static let registrationTimeout: Duration = .seconds(10)

    /// Always `MediumKind.wifiLAN`.
    package var kind: MediumKind { .wifiLAN }
    /// The address the advertising listener binds to.
    package let listenHost: String

    private let discoveryProvider: WiFiLANServiceDiscoveryProvider
    private let group: any EventLoopGroup
    let logger: Logger

    /// Creates the medium. Nothing is opened until advertising, discovery or a connection starts.
    ///
    /// - Parameters:
    ///   - serviceDiscovery: Creates the DNS-SD client; called on first use and again after a failure.
    ///   - listenHost: The address advertising listens on: `"0.0.0.0"` for every IPv4 address, `"::"` for dual
    ///     stack.
    ///   - logger: Where to log; `medium` metadata is added.
    package init(
        serviceDiscovery: @escaping @Sendable () throws -> any DNSServiceDiscovery = { try AvahiServiceDiscovery() },
        listenHost: String = "0.0.0.0",
        logger: Logger = Logger(label: "nearby.wifi-lan")
    ) {
        self.discoveryProvider = WiFiLANServiceDiscoveryProvider(factory: serviceDiscovery)
        self.listenHost = listenHost
        self.group = MultiThreadedEventLoopGroup.singleton
        var logger = logger
        logger[metadataKey: "medium"] = "\(MediumKind.wifiLAN)"
        self.logger = logger
    }

    /// Creates the medium on Avahi; with `waitForMDNS`, discovery started while avahi-daemon is not running waits
    /// for it instead of failing (advertising always waits: its service is published once the daemon runs).
    package convenience init(waitForMDNS: Bool, logger: Logger = Logger(label: "nearby.wifi-lan")) {
        self.init(serviceDiscovery: { try AvahiServiceDiscovery(waitForDaemon: waitForMDNS) }, logger: logger)
    }

    /// Listens on `request.port` (or a port the system chooses), then publishes the DNS-SD service for it.
    ///
    /// Publishing takes about a second (Avahi probes the name first). When it fails, the session is returned anyway
    /// with a `AdvertisingSession.discoverabilityProblem` and a warning is logged.
    ///
    /// - Throws: `NearbyError` with code `.invalidArgument` for an endpoint ID that is not 4 printable
    ///   ASCII characters, endpoint info over 131 bytes or a bad port; `.endpointIoError` when the port cannot be
    ///   listened on; `CancellationError` when the task is cancelled while publishing (nothing stays open).
    package func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        let endpointID = try EndpointID(request.endpointID)
        let encodedInfo = try WifiLanTXTRecord.encodeEndpointInfo(request.endpointInfo)
        let serviceType = ServiceIDHash.wifiLanServiceType(serviceID: request.serviceID).name
        let instanceName = WifiLanServiceInfo(
            pcp: request.pcp, endpointID: endpointID, serviceID: request.serviceID, isWebRTCConnectable: false
        ).serviceName
        var logger = self.logger
        logger[metadataKey: "service"] = "\(instanceName).\(serviceType)"

        let listener = try await TCPListener.bind(
            host: listenHost, port: request.port ?? 0, medium: .wifiLAN, group: group, logger: logger
        ) { channel in
            onIncoming(channel)
        }
        let service = DNSSDService(
            instanceName: instanceName,
            serviceType: serviceType,
            port: UInt16(listener.port),
            txt: [WifiLanTXTRecord.endpointInfoKey: Array(encodedInfo.utf8)]
        )

        var registration: DNSSDRegistration?
        var problem: NearbyError?
        do {
            registration = try await register(service)
            if let waiting = registration?.failure {
                // avahi-daemon is not running: published once it is.
                logger.warning("listening on port \(listener.port), not discoverable until avahi-daemon runs: \(waiting.message)")
            } else {
                logger.info("advertising", metadata: ["port": "\(listener.port)"])
            }
        } catch is CancellationError {
            await listener.stop()
            throw CancellationError()
        } catch {
            problem = WiFiLANDiscoverabilityProblem.make(
                from: error, instanceName: instanceName, serviceType: serviceType)
            logger.warning("listening on port \(listener.port), but \(problem?.message ?? "not discoverable")")
        }
        return WiFiLANAdvertisingSession(
            serviceType: serviceType,
            instanceName: instanceName,
            listener: listener,
            registration: registration,
            registrationProblem: problem
        )
    }

    /// Browses for endpoints advertising `serviceID` with strategy `pcp`.
    ///
    /// Services whose instance name is not a Wi-Fi LAN service info, whose service-ID hash or strategy differ, or
    /// whose TXT record lacks a valid `n` key are skipped (and logged). Found endpoints carry a
    /// `EndpointRoute.tcp(hosts:port:)` route with IPv4 addresses first, holding only the addresses
    /// ``DiscoveredAddressRules`` accept (a service left with none is skipped and logged); when their service
    /// disappears, `DiscoveryEvent.lost(endpointID:medium:)` follows.
    ///
    /// The stream finishes with the DNS-SD client's error (`.mediumUnavailable` when avahi-daemon is not running when
    /// discovery starts). When the daemon goes away later, every endpoint found is reported lost and found again
    /// once the daemon is back; cancel the consuming task to stop browsing.
    package func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveryEvent.self, throwing: (any Error).self)
        let serviceType = ServiceIDHash.wifiLanServiceType(serviceID: serviceID).name
        var logger = self.logger
        logger[metadataKey: "browse"] = "\(serviceType)"
        let serviceDiscovery: any DNSServiceDiscovery
        do {
            serviceDiscovery = try discoveryProvider.serviceDiscovery()
        } catch {
            logger.warning("cannot discover: \(error)")
            continuation.finish(throwing: error)
            return stream
        }
        // Owner: the consumer of the returned stream: ending or cancelling its iteration cancels this task (see
        // `onTermination` below); it also ends when the DNS-SD browse ends or fails.
        let browsing = Task { [logger] in
            var endpointIDs: [String: String] = [:]  // instance name → endpoint ID, for `.lost`
            do {
                for try await event in serviceDiscovery.browse(serviceType: serviceType) {
                    switch event {
                    case .found(let service):
                        let rules = DiscoveredAddressRules.current()
                        switch WiFiLANDiscoveredService.endpoint(from: service, serviceID: serviceID, pcp: pcp, rules: rules) {
                        case .success(let endpoint):
                            logger.debug(
                                "found endpoint \(endpoint.endpointID)",
                                metadata: ["peer": "\(endpoint.route)", "instance": "\(service.instanceName)"])
                            endpointIDs[service.instanceName] = endpoint.endpointID
                            continuation.yield(.found(endpoint))
                        case .failure(let rejection):
                            let message: Logger.Message = "skipping service \(service.instanceName): \(rejection)"
                            if rejection.isExpected {
                                logger.debug(message)
                            } else {
                                logger.notice(message)
                            }
                            if let endpointID = endpointIDs.removeValue(forKey: service.instanceName) {
                                continuation.yield(.lost(endpointID: endpointID, medium: .wifiLAN))
                            }
                        }
                    case .lost(let instanceName):
                        if let endpointID = endpointIDs.removeValue(forKey: instanceName) {
                            logger.debug("lost endpoint \(endpointID)", metadata: ["instance": "\(instanceName)"])
                            continuation.yield(.lost(endpointID: endpointID, medium: .wifiLAN))
                        }
                    }
                }
                continuation.finish()
            } catch {
                if !(error is CancellationError) {
                    logger.warning("discovery ended: \(error)")
                }
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in browsing.cancel() }
        return stream
    }

    /// Connects to a discovered endpoint's TCP route, trying its hosts in order for
    /// ``TCPConnector/defaultAttemptTimeout`` each.
    ///
    /// - Throws: `NearbyError` with code `.invalidArgument` for a route that is not
    ///   `EndpointRoute.tcp(hosts:port:)` (or has no host, or a bad port); `.endpointIoError` naming
    ///   every failed attempt.
    package func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        guard case .tcp(let hosts, let port) = route else {
            throw NearbyError(.invalidArgument, "the Wi-Fi LAN medium connects only to TCP routes, not \(route)")
        }
        return try await TCPConnector.connect(hosts: hosts, port: port, medium: .wifiLAN, group: group, logger: logger)
    }

    /// Publishes `service`, giving up after ``registrationTimeout``.
    private func register(_ service: DNSSDService) async throws -> DNSSDRegistration {
        let serviceDiscovery = try discoveryProvider.serviceDiscovery()
        return try await withThrowingTaskGroup(of: DNSSDRegistration?.self) { group in
            group.addTask { try await serviceDiscovery.register(service) }
            group.addTask {
                try await NearbyClock.continuous.sleep(for: Self.registrationTimeout)
                return nil
            }
            defer { group.cancelAll() }
            let first = try await group.next()!
            guard let registration = first else {
                throw NearbyError(.timeout, "publishing took longer than \(Self.registrationTimeout)")
            }
            return registration
        }
    }
}
