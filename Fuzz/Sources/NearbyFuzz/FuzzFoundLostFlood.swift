@testable import NearbyMessages

/// The found/lost trackers under floods of sightings. The input is a sequence of steps on a `FoundLostTracker` with
/// small limits the input picks (present, refresh, gone, timer, remove all; sources and items from a small
/// alphabet) and, interleaved, beacon reports from chosen addresses to a `BeaconTracker`. Checked after every step:
/// the limits hold, an item is reported found only when it was not and lost only when it was, the reported state
/// equals `foundItems`, and `removeAll` loses everything.
func fuzzFoundLostFlood(_ input: FuzzInput) {
    var input = input
    let maxSources = Int(input.byte() % 8) + 1
    let maxItems = Int(input.byte() % 8) + 1
    var tracker = FoundLostTracker<UInt8, UInt8>(
        lostAfter: .milliseconds(Int(input.byte() % 4) * 100), maxSources: maxSources, maxItems: maxItems)
    var beacons = BeaconTracker(strategy: BeaconStrategy(lostAfter: .milliseconds(200)), maxBeacons: maxSources)
    var reported = Set<UInt8>()
    var now = Duration.zero
    let frames: [[UInt8]] = [
        [0x02, 0x01, 0x06, 0x03, 0x03, 0xAA, 0xFE, 0x15, 0x16, 0xAA, 0xFE, 0x00, 0xEE]
            + Array(repeating: 0x11, count: 16) + [0x00, 0x00],
        [0x02, 0x01, 0x06, 0x03, 0x03, 0xAA, 0xFE, 0x15, 0x16, 0xAA, 0xFE, 0x00, 0xEE]
            + Array(repeating: 0x22, count: 16) + [0x00, 0x00],
    ]
    var steps = 0
    while !input.isAtEnd, steps < 512 {
        steps += 1
        let operation = input.byte()
        let source = input.byte() % 16
        let item = input.byte() % 12
        now += .milliseconds(Int(operation >> 4) * 25)
        let actions: [FoundLostTracker<UInt8, UInt8>.Action]
        switch operation % 6 {
        case 0: actions = tracker.present(source, item, now: now)
        case 1: actions = tracker.refresh(source, item, now: now)
        case 2: actions = tracker.sourceGone(source, now: now)
        case 3: actions = tracker.timerFired(source, now: now)
        case 4:
            let address = "C0:00:00:00:00:\(String(source, radix: 16))"
            for action in beacons.receive(AdvertisingReport(address: address, rssi: -40, data: frames[Int(item) % 2]), now: now) {
                if case .startTimer(let key, _) = action { _ = beacons.timerFired(key, now: now + .seconds(1)) }
            }
            fuzzCheck(beacons.trackedCount <= maxSources, "\(beacons.trackedCount) beacons tracked, limit \(maxSources)")
            continue
        default:
            actions = operation & 0x80 != 0 ? tracker.removeAll() : []
        }
        for action in actions {
            switch action {
            case .found(let found):
                fuzzCheck(reported.insert(found).inserted, "\(found) found twice")
            case .lost(let lost):
                fuzzCheck(reported.remove(lost) != nil, "\(lost) lost while not found")
            case .startTimer, .cancelTimer:
                break
            }
        }
        fuzzCheck(tracker.foundCount <= maxItems, "\(tracker.foundCount) items found, limit \(maxItems)")
        fuzzCheck(tracker.sourceCount <= maxSources, "\(tracker.sourceCount) sources held, limit \(maxSources)")
        fuzzCheck(tracker.foundItems == reported, "found items differ from what was reported")
    }
    for case .lost(let lost) in tracker.removeAll() { reported.remove(lost) }
    fuzzCheck(reported.isEmpty && tracker.foundCount == 0 && tracker.sourceCount == 0, "removeAll left something")
}
