import NearbyWire
@testable import NearbyQuickShare

/// What a Quick Share peer controls: its endpoint info (TXT `n`, connection request), the 0xFE2C beacon, single
/// frames, and a whole conversation fed to a receiver's and a sender's session machine (frames, payload starts and
/// ends, decisions, deadlines). Decoders must never trap and must round-trip; a machine must finish at most once.
func fuzzQuickShare(_ input: FuzzInput) {
    var input = input
    switch input.byte() % 4 {
    case 0:
        let bytes = input.rest()
        if let info = try? QuickShareEndpointInfo(decoding: bytes) {
            let again = try? QuickShareEndpointInfo(decoding: info.bytes)
            fuzzCheck(again == info, "endpoint info did not round-trip")
        }
    case 1:
        let bytes = input.rest()
        if let beacon = try? QuickShareFastInitBeacon(decoding: bytes) {
            fuzzCheck(beacon.bytes == bytes, "beacon did not round-trip")
        }
    case 2:
        let bytes = input.rest()
        if let frame = try? QuickShareFrame(decoding: bytes) {
            let again = try? QuickShareFrame(decoding: frame.bytes)
            if case .introduction = frame {
                fuzzCheck(again != nil, "introduction did not decode again")
            } else {
                fuzzCheck(again == frame, "frame did not round-trip")
            }
            if case .introduction(let introduction) = frame {
                var limits = QuickShareLimits()
                limits.maxAttachments = 64
                if case .success(let offer) = QuickShareOfferValidator.validate(introduction, limits: limits) {
                    fuzzCheck(offer.payloadIDs.count <= 64, "validated offer over the attachment limit")
                    fuzzCheck(Set(offer.payloadIDs).count == offer.payloadIDs.count, "duplicate payload IDs accepted")
                    for file in offer.files {
                        fuzzCheck(QuickShareOfferValidator.nameProblem(file.name) == nil, "unsafe file name accepted")
                        fuzzCheck(file.size >= 0, "negative size accepted")
                    }
                }
            }
        }
    default:
        let isReceiver = input.byte() % 2 == 0
        var introduction = ProtoSharingIntroduction()
        var file = ProtoSharingFileMetadata()
        file.name = "a.bin"
        file.size = 3
        file.payloadID = 11
        file.id = 1
        introduction.files = [file]
        var machine = QuickShareSessionMachine(
            role: isReceiver ? .receiver(limits: QuickShareLimits()) : .sender(introduction: introduction, payloadOrder: [11]),
            pairedKeyEncryption: .pairedKeyEncryption(signedData: [1], secretIDHash: [2]))
        var finishes = 0
        func count(_ actions: [QuickShareSessionMachine.Action]) {
            finishes += actions.filter { if case .finish = $0 { true } else { false } }.count
        }
        count(machine.connected())
        while !input.isAtEnd {
            switch input.byte() % 8 {
            case 0, 1, 2: count(machine.receivedBytes(payloadID: Int64(input.byte()), input.chunk16(), freeSpace: 1 << 30))
            case 3: count(machine.fileStarted(payloadID: Int64(input.byte()), totalSize: Int64(input.byte()) - 1))
            case 4: count(machine.payloadFinished(payloadID: Int64(input.byte()), success: input.byte() % 2 == 0))
            case 5: count(machine.decide(accept: input.byte() % 2 == 0))
            case 6:
                let deadlines: [QuickShareSessionMachine.Deadline] = [
                    .pairedKey, .introduction, .decision, .response, .receiverDisconnect,
                ]
                count(machine.deadlinePassed(deadlines[Int(input.byte()) % deadlines.count]))
            default: count(input.byte() % 2 == 0 ? machine.cancel() : machine.disconnected())
            }
            fuzzCheck(finishes <= 1, "a session finished twice")
        }
    }
}
