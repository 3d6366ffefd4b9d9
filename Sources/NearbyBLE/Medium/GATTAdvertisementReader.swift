import Logging
import NearbyCore
import NearbyWire

/// Scan-and-read for advertisers that serve their advertisement over GATT: a legacy advertisement whose 0xFEF3
/// service data is a ``BleAdvertisementHeader`` (version, extended flag, slot count, service-ID Bloom filter,
/// advertisement hash, PSM). When the Bloom filter may hold our service, the reader connects, reads the slot
/// characteristics `00000000-0000-3000-8000-00000000000N`, disconnects, and hands the discovery the report it would
/// have got from an extended advertisement: the slot's regular advertisement as 0xFEF3 service data (at most 161
/// bytes with 131 bytes of endpoint info, so one AD structure holds it).
///
/// One read per advertiser and advertisement hash: later reports of the same header reuse it (they keep the
/// endpoint from being lost); a new hash reads again. A failed read is tried again after ``retryInterval``.
/// Sources: google/nearby `mediums/ble/discovered_peripheral_tracker.cc` (both a medium advertisement and a header
/// are tried on every report), `ble_advertisement_header.cc`, `ble_utils.cc`.
final class GATTAdvertisementReader: Sendable {
    private struct Entry {
        var hash: [UInt8]
        var serviceData: [UInt8]?
        var attempted: Duration
    }

    /// How long after a failed read the same advertiser is read again.
    let retryInterval: Duration = .seconds(5)
    private let serviceID: String
    private let serviceHash: [UInt8]
    private let radio: any BLERadio
    private let clock: NearbyClock
    private let logger: Logger
    private let entries = LockedValue<[BLEAddress: Entry]>([:])

    init(serviceID: String, radio: any BLERadio, clock: NearbyClock, logger: Logger) {
        self.serviceID = serviceID
        self.serviceHash = ServiceIDHash.advertisementHash(serviceID: serviceID)
        self.radio = radio
        self.clock = clock
        self.logger = logger
    }

    /// The header in `report`'s 0xFEF3 service data, when it is one that may advertise our service (and the data is
    /// not a medium advertisement of ours).
    static func header(in report: AdvertisingReport, serviceID: String, serviceHash: [UInt8]) -> BleAdvertisementHeader? {
        guard let data = AdvertisingData.serviceData(report.data, uuid: BLEMedium.serviceUUID),
            data.count == BleAdvertisementHeader.length || data.count == BleAdvertisementHeader.lengthWithoutPSM,
            let header = try? BleAdvertisementHeader(decoding: data), header.slotCount > 0
        else { return nil }
        if let medium = try? BleMediumAdvertisement(decoding: data), medium.isFast || medium.serviceIDHash == serviceHash {
            return nil
        }
        return header.serviceIDBloomFilter.possiblyContains(serviceID) ? header : nil
    }

    /// The report to give the discovery: `report` itself, unless it carries a header of our service, whose
    /// regular advertisement (read from GATT once per advertisement hash) replaces it; `nil` while there is none.
    func resolve(_ report: AdvertisingReport) async -> AdvertisingReport? {
        guard let header = Self.header(in: report, serviceID: serviceID, serviceHash: serviceHash) else { return report }
        let now = clock.now
        let cached = entries.withLock { entries -> Entry? in
            guard let entry = entries[report.address], entry.hash == header.advertisementHash else { return nil }
            return entry
        }
        if let cached {
            if let data = cached.serviceData { return Self.report(report, serviceData: data) }
            if now - cached.attempted < retryInterval { return nil }
        }
        let data: [UInt8]?
        do {
            data = try await read(header, from: report.address)
        } catch {
            logger.debug("cannot read the GATT advertisement", metadata: ["peer": "\(report.address)", "error": "\(error)"])
            data = nil
        }
        entries.withLock { $0[report.address] = Entry(hash: header.advertisementHash, serviceData: data, attempted: now) }
        return data.map { Self.report(report, serviceData: $0) }
    }

    private func read(_ header: BleAdvertisementHeader, from address: BLEAddress) async throws -> [UInt8]? {
        let gatt = try await radio.connectGATT(to: address)
        do {
            _ = try await gatt.exchangeMTU()
            let characteristics = try await gatt.discoverCharacteristics(service: NearbyGATTUUIDs.service)
            var found: [UInt8]?
            for slot in 0..<header.slotCount {
                guard let characteristic = characteristics.first(where: { $0.uuid == NearbyGATTUUIDs.advertisementSlot(slot) }) else {
                    continue
                }
                let value = try await gatt.read(characteristic)
                if let medium = try? BleMediumAdvertisement(decoding: value), !medium.isFast, medium.serviceIDHash == serviceHash {
                    found = value
                    break
                }
            }
            await gatt.disconnect()
            logger.debug("read the GATT advertisement", metadata: ["peer": "\(address)", "found": "\(found != nil)"])
            return found
        } catch {
            await gatt.disconnect()
            throw error
        }
    }

    private static func report(_ report: AdvertisingReport, serviceData: [UInt8]) -> AdvertisingReport {
        var resolved = report
        resolved.data = AdvertisingData.build(serviceUUID: BLEMedium.serviceUUID, serviceData: serviceData, maxLength: 255)
        return resolved
    }
}
