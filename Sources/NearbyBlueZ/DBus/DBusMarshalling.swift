import CDBus
import NearbyWire

/// Moves `DBusValue`s into and out of libdbus messages through `DBusMessageIter`.
///
/// libdbus aborts the process on a failed argument check (an invalid object path or signature), so everything is
/// validated here first and refused with a `NearbyError` instead.
enum DBusMarshalling {
    // The type codes (ASCII), as libdbus's DBUS_TYPE_* macros define them.
    static let typeByte = Int32(UInt8(ascii: "y"))
    static let typeBoolean = Int32(UInt8(ascii: "b"))
    static let typeInt16 = Int32(UInt8(ascii: "n"))
    static let typeUInt16 = Int32(UInt8(ascii: "q"))
    static let typeInt32 = Int32(UInt8(ascii: "i"))
    static let typeUInt32 = Int32(UInt8(ascii: "u"))
    static let typeInt64 = Int32(UInt8(ascii: "x"))
    static let typeUInt64 = Int32(UInt8(ascii: "t"))
    static let typeDouble = Int32(UInt8(ascii: "d"))
    static let typeString = Int32(UInt8(ascii: "s"))
    static let typeObjectPath = Int32(UInt8(ascii: "o"))
    static let typeSignature = Int32(UInt8(ascii: "g"))
    static let typeUnixFD = Int32(UInt8(ascii: "h"))
    static let typeArray = Int32(UInt8(ascii: "a"))
    static let typeVariant = Int32(UInt8(ascii: "v"))
    static let typeStruct = Int32(UInt8(ascii: "r"))
    static let typeDictEntry = Int32(UInt8(ascii: "e"))
    static let typeInvalid: Int32 = 0

    // MARK: Validation

    /// Throws unless `value` (recursively) can be appended without tripping a libdbus check.
    static func validate(_ value: DBusValue) throws {
        switch value {
        case .string(let s):
            guard !s.utf8.contains(0) else { throw invalid("a string contains NUL") }
        case .objectPath(let p):
            try validateObjectPath(p)
        case .signature(let s):
            guard dbus_signature_validate(s, nil) != 0 else { throw invalid("invalid signature \"\(s)\"") }
        case .variant(let inner):
            try validate(inner)
        case .array(let element, let items):
            guard dbus_signature_validate_single(element, nil) != 0, !element.hasPrefix("{") else {
                throw invalid("invalid array element signature \"\(element)\"")
            }
            for item in items {
                guard item.signature == element else {
                    throw invalid("array of \(element) holds a \(item.signature)")
                }
                try validate(item)
            }
        case .dictionary(let key, let valueSignature, let entries):
            guard dbus_signature_validate_single("a{\(key)\(valueSignature)}", nil) != 0 else {
                throw invalid("invalid dictionary signature a{\(key)\(valueSignature)}")
            }
            for entry in entries {
                guard entry.key.signature == key, entry.value.signature == valueSignature else {
                    throw invalid("dictionary a{\(key)\(valueSignature)} holds {\(entry.key.signature)\(entry.value.signature)}")
                }
                try validate(entry.key)
                try validate(entry.value)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw invalid("empty struct") }
            for field in fields { try validate(field) }
        default:
            break
        }
    }

    /// Throws unless `path` is a valid object path.
    static func validateObjectPath(_ path: String) throws {
        guard dbus_validate_path(path, nil) != 0 else { throw invalid("invalid object path \"\(path)\"") }
    }

    private static func invalid(_ message: String) -> NearbyError {
        NearbyError(.invalidArgument, "D-Bus: \(message)")
    }

    // MARK: Appending

    /// Appends `values` (validated first) to `message`.
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws {
        for value in values { try validate(value) }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values {
            guard append(value, to: &iter) else { throw NearbyError(.unknown, "D-Bus: out of memory while marshalling") }
        }
    }

    private static func appendBasic<T>(_ type: Int32, _ value: T, _ iter: inout DBusMessageIter) -> Bool {
        var copy = value
        return withUnsafePointer(to: &copy) { dbus_message_iter_append_basic(&iter, type, $0) != 0 }
    }

    private static func appendString(_ type: Int32, _ string: String, _ iter: inout DBusMessageIter) -> Bool {
        string.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            return withUnsafePointer(to: &pointer) { dbus_message_iter_append_basic(&iter, type, $0) != 0 }
        }
    }

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return appendBasic(typeByte, v, &iter)
        case .boolean(let v): return appendBasic(typeBoolean, dbus_bool_t(v ? 1 : 0), &iter)
        case .int16(let v): return appendBasic(typeInt16, v, &iter)
        case .uint16(let v): return appendBasic(typeUInt16, v, &iter)
        case .int32(let v): return appendBasic(typeInt32, v, &iter)
        case .uint32(let v): return appendBasic(typeUInt32, v, &iter)
        case .int64(let v): return appendBasic(typeInt64, v, &iter)
        case .uint64(let v): return appendBasic(typeUInt64, v, &iter)
        case .double(let v): return appendBasic(typeDouble, v, &iter)
        case .string(let v): return appendString(typeString, v, &iter)
        case .objectPath(let v): return appendString(typeObjectPath, v, &iter)
        case .signature(let v): return appendString(typeSignature, v, &iter)
        case .variant(let inner):
            return container(typeVariant, inner.signature, &iter) { sub in append(inner, to: &sub) }
        case .array(let element, let items):
            return container(typeArray, element, &iter) { sub in
                if element == "y", let bytes = value.bytes {
                    return bytes.withUnsafeBufferPointer { buffer in
                        var base = buffer.baseAddress
                        return withUnsafePointer(to: &base) {
                            dbus_message_iter_append_fixed_array(&sub, typeByte, $0, Int32(buffer.count)) != 0
                        }
                    }
                }
                return items.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let key, let valueSignature, let entries):
            return container(typeArray, "{\(key)\(valueSignature)}", &iter) { sub in
                entries.allSatisfy { entry in
                    container(typeDictEntry, nil, &sub) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return container(typeStruct, nil, &iter) { sub in fields.allSatisfy { append($0, to: &sub) } }
        }
    }

    private static func container(
        _ type: Int32, _ signature: String?, _ iter: inout DBusMessageIter, _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool
        if let signature {
            opened = dbus_message_iter_open_container(&iter, type, signature, &sub) != 0
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub) != 0
        }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    // MARK: Reading

    /// Every argument of `message`.
    static func arguments(of message: OpaquePointer) throws -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != typeInvalid {
            values.append(try read(&iter))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    private static func readBasic<T>(_ iter: inout DBusMessageIter, _ initial: T) -> T {
        var value = initial
        withUnsafeMutablePointer(to: &value) { dbus_message_iter_get_basic(&iter, $0) }
        return value
    }

    private static func readString(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        withUnsafeMutablePointer(to: &pointer) { dbus_message_iter_get_basic(&iter, $0) }
        return pointer.map { String(cString: $0) } ?? ""
    }

    private static func currentSignature(_ iter: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    private static func read(_ iter: inout DBusMessageIter) throws -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iter)
        switch type {
        case typeByte: return .byte(readBasic(&iter, UInt8(0)))
        case typeBoolean: return .boolean(readBasic(&iter, dbus_bool_t(0)) != 0)
        case typeInt16: return .int16(readBasic(&iter, Int16(0)))
        case typeUInt16: return .uint16(readBasic(&iter, UInt16(0)))
        case typeInt32: return .int32(readBasic(&iter, Int32(0)))
        case typeUInt32: return .uint32(readBasic(&iter, UInt32(0)))
        case typeInt64: return .int64(readBasic(&iter, Int64(0)))
        case typeUInt64: return .uint64(readBasic(&iter, UInt64(0)))
        case typeDouble: return .double(readBasic(&iter, Double(0)))
        case typeString: return .string(readString(&iter))
        case typeObjectPath: return .objectPath(readString(&iter))
        case typeSignature: return .signature(readString(&iter))
        case typeVariant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(try read(&sub))
        case typeStruct, typeDictEntry:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            var fields: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != typeInvalid {
                fields.append(try read(&sub))
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case typeArray:
            return try readArray(&iter)
        default:
            throw NearbyError(.malformedMessage, "D-Bus: unsupported type code \(type) in a message")
        }
    }

    private static func readArray(_ iter: inout DBusMessageIter) throws -> DBusValue {
        let element = String(currentSignature(&iter).dropFirst())
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        if element == "y" {
            var base: UnsafeMutableRawPointer? = nil
            var count: Int32 = 0
            withUnsafeMutablePointer(to: &base) { dbus_message_iter_get_fixed_array(&sub, $0, &count) }
            guard let base, count > 0 else { return .bytes([]) }
            return .bytes(Array(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: Int(count))))
        }
        if element.hasPrefix("{") {
            let inner = element.dropFirst().dropLast()
            var entries: [DBusDictionaryEntry] = []
            while dbus_message_iter_get_arg_type(&sub) == typeDictEntry {
                guard case .structure(let pair) = try read(&sub), pair.count == 2 else {
                    throw NearbyError(.malformedMessage, "D-Bus: a dictionary entry without key and value")
                }
                entries.append(DBusDictionaryEntry(key: pair[0], value: pair[1]))
                dbus_message_iter_next(&sub)
            }
            let keySignature = String(inner.prefix(1))
            return .dictionary(keySignature: keySignature, valueSignature: String(inner.dropFirst()), entries)
        }
        var items: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&sub) != typeInvalid {
            items.append(try read(&sub))
            dbus_message_iter_next(&sub)
        }
        return .array(elementSignature: element, items)
    }
}
