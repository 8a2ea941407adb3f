import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// The raw socket calls the control server makes, each turning its errno into a ``HardwareError`` (EINTR retried
/// here, EAGAIN reported as nil where it means "not now").
package enum UnixSocket {
    /// A peer's process credentials, laid out as the kernel's `struct ucred` (pid_t, uid_t, gid_t), which
    /// Swift's Glibc does not import (it needs _GNU_SOURCE).
    package struct PeerCredentials: Hashable, Sendable {
        package var pid: Int32 = 0
        package var uid: UInt32 = 0
        package var gid: UInt32 = 0
    }

    /// The longest path `sockaddr_un` holds (its terminating NUL excluded).
    package static let maxPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    package static func error(
        _ operation: String,
        _ path: String,
        _ code: Int32,
        _ hint: String? = nil
    ) -> HardwareError {
        HardwareError(
            operation: operation,
            device: path,
            errno: code,
            message: String(cString: strerror(code)) + (hint.map { "; \($0)" } ?? "")
        )
    }

    /// A new non-blocking, close-on-exec stream socket.
    package static func stream(for path: String) throws(HardwareError) -> Int32 {
        let fd = socket(
            AF_UNIX,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0
        )
        guard fd >= 0 else { throw error("create the control socket", path, errno) }
        return fd
    }

    /// Runs `body` with `path` as a `sockaddr_un`.
    package static func withAddress<T>(
        _ path: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> T
    ) throws(HardwareError) -> T {
        let bytes = Array(path.utf8)
        guard bytes.count <= maxPathBytes, !bytes.isEmpty, !bytes.contains(0) else {
            throw HardwareError(
                operation: "use control socket path",
                device: path,
                message: bytes.isEmpty
                    ? "the path is empty"
                    : "the path is \(bytes.count) bytes long; a Unix socket path holds at most \(maxPathBytes)"
            )
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // SAFETY: sun_path is a fixed-size C array of `maxPathBytes + 1` bytes; the path (checked above) and its
        // NUL fit, and the zeroed address supplies the NUL.
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        return withUnsafePointer(to: &address) { pointer in
            // SAFETY: sockaddr_un starts with the sockaddr header; the kernel reads `size` bytes of it.
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    /// Whether something listens on `path` (a live hushd): connecting succeeds or its backlog is full.
    package static func answers(_ path: String) throws(HardwareError) -> Bool {
        let probe = try stream(for: path)
        defer { close(probe) }
        let result = try withAddress(path) { address, length in
            var status: Int32
            status = SystemCall.retrying { connect(probe, address, length) }
            return status == 0 ? 0 : errno
        }
        switch result {
        case 0, EAGAIN, EINPROGRESS: return true
        case ECONNREFUSED, ENOENT: return false
        default: throw error("check for a running hushd on", path, result)
        }
    }

    /// Accepts one pending connection (non-blocking, close-on-exec), or nil when none waits.
    package static func accept(_ listener: Int32, path: String) throws(HardwareError) -> Int32? {
        let fd = SystemCall.retrying { Glibc.accept(listener, nil, nil) }
        if fd >= 0 {
            // accept4 is not imported without _GNU_SOURCE: set the flags on the new descriptor instead.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            return fd
        }
        switch errno {
        // The peer gave up between poll and accept: nothing to accept.
        case EAGAIN, ECONNABORTED, EPROTO: return nil
        case let code: throw error("accept a connection on", path, code)
        }
    }

    /// The credentials of the process at the other end, as they were when it connected.
    package static func peerCredentials(_ fd: Int32) -> PeerCredentials? {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        let result = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length)
        return result == 0 && Int(length) == MemoryLayout<PeerCredentials>.size ? credentials : nil
    }

    /// The peer's supplementary groups (SO_PEERGROUPS, Linux 4.13), or nil where the kernel does not say.
    package static func peerGroups(_ fd: Int32) -> [UInt32]? {
        var groups = [UInt32](repeating: 0, count: 64)
        while true {
            var length = socklen_t(groups.count * MemoryLayout<UInt32>.size)
            let result = groups.withUnsafeMutableBytes {
                getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, $0.baseAddress, &length)
            }
            if result == 0 { return Array(groups.prefix(Int(length) / MemoryLayout<UInt32>.size)) }
            guard errno == ERANGE, Int(length) > groups.count * MemoryLayout<UInt32>.size else { return nil }
            groups = [UInt32](repeating: 0, count: Int(length) / MemoryLayout<UInt32>.size)
        }
    }

    /// The groups of user `uid` from the user database (a fallback where SO_PEERGROUPS is missing).
    package static func groups(ofUser uid: UInt32, primary gid: UInt32) -> [UInt32] {
        guard let name = userName(uid) else { return [gid] }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(name, gid, &groups, &count) >= 0 else { return [gid] }
        }
        return Array(groups.prefix(Int(count)))
    }

    package static func userName(_ uid: UInt32) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return String(cString: entry.pw_name)
    }

    /// The id of group `name`, or nil when there is no such group.
    package static func groupID(_ name: String) -> UInt32? {
        var entry = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }

    /// What one non-blocking read gave.
    package enum ReadResult {
        case bytes(Int)
        case wouldBlock
        case endOfFile
        case failed(Int32)
    }

    package static func read(_ fd: Int32, into buffer: inout [UInt8]) -> ReadResult {
        let count = SystemCall.retrying { buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
        if count > 0 { return .bytes(count) }
        if count == 0 { return .endOfFile }
        switch errno {
        case EAGAIN: return .wouldBlock
        case let code: return .failed(code)
        }
    }

    /// What one non-blocking send gave.
    package enum WriteResult {
        case wrote(Int)
        case wouldBlock
        case failed(Int32)
    }

    /// Sends without raising SIGPIPE (a client that vanished must never kill hushd) and without blocking.
    package static func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> WriteResult {
        let count = SystemCall.retrying {
            bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
        }
        if count >= 0 { return .wrote(count) }
        switch errno {
        case EAGAIN: return .wouldBlock
        case let code: return .failed(code)
        }
    }
}
