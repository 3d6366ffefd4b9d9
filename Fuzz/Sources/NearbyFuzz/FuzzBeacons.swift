import NearbyMessages

/// Beacon frames a scanner hears from anyone: whole advertising data, Eddystone service data (UID, URL, TLM,
/// encrypted TLM, EID), manufacturer data (iBeacon, AltBeacon) and Eddystone-URL expansion; every decoded frame is
/// turned into the message and distance estimate an app would see.
func fuzzBeacons(_ input: FuzzInput) {
    var input = input
    let mode = input.byte() % 4
    let bytes = input.rest()
    let frames: [BeaconFrame]
    switch mode {
    case 0: frames = BeaconDecoder.decode(bytes)
    case 1: frames = [BeaconDecoder.decodeEddystone(bytes)].compactMap { $0 }
    case 2: frames = [BeaconDecoder.decodeManufacturerData(bytes)].compactMap { $0 }
    default:
        _ = BeaconDecoder.expandURL(scheme: bytes.first ?? 0, Array(bytes.dropFirst()))
        frames = [BeaconDecoder.decodeServiceData(bytes)].compactMap { $0 }
    }
    for frame in frames {
        let beacon = Beacon(frame: frame, address: "01:02:03:04:05:06", rssi: -60)
        _ = beacon.frame.message
        _ = beacon.frame.kind
        if let reference = frame.referenceRSSIAt1m {
            _ = BeaconDistance.estimate(rssi: -60, referenceAt1m: reference)
        }
    }
}
