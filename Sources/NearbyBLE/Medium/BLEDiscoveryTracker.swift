import Logging
import NearbyCore
import NearbyWire

/// Turns advertising reports into found/lost events: decodes Nearby advertisements, filters by service and
/// strategy, de-duplicates, and loses endpoints unseen for the lost timeout (through a `LostEndpointTracker`
/// per advertiser address). A value-type state machine: it reads no clock and runs no timers; the caller passes
/// clock readings and performs the returned actions.
package struct BLEDiscoveryTracker: Sendable {
    /// What the caller must do.
    package enum Action: Sendable, Hashable {
        /// Report a discovery event.
        case report(DiscoveryEvent)
        /// Call ``timerFired(for:now:)`` for the address after the duration.
        case startTimer(BLEAddress, after: Duration)
    }

    /// The service to match.
    package let serviceID: String
    /// The strategy to match.
    package let pcp: PCP
    /// How long an endpoint may go unseen before it is lost.
    package var lostTimeout: Duration { lost.timeout }
    private let serviceHash: [UInt8]
    private var endpoints: [BLEAddress: DiscoveredEndpoint] = [:]
    private var lost: LostEndpointTracker<BLEAddress>

    /// Creates a tracker.
    package init(serviceID: String, pcp: PCP, lostTimeout: Duration) {
        self.serviceID = serviceID
        self.pcp = pcp
        self.lost = LostEndpointTracker(timeout: lostTimeout)
        self.serviceHash = ServiceIDHash.advertisementHash(serviceID: serviceID)
    }

    /// Decodes a Nearby endpoint from advertising data, or `nil` when the data holds no matching advertisement.
    package static func endpoint(
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

    /// Records a report received at `now` (a `NearbyClock` reading): `.found` for a new endpoint or changed info
    /// (after `.lost` for the endpoint an address advertised before, if it now advertises another), and a timer to
    /// start for an address seen for the first time.
    package mutating func observe(_ report: AdvertisingReport, now: Duration, logger: Logger) -> [Action] {
        let endpoint: DiscoveredEndpoint?
        do {
            endpoint = try Self.endpoint(from: report, serviceHash: serviceHash, pcp: pcp)
        } catch {
            logger.debug("skipping advertisement from \(report.address): \(error)")
            return []
        }
        guard let endpoint else { return [] }
        var actions: [Action] = []
        if case .startTimer(let address, let delay) = lost.seen(report.address, now: now) {
            actions.append(.startTimer(address, after: delay))
        }
        if let previous = endpoints[report.address] {
            if previous == endpoint { return actions }
            if previous.endpointID != endpoint.endpointID {
                actions.append(.report(.lost(endpointID: previous.endpointID, medium: .ble)))
            }
        }
        endpoints[report.address] = endpoint
        actions.append(.report(.found(endpoint)))
        return actions
    }

    /// The lost timer of `address` fired at `now`: `.lost` when its endpoint was silent for the lost timeout, a
    /// timer for the remaining time otherwise.
    package mutating func timerFired(for address: BLEAddress, now: Duration) -> [Action] {
        switch lost.timerFired(address, now: now) {
        case .startTimer(let address, let delay):
            return [.startTimer(address, after: delay)]
        case .lost(let address):
            guard let endpoint = endpoints.removeValue(forKey: address) else { return [] }
            return [.report(.lost(endpointID: endpoint.endpointID, medium: .ble))]
        case nil:
            return []
        }
    }
}
