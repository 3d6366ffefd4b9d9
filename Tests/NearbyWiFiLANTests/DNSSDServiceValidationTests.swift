import NearbyWiFiLAN
import NearbyWire
import Testing

/// The limits `DNSSDService.validate()` enforces before anything reaches a daemon.
struct DNSSDServiceValidationTests {
    private func code(_ service: DNSSDService) -> NearbyError.Code? {
        do {
            try service.validate()
            return nil
        } catch {
            return (error as? NearbyError)?.code
        }
    }

    @Test(.timeLimit(.minutes(5))) func acceptsANearbyService() throws {
        let service = DNSSDService(
            instanceName: "I0FCQ0T8n14AAA", serviceType: "_FC9F5ED42C8A._tcp", port: 1234,
            txt: ["n": [UInt8](repeating: 0x41, count: 175)]
        )
        try service.validate()
    }

    @Test(.timeLimit(.minutes(5))) func instanceNameIsOneTo63Bytes() {
        let type = "_FC9F5ED42C8A._tcp"
        #expect(code(DNSSDService(instanceName: "", serviceType: type, port: 1)) == .invalidArgument)
        #expect(code(DNSSDService(instanceName: String(repeating: "x", count: 63), serviceType: type, port: 1)) == nil)
        #expect(code(DNSSDService(instanceName: String(repeating: "x", count: 64), serviceType: type, port: 1)) == .invalidArgument)
        // 32 two-byte characters are 64 bytes.
        #expect(code(DNSSDService(instanceName: String(repeating: "é", count: 32), serviceType: type, port: 1)) == .invalidArgument)
        #expect(code(DNSSDService(instanceName: "a\u{0}b", serviceType: type, port: 1)) == .invalidArgument)
    }

    @Test(.timeLimit(.minutes(5)), arguments: ["", "_tcp", "FC9F._tcp", "_FC9F._sctp", "_FC9F._tcp.local", "_a b._tcp", "_._tcp"])
    func rejectsMalformedServiceTypes(_ type: String) {
        #expect(code(DNSSDService(instanceName: "x", serviceType: type, port: 1)) == .invalidArgument)
    }

    @Test(.timeLimit(.minutes(5))) func txtStringsAreAtMost255Bytes() {
        let type = "_FC9F5ED42C8A._tcp"
        // "n=" plus 253 bytes is 255 bytes.
        #expect(code(DNSSDService(instanceName: "x", serviceType: type, port: 1, txt: ["n": .init(repeating: 1, count: 253)])) == nil)
        #expect(code(DNSSDService(instanceName: "x", serviceType: type, port: 1, txt: ["n": .init(repeating: 1, count: 254)])) == .invalidArgument)
    }

    @Test(.timeLimit(.minutes(5))) func txtKeysArePrintableASCIIWithoutEquals() {
        let type = "_FC9F5ED42C8A._tcp"
        for key in ["", "a=b", "é", "tab\t"] {
            #expect(code(DNSSDService(instanceName: "x", serviceType: type, port: 1, txt: [key: []])) == .invalidArgument)
        }
    }

    @Test(.timeLimit(.minutes(5))) func txtRecordIsAtMost1300Bytes() {
        let type = "_FC9F5ED42C8A._tcp"
        // Six 251-byte values: 6 × (1 + 2 + 251) = 1524 bytes.
        var txt: [String: [UInt8]] = [:]
        for key in ["a", "b", "c", "d", "e", "f"] {
            txt[key] = .init(repeating: 1, count: 251)
        }
        #expect(code(DNSSDService(instanceName: "x", serviceType: type, port: 1, txt: txt)) == .invalidArgument)
        txt["f"] = nil
        txt["e"] = nil
        #expect(code(DNSSDService(instanceName: "x", serviceType: type, port: 1, txt: txt)) == nil)
    }
}
