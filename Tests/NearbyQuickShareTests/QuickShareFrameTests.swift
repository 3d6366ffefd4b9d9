import Foundation
import NearbyTestSupport
import NearbyWire
import SwiftProtobuf
import Testing

@testable import NearbyQuickShare

/// The Quick Share frames to the byte (field numbers and types of Google's `sharing/proto/wire_format.proto`), and
/// the receiver's checks on introductions: hostile counts, names, sizes and IDs are refused with a status.
@Suite("Quick Share frames and introductions", .timeLimit(.minutes(1)))
struct QuickShareFrameTests {
    @Test func framesEncodeToTheWireFormat() {
        // Frame{version=1 (08 01), v1 (12 len){type (08 t), body (field type+1)}}.
        #expect(QuickShareFrame.cancel.bytes == [0x08, 0x01, 0x12, 0x02, 0x08, 0x06])
        #expect(QuickShareFrame.pairedKeyResult(.unable).bytes == [0x08, 0x01, 0x12, 0x06, 0x08, 0x04, 0x2A, 0x02, 0x08, 0x03])
        #expect(QuickShareFrame.response(.accept).bytes == [0x08, 0x01, 0x12, 0x06, 0x08, 0x02, 0x1A, 0x02, 0x08, 0x01])
        #expect(QuickShareFrame.response(.notEnoughSpace).bytes.suffix(2) == [0x08, 0x03])
        #expect(QuickShareFrame.pairedKeyEncryption(signedData: [0xAA], secretIDHash: [0xBB, 0xCC]).bytes
            == [0x08, 0x01, 0x12, 0x0B, 0x08, 0x03, 0x22, 0x07, 0x0A, 0x01, 0xAA, 0x12, 0x02, 0xBB, 0xCC])
    }

    @Test func fileMetadataFieldsAreTheWireNumbers() throws {
        var file = ProtoSharingFileMetadata()
        file.name = "a"
        file.kind = .image
        file.payloadID = 5
        file.size = 3
        file.mimeType = "image/png"
        file.id = 7
        file.parentFolder = "p"
        let bytes: [UInt8] = try file.serializedBytes()
        #expect(bytes == [0x0A, 0x01, 0x61, 0x10, 0x01, 0x18, 0x05, 0x20, 0x03, 0x2A, 0x09] + Array("image/png".utf8)
            + [0x30, 0x07, 0x3A, 0x01, 0x70])
        var text = ProtoSharingTextMetadata()
        text.title = "t"
        text.kind = .url
        text.payloadID = 9
        text.size = 4
        text.id = 2
        #expect(try text.serializedBytes() == [0x12, 0x01, 0x74, 0x18, 0x02, 0x20, 0x09, 0x28, 0x04, 0x30, 0x02] as [UInt8])
        var introduction = ProtoSharingIntroduction()
        introduction.useCase = .nearbyShare
        introduction.startTransfer = true
        #expect(try introduction.serializedBytes() == [0x30, 0x01, 0x40, 0x01] as [UInt8])
        var network = ProtoSharingWifiNetworkMetadata()
        network.ssid = "w"
        network.security = .wpaPsk
        network.payloadID = 1
        network.id = 2
        #expect(try network.serializedBytes() == [0x12, 0x01, 0x77, 0x18, 0x02, 0x20, 0x01, 0x28, 0x02] as [UInt8])
        var password = ProtoSharingWifiPassword()
        password.password = "pw"
        password.hiddenSsid = true
        #expect(try password.serializedBytes() == [0x0A, 0x02, 0x70, 0x77, 0x10, 0x01] as [UInt8])
        #expect(ProtoSharingFileMetadata().mimeType == "application/octet-stream")
    }

    @Test func framesRoundTripAndUnknownTypesAreIgnored() throws {
        var introduction = ProtoSharingIntroduction()
        introduction.files = [file(payloadID: 1, name: "x")]
        for frame: QuickShareFrame in [
            .cancel, .response(.reject), .pairedKeyResult(.fail), .introduction(introduction),
            .pairedKeyEncryption(signedData: [1, 2], secretIDHash: [3]),
        ] {
            #expect(try QuickShareFrame(decoding: frame.bytes) == frame)
        }
        // PROGRESS_UPDATE (7) with a float body in field 7, and a type from a later version: ignored.
        #expect(try QuickShareFrame(decoding: [0x08, 0x01, 0x12, 0x09, 0x08, 0x07, 0x3A, 0x05, 0x0D, 0x00, 0x00, 0x80, 0x3F]) == .ignored(type: 7))
        #expect(try QuickShareFrame(decoding: [0x08, 0x01, 0x12, 0x02, 0x08, 0x09]) == .ignored(type: 9))
    }

    @Test func malformedFramesAreRefused() {
        let cases: [[UInt8]] = [
            [0xFF, 0xFF],  // not a protobuf
            [0x08, 0x02, 0x12, 0x02, 0x08, 0x06],  // version 2
            [0x08, 0x01],  // no v1
            [0x08, 0x01, 0x12, 0x00],  // no type
            [0x08, 0x01, 0x12, 0x02, 0x08, 0x00],  // type 0
            [0x08, 0x01, 0x12, 0x02, 0x08, 0x01],  // INTRODUCTION without a body
            [0x08, 0x01, 0x12, 0x02, 0x08, 0x02],  // RESPONSE without a status
            [0x08, 0x01, 0x12, 0x02, 0x08, 0x03],  // PAIRED_KEY_ENCRYPTION without a body
        ]
        for bytes in cases {
            expectNearbyError(.invalidFrame) { try QuickShareFrame(decoding: bytes) }
        }
        expectNearbyError(.invalidFrame) { try QuickShareFrame(decoding: [UInt8](repeating: 0, count: 1_047_553)) }
    }

    // MARK: Introductions

    @Test func aGoodIntroductionBecomesAnOffer() throws {
        var introduction = ProtoSharingIntroduction()
        introduction.files = [file(payloadID: 10, name: "photo.jpg", size: 0), file(payloadID: 11, name: "b", size: 5, folder: "Pictures/Trip")]
        var text = ProtoSharingTextMetadata()
        text.title = "hello"
        text.kind = .text
        text.size = 5
        text.payloadID = 12
        text.id = 3
        introduction.texts = [text]
        let offer = try QuickShareOfferValidator.validate(introduction, limits: QuickShareLimits()).get()
        #expect(offer.files.map(\.name) == ["photo.jpg", "b"])
        #expect(offer.files[1].parentFolder == "Pictures/Trip")
        #expect(offer.totalFileBytes == 5)
        #expect(offer.payloadIDs == [10, 11, 12])
    }

    @Test func tenThousandFilesAreRefused() {
        var introduction = ProtoSharingIntroduction()
        introduction.files = (1...10_000).map { file(payloadID: Int64($0), name: "f\($0)") }
        let bytes = QuickShareFrame.introduction(introduction).bytes
        #expect(bytes.count < QuickShareFrame.maxEncodedLength, "fits in one BYTES payload")
        guard case .introduction(let decoded) = try? QuickShareFrame(decoding: bytes) else {
            Issue.record("did not decode")
            return
        }
        expectRefusal(decoded, .unsupportedAttachmentType, containing: "10000 attachments")
    }

    @Test func hostileNamesAreRefused() {
        for name in ["../../etc/passwd", "a/b", "a\\b", "", ".", "..", "nul\u{0}x", "bell\u{7}", "e\u{202E}gnp.exe",
            String(repeating: "x", count: 256)]
        {
            var introduction = ProtoSharingIntroduction()
            introduction.files = [file(payloadID: 1, name: name)]
            expectRefusal(introduction, .unsupportedAttachmentType, containing: "file name")
        }
        for folder in ["../up", "a/../../b", "a\\b", "c\u{1}d", Array(repeating: "d", count: 40).joined(separator: "/")] {
            var introduction = ProtoSharingIntroduction()
            introduction.files = [file(payloadID: 1, name: "ok", folder: folder)]
            expectRefusal(introduction, .unsupportedAttachmentType, containing: "parent folder")
        }
    }

    @Test func impossibleSizesAndIDsAreRefused() {
        for size: Int64 in [-1, 1 << 62, Int64.min] {
            var introduction = ProtoSharingIntroduction()
            introduction.files = [file(payloadID: 1, name: "a", size: size)]
            expectRefusal(introduction, .unsupportedAttachmentType, containing: "size")
        }
        var limits = QuickShareLimits()
        limits.maxFileSize = .max
        var overflow = ProtoSharingIntroduction()
        overflow.files = [file(payloadID: 1, name: "a", size: .max), file(payloadID: 2, name: "b", size: .max)]
        expectRefusal(overflow, .notEnoughSpace, containing: "2^63", limits: limits)
        var duplicate = ProtoSharingIntroduction()
        duplicate.files = [file(payloadID: 4, name: "a"), file(payloadID: 4, name: "b")]
        expectRefusal(duplicate, .unsupportedAttachmentType, containing: "twice")
        var zero = ProtoSharingIntroduction()
        zero.files = [file(payloadID: 0, name: "a")]
        expectRefusal(zero, .unsupportedAttachmentType, containing: "payload ID 0")
        var emptyText = ProtoSharingIntroduction()
        var text = ProtoSharingTextMetadata()
        text.payloadID = 5
        emptyText.texts = [text]
        expectRefusal(emptyText, .unsupportedAttachmentType, containing: "text size")
        expectRefusal(ProtoSharingIntroduction(), .unsupportedAttachmentType, containing: "nothing")
        var apps = ProtoSharingIntroduction()
        apps.apps = [ProtoSharingAppMetadata()]
        expectRefusal(apps, .unsupportedAttachmentType, containing: "apps")
    }

    func file(payloadID: Int64, name: String, size: Int64 = 1, folder: String = "") -> ProtoSharingFileMetadata {
        var file = ProtoSharingFileMetadata()
        file.name = name
        file.size = size
        file.payloadID = payloadID
        file.id = payloadID + 1000
        file.parentFolder = folder
        return file
    }

    func expectRefusal(
        _ introduction: ProtoSharingIntroduction, _ status: ProtoSharingResponse.Status, containing text: String,
        limits: QuickShareLimits = QuickShareLimits(), sourceLocation: SourceLocation = #_sourceLocation
    ) {
        switch QuickShareOfferValidator.validate(introduction, limits: limits) {
        case .success(let offer):
            Issue.record("accepted \(offer)", sourceLocation: sourceLocation)
        case .failure(let refusal):
            #expect(refusal.status == status, "\(refusal)", sourceLocation: sourceLocation)
            #expect(refusal.reason.contains(text), "\(refusal.reason)", sourceLocation: sourceLocation)
        }
    }
}
