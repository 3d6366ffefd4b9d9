import NearbyWire

/// Where the HCI controller is: the value of the CLI's `--hci` option.
public enum HCITransportSpec: Sendable, Hashable, CustomStringConvertible {
    /// H4 over a TCP connection (a virtual controller such as Bumble's): `tcp:HOST:PORT`.
    case tcp(host: String, port: Int)
    /// H4 over a serial UART in raw mode: `uart:/dev/ttyX[@BAUD]` (default 115200 baud).
    case uart(path: String, baudRate: Int)
    /// The Linux HCI user channel of adapter N: `hci:N`.
    case hciUserChannel(index: Int)

    /// Parses a transport string.
    /// - Throws: `NearbyError` `.invalidArgument` naming what is wrong.
    public init(parsing text: String) throws {
        func bad(_ why: String) -> NearbyError {
            NearbyError(.invalidArgument, "HCI transport '\(text)': \(why); use tcp:HOST:PORT, uart:/dev/ttyX[@BAUD] or hci:N")
        }
        guard let colon = text.firstIndex(of: ":") else { throw bad("no scheme") }
        let scheme = text[..<colon]
        let rest = String(text[text.index(after: colon)...])
        switch scheme {
        case "tcp":
            guard let last = rest.lastIndex(of: ":") else { throw bad("missing port") }
            var host = String(rest[..<last])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { throw bad("missing host") }
            guard let port = Int(rest[rest.index(after: last)...]), (1...65535).contains(port) else {
                throw bad("port must be 1…65535")
            }
            self = .tcp(host: host, port: port)
        case "uart":
            var path = rest
            var baud = 115_200
            if let at = rest.lastIndex(of: "@") {
                guard let value = Int(rest[rest.index(after: at)...]), value > 0 else { throw bad("bad baud rate") }
                baud = value
                path = String(rest[..<at])
            }
            guard path.hasPrefix("/") else { throw bad("the device must be an absolute path") }
            self = .uart(path: path, baudRate: baud)
        case "hci":
            guard let index = Int(rest), index >= 0, index < 0xFFFF else { throw bad("adapter index must be a number") }
            self = .hciUserChannel(index: index)
        default:
            throw bad("unknown scheme '\(scheme)'")
        }
    }

    /// The transport string (`tcp:HOST:PORT`, `uart:PATH@BAUD`, `hci:N`).
    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case .uart(let path, let baud): "uart:\(path)@\(baud)"
        case .hciUserChannel(let index): "hci:\(index)"
        }
    }
}
