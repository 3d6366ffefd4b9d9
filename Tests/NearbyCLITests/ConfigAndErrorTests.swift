import ArgumentParser
import Foundation
import Testing

@testable import nearby

/// The config file's TOML subset, and errors turned into one line naming the path and the cause.
@Suite(.timeLimit(.minutes(1)))
struct ConfigFileTests {
    @Test("keys, sections, strings, numbers, booleans, arrays and comments")
    func parses() throws {
        let config = try CLIConfig.parse(
            """
            # defaults for every command
            service-id = "com.example.share"   # a comment after a value
            name = "kiosk # 1"
            medium = ["wifi-lan", "ble"]
            quiet = true
            min_free_space = 1_000_000

            [send]
            name = "laptop"
            """, path: "/tmp/config.toml")
        #expect(try config.string("service-id", command: "send") == "com.example.share")
        #expect(try config.string("name", command: "receive") == "kiosk # 1")
        #expect(try config.string("name", command: "send") == "laptop")
        #expect(try config.strings("medium", command: nil) == ["wifi-lan", "ble"])
        #expect(try config.bool("quiet", command: nil) == true)
        #expect(try config.integer("min-free-space", command: nil) == 1_000_000)
        #expect(try config.string("hci", command: nil) == nil)
    }

    @Test("mistakes are usage errors naming the file and the line", arguments: [
        ("servce-id = \"x\"", "/c.toml:1: unknown key servce-id"),
        ("name \"x\"", "/c.toml:1: expected key = value"),
        ("\n[sned]", "/c.toml:2: unknown section [sned]"),
        ("name = \"x", "/c.toml:1: a string is not closed"),
        ("name = x", "/c.toml:1: a value is"),
    ])
    func mistakes(text: String, message: String) {
        #expect {
            try CLIConfig.parse(text, path: "/c.toml")
        } throws: { error in
            ((error as? ValidationError)?.message ?? "").hasPrefix(message)
        }
    }

    @Test("the path: NEARBY_CONFIG, else XDG_CONFIG_HOME, else ~/.config")
    func path() {
        #expect(CLIConfig.defaultPath(environment: ["NEARBY_CONFIG": "/x.toml", "HOME": "/h"]) == "/x.toml")
        #expect(CLIConfig.defaultPath(environment: ["XDG_CONFIG_HOME": "/xdg", "HOME": "/h"]) == "/xdg/nearby/config.toml")
        #expect(CLIConfig.defaultPath(environment: ["HOME": "/h"]) == "/h/.config/nearby/config.toml")
    }

    @Test("a wrong type for a key says so")
    func wrongType() throws {
        let config = try CLIConfig.parse("quiet = \"yes\"", path: "/c.toml")
        #expect(throws: ValidationError.self) { try config.bool("quiet", command: nil) }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ErrorTextTests {
    @Test("Foundation file errors become 'path: strerror'")
    func cocoaErrors() {
        let missing = CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: "/no/such"])
        #expect(ErrorText.describe(missing) == "/no/such: No such file or directory")
        let denied = CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: "/root/x"])
        #expect(ErrorText.describe(denied) == "/root/x: Permission denied")
        let full = CocoaError(.fileWriteOutOfSpace)
        #expect(ErrorText.describe(full, path: "/mnt/a") == "/mnt/a: No space left on device")
        let underlying = NSError(
            domain: NSCocoaErrorDomain, code: 256,
            userInfo: [NSFilePathErrorKey: "/d", NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(EISDIR))])
        #expect(ErrorText.describe(underlying) == "/d: Is a directory")
        let bare = NSError(domain: NSCocoaErrorDomain, code: 256)
        #expect(!ErrorText.describe(bare).contains("Error Domain"))
        #expect(!ErrorText.describe(bare).contains("(null)"))
    }

    @Test("a real failure to read a directory as a file names it")
    func readingADirectory() {
        do {
            _ = try Data(contentsOf: URL(fileURLWithPath: "/"))
            Issue.record("reading / as a file worked")
        } catch {
            let text = ErrorText.describe(error, path: "/")
            #expect(text.hasPrefix("/: "), "\(text)")
            #expect(!text.contains("Error Domain"), "\(text)")
        }
    }

    @Test("POSIX errors and our own")
    func posixAndOwn() {
        #expect(ErrorText.describe(POSIXError(.ENOSPC), path: "/x") == "/x: No space left on device")
        #expect(ErrorText.describe(CLIFailure("the receiver refused")) == "the receiver refused")
    }
}
