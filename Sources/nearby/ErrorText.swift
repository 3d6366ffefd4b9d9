import ArgumentParser
import Foundation
import NearbyWire

#if canImport(Glibc)
import Glibc
#endif

/// Turns any error into one line a person can act on: what failed, on which path, and why, in the words of
/// `strerror` (`cannot read /tmp/x: Permission denied`), never a `NSCocoaErrorDomain Code=256 "(null)"` dump.
enum ErrorText {
    /// One line for `error`; `path` names the file when the error does not.
    static func describe(_ error: any Error, path: String? = nil) -> String {
        switch error {
        case let failure as CLIFailure:
            return failure.message
        case let validation as ValidationError:
            return validation.message
        case let nearby as NearbyError:
            return nearby.message
        case let posix as POSIXError:
            return joined(path, reason(errno: posix.code.rawValue))
        default:
            break
        }
        let ns = error as NSError
        let filePath = path ?? (ns.userInfo[NSFilePathErrorKey] as? String) ?? (ns.userInfo[NSURLErrorKey] as? URL)?.path
        if ns.domain == NSPOSIXErrorDomain {
            return joined(filePath, reason(errno: Int32(ns.code)))
        }
        if ns.domain == NSCocoaErrorDomain {
            return joined(filePath, cocoaReason(ns))
        }
        let text = String(describing: error).replacingOccurrences(of: "\n", with: " ")
        return joined(filePath, text)
    }

    /// `strerror(code)`: `No such file or directory`.
    static func reason(errno code: Int32) -> String {
        String(cString: strerror(code))
    }

    private static func joined(_ path: String?, _ reason: String) -> String {
        guard let path else { return reason }
        return "\(path): \(reason)"
    }

    private static func cocoaReason(_ error: NSError) -> String {
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return reason(errno: Int32(underlying.code))
        }
        switch CocoaError.Code(rawValue: error.code) {
        case .fileNoSuchFile, .fileReadNoSuchFile: return reason(errno: ENOENT)
        case .fileReadNoPermission, .fileWriteNoPermission: return reason(errno: EACCES)
        case .fileWriteOutOfSpace: return reason(errno: ENOSPC)
        case .fileWriteVolumeReadOnly: return reason(errno: EROFS)
        case .fileWriteFileExists: return reason(errno: EEXIST)
        case .fileReadInvalidFileName, .fileWriteInvalidFileName: return "invalid file name"
        case .fileReadTooLarge: return "file too large"
        case .fileReadCorruptFile: return "the file's content is not valid"
        case .fileReadInapplicableStringEncoding, .fileWriteInapplicableStringEncoding: return "not valid UTF-8"
        case .fileLocking: return "the file is locked"
        default: break
        }
        let described = error.localizedDescription
        if !described.isEmpty, !described.contains("(null)"), !described.contains("Error Domain=") { return described }
        return "file operation failed (error \(error.code))"
    }
}
