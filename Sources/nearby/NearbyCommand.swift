import ArgumentParser
import Foundation

/// The `nearby` command-line tool: advertise, discover and send over Nearby Connections;
/// publish and subscribe to Nearby Messages; scan beacons.
@main
struct NearbyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nearby",
        abstract: "Find nearby devices and exchange data with them over Google's Nearby Connections protocol.",
        subcommands: [
            AdvertiseCommand.self, DiscoverCommand.self, SendCommand.self, PublishCommand.self, SubscribeCommand.self,
            BeaconsCommand.self, ServiceCommand.self, QuickShareCommand.self,
        ])

    /// Runs the tool with the contract's exit codes: 0 success, 2 usage error, 1 runtime failure.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Foundation.exit(0)
        } catch let failure as CLIFailure {
            EventOutput.warn(failure.message)
            Foundation.exit(1)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            if code == .validationFailure {
                FileHandle.standardError.write(Data("\(fullMessage(for: error))\n".utf8))
                Foundation.exit(2)
            }
            EventOutput.warn(oneLine(error))
            Foundation.exit(1)
        }
    }

    static func oneLine(_ error: any Error) -> String {
        String(describing: error).replacingOccurrences(of: "\n", with: " ")
    }
}

/// A runtime failure: printed as one line on stderr, exit code 1.
struct CLIFailure: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
