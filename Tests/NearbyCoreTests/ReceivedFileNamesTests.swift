import NearbyCore
import Testing

struct ReceivedFileNamesTests {
    @Test("File names lose separators, colons and NUL", arguments: [
        ("photo.jpg", "photo.jpg"), ("../../etc/passwd", ".._.._etc_passwd"), ("a\\b", "a_b"), ("c:x", "c_x"),
        ("nul\u{0}x", "nul_x"), ("", "file"), (".", "file"), ("..", "file"),
    ])
    func fileNames(input: String, expected: String) {
        #expect(ReceivedFileNames.sanitizeFileName(input) == expected)
    }

    @Test("Parent folders keep only safe components")
    func parentFolders() {
        #expect(ReceivedFileNames.sanitizeParentFolder("trip/day 1") == ["trip", "day 1"])
        #expect(ReceivedFileNames.sanitizeParentFolder("../../x/./y//z") == ["x", "y", "z"])
        #expect(ReceivedFileNames.sanitizeParentFolder("/abs\\win:c") == ["abs", "win_c"])
        #expect(ReceivedFileNames.sanitizeParentFolder("") == [])
        #expect(ReceivedFileNames.displayName(fileName: "a/b.txt", parentFolder: "../f") == "f/a_b.txt")
    }
}
