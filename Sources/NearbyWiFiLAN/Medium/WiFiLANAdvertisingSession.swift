import NearbyCore
import NearbyWire

/// A running Wi-Fi LAN advertisement: a TCP listener plus, when DNS-SD works, a published service.
///
/// Returned by ``WiFiLANMedium/startAdvertising(_:onIncoming:)``. When the service could not be published the
/// listener still runs and peers can connect by address; ``discoverabilityProblem`` then says why nobody can discover
/// it.
package final class WiFiLANAdvertisingSession: AdvertisingSession {
    /// Always `MediumKind.wifiLAN`.
    package var medium: MediumKind { .wifiLAN }
    /// The port the listener accepts connections on.
    package var port: Int? { listener.port }
    /// The DNS-SD service type, e.g. `_FC9F5ED42C8A._tcp`.
    package var advertisedName: String { serviceType }
    /// The DNS-SD service type, e.g. `_FC9F5ED42C8A._tcp`.
    package let serviceType: String
    /// The DNS-SD instance name: the base64 Wi-Fi LAN service info (14 characters), e.g. `I0FCQ0T8n14AAA`.
    package let instanceName: String

    private let listener: TCPListener
    private let registration: DNSSDRegistration?
    private let registrationProblem: NearbyError?

    init(
        serviceType: String,
        instanceName: String,
        listener: TCPListener,
        registration: DNSSDRegistration?,
        registrationProblem: NearbyError?
    ) {
        self.serviceType = serviceType
        self.instanceName = instanceName
        self.listener = listener
        self.registration = registration
        self.registrationProblem = registrationProblem
    }

    /// `nil` while the service is published; otherwise why peers cannot discover this endpoint, for example
    /// "not discoverable: avahi-daemon is not running (…); connections by address still work". Also set while the
    /// daemon is away (the service is published again when it is back) and when another host took the instance
    /// name after publishing succeeded.
    package var discoverabilityProblem: NearbyError? {
        if let registrationProblem {
            return registrationProblem
        }
        guard let failure = registration?.failure else { return nil }
        return WiFiLANDiscoverabilityProblem.make(from: failure, instanceName: instanceName, serviceType: serviceType)
    }

    /// Withdraws the DNS-SD service (peers see the endpoint lost), then closes the listener. Channels already
    /// accepted stay open. Idempotent.
    package func stop() async {
        await registration?.cancel()
        await listener.stop()
    }
}

/// Words the error that says why a Wi-Fi LAN advertisement cannot be discovered.
enum WiFiLANDiscoverabilityProblem {
    /// The ``AdvertisingSession/discoverabilityProblem`` for a DNS-SD failure.
    static func make(from error: any Error, instanceName: String, serviceType: String) -> NearbyError {
        let suffix = "; connections by address still work"
        guard let error = error as? NearbyError else {
            return NearbyError(
                .unknown, "not discoverable: publishing \(instanceName).\(serviceType) failed (\(error))\(suffix)",
                cause: error)
        }
        switch error.code {
        case .mediumUnavailable:
            return NearbyError(
                .mediumUnavailable, "not discoverable: avahi-daemon is not running (\(error.message))\(suffix)",
                cause: error)
        case .timeout:
            return NearbyError(
                .timeout, "not discoverable: avahi-daemon did not publish \(instanceName).\(serviceType) in time\(suffix)",
                cause: error)
        default:
            return NearbyError(
                error.code, "not discoverable: publishing \(instanceName).\(serviceType) failed (\(error.message))\(suffix)",
                cause: error)
        }
    }
}
