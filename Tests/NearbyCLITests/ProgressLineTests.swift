import Foundation
import Testing

@testable import nearby

/// Progress lines fit the terminal whatever the width and the name, and say what people look for.
@Suite(.timeLimit(.minutes(1)))
struct ProgressLineTests {
    static let names = [
        "photo.jpg", "a-very-long-file-name-that-goes-on-and-on-for-quite-a-while-2024-holiday-pictures.tar.gz",
        "写真とビデオのアーカイブ二〇二四年.zip", "👩‍👩‍👧 family 🎉🎉🎉 party.mov", "e\u{301}te\u{301}.txt", "x",
    ]

    @Test("every width from 10 to 200 columns: the line never reaches the last column")
    func fitsEveryWidth() {
        for name in Self.names {
            for total: Int64 in [5_000_000, 200_000_000, -1] {
                let line = TransferLine(name: name, bytes: 84_000_000 % max(total, 84_000_001), total: total, bytesPerSecond: 95.3e6)
                for width in 10...200 {
                    let rendered = line.render(width: width)
                    #expect(DisplayWidth.of(rendered) <= width - 1, "\(width): \(rendered)")
                    #expect(!rendered.contains("\n") && !rendered.contains("\r"))
                }
            }
        }
    }

    @Test("an 80-column line has the name, a bar, the bytes, the speed and the ETA")
    func eightyColumns() {
        let line = TransferLine(name: "photo.jpg", bytes: 84_000_000, total: 200_000_000, bytesPerSecond: 95.3e6)
        let rendered = line.render(width: 80)
        #expect(rendered.hasPrefix("photo.jpg  ["))
        #expect(rendered.contains("42%"))
        #expect(rendered.contains("84.0/200.0 MB"))
        #expect(rendered.contains("95.3 MB/s"))
        #expect(rendered.contains("ETA 0:02"))
        #expect(DisplayWidth.of(rendered) <= 79)
    }

    @Test("a long name is shortened in the middle, keeping its extension")
    func longNameMiddle() {
        let line = TransferLine(name: Self.names[1], bytes: 1, total: 10_000_000, bytesPerSecond: nil)
        let rendered = line.render(width: 60)
        #expect(rendered.hasPrefix("a-very-lo"))
        #expect(rendered.contains("…"))
        #expect(rendered.contains(".tar.gz  ["))
    }

    @Test("narrow terminals drop the ETA, then the bytes, then the bar, keeping the percentage")
    func narrowDropsFields() {
        let line = TransferLine(name: "photo.jpg", bytes: 50_000_000, total: 100_000_000, bytesPerSecond: 1e6)
        #expect(!line.render(width: 50).contains("ETA"))
        #expect(line.render(width: 30).contains("["))
        #expect(line.render(width: 22) == "photo.jpg  50%")
    }

    @Test("a stream shows its bytes and speed, no bar")
    func stream() {
        let rendered = TransferLine(name: "stream", bytes: 3_000_000, total: -1, bytesPerSecond: 2e6).render(width: 80)
        #expect(rendered == "stream  3.0 MB  2.0 MB/s")
    }

    @Test("wide characters count two columns, combining marks none")
    func widths() {
        #expect(DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of("写真") == 4)
        #expect(DisplayWidth.of("e\u{301}") == 1)
        #expect(DisplayWidth.of("🎉") == 2)
        #expect(DisplayWidth.truncatingMiddle("写真とビデオ.zip", to: 9).count <= 9)
        #expect(DisplayWidth.of(DisplayWidth.truncatingMiddle("写真とビデオ.zip", to: 9)) <= 9)
    }

    @Test("sizes, rates and clocks read as people expect")
    func quantities() {
        #expect(Quantities.size(512) == "512 B")
        #expect(Quantities.size(200_000_000) == "200.0 MB")
        #expect(Quantities.sizePair(84_000_000, of: 200_000_000) == "84.0/200.0 MB")
        #expect(Quantities.rate(95_300_000) == "95.3 MB/s")
        #expect(Quantities.clock(7) == "0:07")
        #expect(Quantities.clock(3723) == "1:02:03")
        #expect(EventOutput.summary(size: 200_000_000, seconds: 2) == "200.0 MB in 2.0 s (100.0 MB/s)")
    }
}

/// The board of progress lines: one line per transfer, redrawn in place, thinned out, and ordinary lines printed
/// above it.
@Suite(.timeLimit(.minutes(1)))
struct ProgressBoardTests {
    @Test("two transfers get two lines; a redraw moves up over exactly the lines drawn")
    func twoTransfers() throws {
        var board = ProgressBoard()
        let firstText = board.update(1, name: "a.bin", bytes: 0, total: 10_000_000, now: 0, width: 80)
        let first = try #require(firstText)
        #expect(first.components(separatedBy: "\n").count == 2)  // one line and the final newline
        #expect(!first.contains("\u{1B}["))  // nothing drawn before: no cursor movement
        let secondText = board.update(2, name: "b.bin", bytes: 0, total: 10_000_000, now: 0.01, width: 80)
        let second = try #require(secondText)
        #expect(second.hasPrefix("\r\u{1B}[1A\u{1B}[J"))
        #expect(second.contains("a.bin") && second.contains("b.bin"))
        // Progress within the redraw interval is held back; after it, both lines are drawn again.
        #expect(board.update(1, name: "a.bin", bytes: 1_000_000, total: 10_000_000, now: 0.05, width: 80) == nil)
        let thirdText = board.update(1, name: "a.bin", bytes: 2_000_000, total: 10_000_000, now: 0.5, width: 80)
        let third = try #require(thirdText)
        #expect(third.hasPrefix("\r\u{1B}[2A\u{1B}[J"))
        #expect(third.contains("20%"))
        #expect(third.contains("4.0 MB/s"))  // 2 MB in 0.5 s
    }

    @Test("a line printed above takes the board down and puts it back; a finished transfer's line goes")
    func printAboveAndRemove() throws {
        var board = ProgressBoard()
        _ = board.update(1, name: "a.bin", bytes: 0, total: 10_000_000, now: 0, width: 80)
        let text = board.printAbove("connected\n", now: 0.2, width: 80)
        #expect(text.hasPrefix("\r\u{1B}[1A\u{1B}[Jconnected\n"))
        #expect(text.hasSuffix("\n") && text.contains("a.bin"))
        let removed = board.remove(1, now: 0.3, width: 80)
        #expect(removed == "\r\u{1B}[1A\u{1B}[J")
        #expect(board.isEmpty)
        #expect(board.printAbove("done\n", now: 0.4, width: 80) == "done\n")
    }
}

/// The writer of events: JSON lines, payload IDs as strings, no progress when not on a terminal.
@Suite(.timeLimit(.minutes(1)))
struct EventOutputTests {
    @Test("payload IDs above 2^53 are JSON strings, exact")
    func payloadIDsAreStrings() throws {
        let id: Int64 = 4_355_536_897_274_147_103
        let line = EventOutput.encode(
            event: "payload_sent", PayloadSentEvent(payloadID: String(id), type: "bytes", size: 5, sha256: "ab", endpointID: "WXYZ"))
        #expect(line.contains("\"payload_id\":\"4355536897274147103\""))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["payload_id"] as? String == "4355536897274147103")
    }

    @Test("BYTES content: text when UTF-8, hex otherwise, cut at the limit on a character boundary")
    func bytesContent() {
        let text = BytesContent(Data("héllo".utf8))
        #expect(text.text == "héllo" && text.hex == nil && text.truncated == nil)
        let binary = BytesContent(Data([0xFF, 0x00, 0x41]))
        #expect(binary.text == nil && binary.hex == "ff0041" && binary.truncated == nil)
        let long = Data(String(repeating: "é", count: BytesContent.jsonLimit).utf8)  // 2 bytes each
        let cut = BytesContent(long)
        #expect(cut.truncated == true)
        #expect(cut.text?.utf8.count == BytesContent.jsonLimit)
        let odd = Data(("a" + String(repeating: "é", count: BytesContent.jsonLimit)).utf8)
        #expect(BytesContent(odd).text?.utf8.count == BytesContent.jsonLimit - 1)
    }
}
