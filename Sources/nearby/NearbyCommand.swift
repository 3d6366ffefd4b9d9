import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The `nearby` command-line tool: advertise, discover and send over Nearby Connections;
/// publish and subscribe to Nearby Messages; scan beacons.
@main
struct NearbyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nearby",
        abstract: "Find nearby devices and exchange data with them over Google's Nearby Connections protocol.",
        discussion: """
            Quick start: `nearby receive` on one machine, `nearby send FILE…` on another (same network). \
            Options can have defaults in ~/.config/nearby/config.toml; `nearby doctor` explains why a device is \
            not seen. Exit status: 0 success, 1 runtime failure (one line on stderr), 2 usage error.
            """,
        version: NearbyVersion.text,
        subcommands: [
            SendCommand.self, ReceiveCommand.self, AdvertiseCommand.self, DiscoverCommand.self, PublishCommand.self,
            SubscribeCommand.self, BeaconsCommand.self, ServiceCommand.self, QuickShareCommand.self, DoctorCommand.self,
        ])

    /// Runs the tool with the contract's exit codes: 0 success, 2 usage error, 1 runtime failure.
    static func main() async {
        // A reader of our output that goes away (`nearby receive --stream-to - | head`) must not kill a transfer
        // half way: writes to it fail instead.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Foundation.exit(0)
        } catch {
            Foundation.exit(report(error))
        }
    }

    /// Prints `error` the way its kind asks for and returns the exit status: help and `--version` go to stdout
    /// (0), usage errors to stderr with the usage (2), everything else as one `nearby: …` line on stderr (1).
    static func report(_ error: any Error) -> Int32 {
        if error is CLIFailure {
            EventOutput.warn(ErrorText.describe(error))
            return 1
        }
        let code = exitCode(for: error)
        if code == .success {
            print(fullMessage(for: error))
            return 0
        }
        if code == .validationFailure {
            Terminal.write("\(fullMessage(for: error))\n", to: STDERR_FILENO)
            return 2
        }
        if let exit = error as? ExitCode {
            return exit.rawValue
        }
        EventOutput.warn(ErrorText.describe(error))
        return 1
    }
}

/// A runtime failure: printed as one line on stderr, exit code 1.
struct CLIFailure: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
