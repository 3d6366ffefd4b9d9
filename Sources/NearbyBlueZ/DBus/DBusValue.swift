/// One typed D-Bus value, as marshalled by libdbus: the basic types, variants, arrays, dictionaries and structs.
///
/// Arrays and dictionaries carry their element signature so that empty ones marshal correctly. Build the shapes
/// BlueZ uses with the helpers (`bytes(_:)`, `strings(_:)`, `properties(_:)`) and read them back with the typed
/// accessors (`bytes`, `propertyMap`, `managedObjects`); unix file descriptors (`h`) are not supported.
package indirect enum DBusValue: Sendable, Hashable, CustomStringConvertible {
    /// `y`
    case byte(UInt8)
    /// `b`
    case boolean(Bool)
    /// `n`
    case int16(Int16)
    /// `q`
    case uint16(UInt16)
    /// `i`
    case int32(Int32)
    /// `u`
    case uint32(UInt32)
    /// `x`
    case int64(Int64)
    /// `t`
    case uint64(UInt64)
    /// `d`
    case double(Double)
    /// `s`
    case string(String)
    /// `o`
    case objectPath(String)
    /// `g`
    case signature(String)
    /// `v`
    case variant(DBusValue)
    /// `a<element>` other than dictionaries.
    case array(elementSignature: String, [DBusValue])
    /// `a{<key><value>}`
    case dictionary(keySignature: String, valueSignature: String, [DBusDictionaryEntry])
    /// `(...)`
    case structure([DBusValue])

    /// The value's D-Bus type signature (one complete type).
    package var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .variant: "v"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// A short rendering for logs.
    package var description: String {
        switch self {
        case .byte(let v): "\(v)"
        case .boolean(let v): "\(v)"
        case .int16(let v): "\(v)"
        case .uint16(let v): "\(v)"
        case .int32(let v): "\(v)"
        case .uint32(let v): "\(v)"
        case .int64(let v): "\(v)"
        case .uint64(let v): "\(v)"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .objectPath(let v): v
        case .signature(let v): "sig:\(v)"
        case .variant(let v): "<\(v)>"
        case .array("y", _): "[" + (bytes ?? []).map { String($0, radix: 16) }.joined(separator: " ") + "]"
        case .array(_, let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(_, _, let entries):
            "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .structure(let fields): "(" + fields.map(\.description).joined(separator: ", ") + ")"
        }
    }
}

/// One key/value pair of a D-Bus dictionary (`{kv}`).
package struct DBusDictionaryEntry: Sendable, Hashable {
    /// The key (a basic type).
    package var key: DBusValue
    /// The value.
    package var value: DBusValue

    /// Creates an entry.
    package init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

// MARK: - Building the shapes BlueZ uses

extension DBusValue {
    /// `ay` from bytes.
    package static func bytes(_ bytes: [UInt8]) -> DBusValue {
        .array(elementSignature: "y", bytes.map { .byte($0) })
    }

    /// `as` from strings.
    package static func strings(_ strings: [String]) -> DBusValue {
        .array(elementSignature: "s", strings.map { .string($0) })
    }

    /// `ao` from object paths.
    package static func objectPaths(_ paths: [String]) -> DBusValue {
        .array(elementSignature: "o", paths.map { .objectPath($0) })
    }

    /// `a{sv}` from a property map (keys sorted, so the encoding is deterministic); values are wrapped in variants.
    package static func properties(_ map: [String: DBusValue]) -> DBusValue {
        .dictionary(
            keySignature: "s", valueSignature: "v",
            map.sorted { $0.key < $1.key }.map { DBusDictionaryEntry(key: .string($0.key), value: .variant($0.value)) })
    }
}

extension DBusValue {
    /// `a{sa{sv}}` (interface → properties), as in InterfacesAdded.
    package static func interfaces(_ map: [String: [String: DBusValue]]) -> DBusValue {
        .dictionary(
            keySignature: "s", valueSignature: "a{sv}",
            map.sorted { $0.key < $1.key }.map { DBusDictionaryEntry(key: .string($0.key), value: .properties($0.value)) })
    }

    /// `a{oa{sa{sv}}}` (path → interface → properties), as GetManagedObjects returns it.
    package static func managedObjects(_ map: [String: [String: [String: DBusValue]]]) -> DBusValue {
        .dictionary(
            keySignature: "o", valueSignature: "a{sa{sv}}",
            map.sorted { $0.key < $1.key }.map { DBusDictionaryEntry(key: .objectPath($0.key), value: .interfaces($0.value)) })
    }
}

// MARK: - Reading typed values back

extension DBusValue {
    /// The value inside any number of variants.
    package var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// `s`, `o` or `g` as a string.
    package var string: String? {
        switch unwrapped {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    /// `b`.
    package var bool: Bool? {
        if case .boolean(let v) = unwrapped { return v }
        return nil
    }

    /// `y`.
    package var uint8: UInt8? {
        if case .byte(let v) = unwrapped { return v }
        return nil
    }

    /// `n`.
    package var int16: Int16? {
        if case .int16(let v) = unwrapped { return v }
        return nil
    }

    /// `q`.
    package var uint16: UInt16? {
        if case .uint16(let v) = unwrapped { return v }
        return nil
    }

    /// `u`.
    package var uint32: UInt32? {
        if case .uint32(let v) = unwrapped { return v }
        return nil
    }

    /// Any integer type widened to `Int`.
    package var integer: Int? {
        switch unwrapped {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): Int(exactly: v)
        default: nil
        }
    }

    /// `ay` as bytes.
    package var bytes: [UInt8]? {
        guard case .array("y", let items) = unwrapped else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard case .byte(let b) = item else { return nil }
            result.append(b)
        }
        return result
    }

    /// `as` / `ao` as strings.
    package var strings: [String]? {
        guard case .array(_, let items) = unwrapped else { return nil }
        var result: [String] = []
        for item in items {
            guard let s = item.string else { return nil }
            result.append(s)
        }
        return result
    }

    /// A dictionary with string-like keys (`a{sv}`, `a{s…}`, `a{o…}`); variant values are unwrapped.
    package var propertyMap: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value.unwrapped
        }
        return result
    }

    /// `a{oa{sa{sv}}}` (ObjectManager.GetManagedObjects and InterfacesAdded's second argument without the path):
    /// path → interface → property → value.
    package var managedObjects: [String: [String: [String: DBusValue]]]? {
        guard let objects = propertyMap else { return nil }
        var result: [String: [String: [String: DBusValue]]] = [:]
        for (path, interfaces) in objects {
            guard let interfaces = interfaces.interfaceMap else { return nil }
            result[path] = interfaces
        }
        return result
    }

    /// `a{sa{sv}}`: interface → property → value.
    package var interfaceMap: [String: [String: DBusValue]]? {
        guard let interfaces = propertyMap else { return nil }
        var result: [String: [String: DBusValue]] = [:]
        for (name, properties) in interfaces {
            guard let properties = properties.propertyMap else { return nil }
            result[name] = properties
        }
        return result
    }
}
