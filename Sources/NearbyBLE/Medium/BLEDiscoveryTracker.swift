import Logging
import NearbyCore
import NearbyWire

/// Turns advertising reports into found/lost events: decodes Nearby advertisements, filters by service and
/// strategy, de-duplicates, and expires endpoints unseen for the lost timeout. A value-type state machine.
public struct BLEDiscoveryTracker: Sendable {
    private struct Seen {
        var endpoint: DiscoveredEndpoint
        var lastSeen: ContinuousClock.Instant
    }

    /// The service to match.
    public let serviceID: String
    /// The strategy to match.
    public let pcp: PCP
    /// How long an endpoint may go unseen before it is lost.
    public let lostTimeout: Duration
    private let serviceHash: [UInt8]
    private var seen: [BLEAddress: Seen] = [:]

    /// Creates a tracker.
    public init(serviceID: String, pcp: PCP, lostTimeout: Duration) {
        self.serviceID = serviceID
        self.pcp = pcp
        self.lostTimeout = lostTimeout
        self.serviceHash = ServiceIDHash.advertisementHash(serviceID: serviceID)
    }

    /// Decodes a Nearby endpoint from advertising data, or `nil` when the data holds no matching advertisement.
    public static func endpoint(
        from report: AdvertisingReport, serviceHash: [UInt8], pcp: PCP
    ) throws -> DiscoveredEndpoint? {
        guard let serviceData = AdvertisingData.serviceData(report.data, uuid: BLEMedium.serviceUUID) else { return nil }
        let medium = try BleMediumAdvertisement(decoding: serviceData)
        let connections: BleConnectionsAdvertisement
        if medium.isFast {
            connections = try BleConnectionsAdvertisement(decoding: medium.data, form: .fast)
        } else {
            guard medium.serviceIDHash == serviceHash else { return nil }
            connections = try BleConnectionsAdvertisement(decoding: medium.data, form: .regular)
            guard connections.serviceIDHash == serviceHash else { return nil }
        }
        guard connections.pcp == pcp else { return nil }
        return DiscoveredEndpoint(
            endpointID: connections.endpointID.value, endpointInfo: connections.endpointInfo, medium: .ble,
            route: .ble(address: report.address.description, psm: medium.psm))
    }

    /// Records a report; returns `.found` for a new endpoint or changed info.
    public mutating func observe(_ report: AdvertisingReport, now: ContinuousClock.Instant, logger: Logger) -> [DiscoveryEvent] {
        let endpoint: DiscoveredEndpoint?
        do {
            endpoint = try Self.endpoint(from: report, serviceHash: serviceHash, pcp: pcp)
        } catch {
            logger.debug("skipping advertisement from \(report.address): \(error)")
            return []
        }
        guard let endpoint else { return [] }
        var events: [DiscoveryEvent] = []
        if let previous = seen[report.address] {
            if previous.endpoint == endpoint {
                seen[report.address]?.lastSeen = now
                return []
            }
            if previous.endpoint.endpointID != endpoint.endpointID {
                events.append(.lost(endpointID: previous.endpoint.endpointID, medium: .ble))
            }
        }
        seen[report.address] = Seen(endpoint: endpoint, lastSeen: now)
        events.append(.found(endpoint))
        return events
    }

    /// Returns `.lost` for every endpoint unseen for the lost timeout, and forgets them.
    public mutating func expire(now: ContinuousClock.Instant) -> [DiscoveryEvent] {
        var events: [DiscoveryEvent] = []
        for (address, entry) in seen where now - entry.lastSeen > lostTimeout {
            seen[address] = nil
            events.append(.lost(endpointID: entry.endpoint.endpointID, medium: .ble))
        }
        return events
    }
}
