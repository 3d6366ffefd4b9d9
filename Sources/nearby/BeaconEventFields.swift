import Foundation
import NearbyMessages
import NearbyWire

/// `beacon_found`, `beacon_lost`: the decoded fields of the beacon's frame, its RSSI and estimated distance.
struct BeaconEventFields: Encodable {
    var kind: String
    var address: String
    var rssi: Int
    var distanceM: Double?
    var namespace: String?
    var instance: String?
    var txPower: Int?
    var url: String?
    var version: Int?
    var batteryMv: Int?
    /// `null` for a telemetry frame without a temperature; absent for other frames.
    var temperatureC: Double??
    var advCount: Int?
    var uptimeS: Double?
    var etlmHex: String?
    var salt: Int?
    var mic: Int?
    var eid: String?
    var uuid: String?
    var major: Int?
    var minor: Int?
    var manufacturer: Int?
    var beaconID: String?
    var reserved: Int?

    init(_ beacon: Beacon) {
        kind = beacon.frame.kind
        address = beacon.address
        rssi = beacon.rssi
        distanceM = beacon.estimatedDistance.map { ($0 * 100).rounded() / 100 }
        switch beacon.frame {
        case .eddystoneUID(let namespace, let instance, let tx):
            self.namespace = Hex.encode(namespace)
            self.instance = Hex.encode(instance)
            txPower = tx
        case .eddystoneURL(let url, let tx):
            self.url = url
            txPower = tx
        case .eddystoneTLM(let telemetry):
            version = 0
            batteryMv = Int(telemetry.batteryMillivolts)
            temperatureC = .some(telemetry.temperatureCelsius)
            advCount = Int(telemetry.advertisingCount)
            uptimeS = telemetry.uptimeSeconds
        case .eddystoneEncryptedTLM(let ciphertext, let salt, let mic):
            version = 1
            etlmHex = Hex.encode(ciphertext)
            self.salt = Int(salt)
            self.mic = Int(mic)
        case .eddystoneEID(let id, let tx):
            eid = Hex.encode(id)
            txPower = tx
        case .iBeacon(let uuid, let major, let minor, let power):
            self.uuid = uuid.uuidString.lowercased()
            self.major = Int(major)
            self.minor = Int(minor)
            txPower = power
        case .altBeacon(let manufacturer, let id, let power, let reserved):
            self.manufacturer = Int(manufacturer)
            beaconID = Hex.encode(id)
            txPower = power
            self.reserved = Int(reserved)
        }
    }
}
