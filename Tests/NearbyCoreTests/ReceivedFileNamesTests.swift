import NearbyCore
import Testing

struct ReceivedFileNamesTests {
    @Test("File names lose separators, colons and NUL", .timeLimit(.minutes(5)), arguments: [
        ("photo.jpg", "photo.jpg"), ("../../etc/passwd", ".._.._etc_passwd"), ("a\\b", "a_b"), ("c:x", "c_x"),
        ("nul\u{0}x", "nul_x"), ("", "file"), (".", "file"), ("..", "file"),
    ])
    func fileNames(input: String, expected: String) {
        #expect(ReceivedFileNames.sanitizeFileName(input) == expected)
    }

    @Test("Parent folders keep only safe components", .timeLimit(.minutes(5)))
    func parentFolders() {
        #expect(ReceivedFileNames.sanitizeParentFolder("trip/day 1") == ["trip", "day 1"])
        #expect(ReceivedFileNames.sanitizeParentFolder("../../x/./y//z") == ["x", "y", "z"])
        #expect(ReceivedFileNames.sanitizeParentFolder("/abs\\win:c") == ["abs", "win_c"])
        #expect(ReceivedFileNames.sanitizeParentFolder("") == [])
        #expect(ReceivedFileNames.displayName(fileName: "a/b.txt", parentFolder: "../f") == "f/a_b.txt")
    }

    /// Whether `name` is one safe path component: no separator scalar, no NUL or control, not only dots, ≤ 255 bytes.
    private func isSafeComponent(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && !name.unicodeScalars.allSatisfy { $0 == "." }
            && !name.unicodeScalars.contains { $0 == "/" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F }
    }

    @Test("Separators and controls inside a grapheme are still replaced (the name cannot climb up)", .timeLimit(.minutes(5)), arguments: [
        "../\u{301}x", "..\\\u{301}x", "a\u{0}\u{301}b", "/\u{301}", "x\n\u{301}y", "\u{1}\u{7F}\u{85}",
    ])
    func graphemesHidingSeparators(input: String) {
        let name = ReceivedFileNames.sanitizeFileName(input)
        #expect(isSafeComponent(name), "\(Array(name.unicodeScalars))")
        for component in ReceivedFileNames.sanitizeParentFolder(input) {
            #expect(isSafeComponent(component), "\(Array(component.unicodeScalars))")
        }
    }

    @Test("\"../\\u{301}x\" stays one component; \"..\\u{301}\" folders are not \"..\"", .timeLimit(.minutes(5)))
    func combiningAfterDots() {
        #expect(ReceivedFileNames.sanitizeFileName("../\u{301}x") == ".._\u{301}x")
        let folder = ReceivedFileNames.sanitizeParentFolder("../\u{301}/../../x")
        #expect(folder == ["\u{301}", "x"])
        #expect(!folder.contains { $0.unicodeScalars.allSatisfy { $0 == "." } })
    }

    @Test("Slash and backslash look-alikes become _", .timeLimit(.minutes(5)))
    func lookAlikes() {
        #expect(ReceivedFileNames.sanitizeFileName("a\u{FF0F}b\u{FF3C}c\u{2215}d\u{2044}e") == "a_b_c_d_e")
        #expect(ReceivedFileNames.sanitizeParentFolder("..\u{FF0F}..\u{2215}etc") == [".._.._etc"])
    }

    @Test("Over-long names are cut to 255 UTF-8 bytes at a scalar boundary", .timeLimit(.minutes(5)))
    func longNames() {
        // 300 Characters of 2 bytes each: a Character-based cut at 255 leaves 510 bytes.
        let accented = ReceivedFileNames.sanitizeFileName(String(repeating: "\u{E9}", count: 300))
        #expect(accented.utf8.count == 254 && accented.unicodeScalars.allSatisfy { $0 == "\u{E9}" })
        // 4-byte scalars: 63 fit (252 bytes).
        let emoji = ReceivedFileNames.sanitizeFileName(String(repeating: "\u{1F600}", count: 64))
        #expect(emoji.utf8.count == 252)
        // Decomposed letters: 255 Characters of 3 bytes; cut inside a grapheme but at a scalar.
        let decomposed = ReceivedFileNames.sanitizeFileName(String(repeating: "e\u{301}", count: 255))
        #expect(decomposed.utf8.count <= 255 && isSafeComponent(decomposed))
        let ascii = ReceivedFileNames.sanitizeFileName(String(repeating: "a", count: 255))
        #expect(ascii.utf8.count == 255)
        for component in ReceivedFileNames.sanitizeParentFolder(String(repeating: "\u{E9}", count: 300) + "/x") {
            #expect(component.utf8.count <= 255)
        }
    }

    @Test("Dot-only names become a safe name; our temporary-file prefix is defused", .timeLimit(.minutes(5)), arguments: [
        ("...", "file"), (". .", ". ."), (".hidden", ".hidden"), (".nearby-1-2.partial", "_nearby-1-2.partial"),
    ])
    func dots(input: String, expected: String) {
        #expect(ReceivedFileNames.sanitizeFileName(input) == expected)
    }

    @Test("Parent folders are bounded in depth and total length", .timeLimit(.minutes(5)))
    func folderBounds() {
        let deep = ReceivedFileNames.sanitizeParentFolder(Array(repeating: "d", count: 100).joined(separator: "/"))
        #expect(deep.count == ReceivedFileNames.maxFolderDepth)
        let long = ReceivedFileNames.sanitizeParentFolder(
            Array(repeating: String(repeating: "x", count: 250), count: 30).joined(separator: "/"))
        let bytes = long.reduce(0) { $0 + $1.utf8.count + 1 } + 255
        #expect(!long.isEmpty && bytes <= ReceivedFileNames.maxRelativePathBytes)
    }
}
