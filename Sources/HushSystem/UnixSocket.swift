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

// MARK: - Descriptors (SCM_RIGHTS)

extension UnixSocket {
    /// The most descriptors one message may carry (the kernel's SCM_MAX_FD).
    package static let maxDescriptorsPerMessage = 253

    /// Sends `bytes` with `descriptors` attached to their first byte (SCM_RIGHTS): the peer receives the
    /// descriptors with the read that returns that byte. Without blocking and without SIGPIPE, as ``send(_:_:)``.
    ///
    /// On `.wrote` the descriptors went, however few bytes did (the kernel attaches them to the first); on
    /// `.wouldBlock` neither did. The caller keeps its own descriptors either way: the peer gets new ones for the
    /// same files. ETOOMANYREFS (too many descriptors in flight for hushd's user) and EMSGSIZE come back as
    /// `.failed`.
    ///
    /// - Precondition: `bytes` is not empty (descriptors travel with at least one byte); at most
    ///   ``maxDescriptorsPerMessage`` descriptors.
    package static func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>, descriptors: [Int32]) -> WriteResult {
        guard !descriptors.isEmpty else { return send(fd, bytes) }
        precondition(!bytes.isEmpty, "descriptors travel with at least one byte")
        precondition(descriptors.count <= maxDescriptorsPerMessage, "at most \(maxDescriptorsPerMessage) descriptors")
        let payload = descriptors.count * MemoryLayout<Int32>.size
        var control = [UInt8](repeating: 0, count: controlSpace(payload))
        let count = bytes.withUnsafeBytes { data in
            control.withUnsafeMutableBytes { control in
                var header = cmsghdr()
                header.cmsg_len = controlLength(payload)
                header.cmsg_level = SOL_SOCKET
                header.cmsg_type = Int32(SCM_RIGHTS)
                // SAFETY: `control` holds CMSG_SPACE(payload) bytes: the header, padded to CMSG_ALIGN, then the
                // descriptors; both stores stay inside it (storeBytes and copyMemory need no alignment).
                control.storeBytes(of: header, as: cmsghdr.self)
                descriptors.withUnsafeBytes {
                    UnsafeMutableRawBufferPointer(rebasing: control[controlHeader..<(controlHeader + payload)])
                        .copyMemory(from: $0)
                }
                // SAFETY: sendmsg only reads through iov_base (the cast drops a `const` C does not have).
                var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: data.baseAddress), iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vector in
                    var message = msghdr()
                    message.msg_iov = vector
                    message.msg_iovlen = 1
                    message.msg_control = control.baseAddress
                    message.msg_controllen = control.count
                    return SystemCall.retrying {
                        sendmsg(fd, &message, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                    }
                }
            }
        }
        if count >= 0 { return .wrote(count) }
        switch errno {
        case EAGAIN: return .wouldBlock
        case let code: return .failed(code)
        }
    }

    /// Reads what is there, as ``read(_:into:)`` does (blocking or not as the socket is), and appends the
    /// descriptors that came with it (close-on-exec) to `descriptors`.
    ///
    /// The descriptors of a message arrive with the read that returns its first byte; the read may also return
    /// bytes sent before them (the kernel joins what was sent without descriptors), never bytes of a later message
    /// with descriptors of its own. A control message the kernel cut short (this process is out of descriptors)
    /// is `.failed(EMFILE)`, after appending the descriptors that did arrive: the bytes of that read are lost too.
    package static func receive(_ fd: Int32, into buffer: inout [UInt8], descriptors: inout [Int32]) -> ReadResult {
        var control = [UInt8](repeating: 0, count: controlSpace(maxDescriptorsPerMessage * MemoryLayout<Int32>.size))
        var flags: Int32 = 0
        var controlLength = 0
        let count = buffer.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { control in
                var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vector in
                    var message = msghdr()
                    message.msg_iov = vector
                    message.msg_iovlen = 1
                    message.msg_control = control.baseAddress
                    message.msg_controllen = control.count
                    let count = SystemCall.retrying { recvmsg(fd, &message, messageCloseOnExec) }
                    flags = message.msg_flags
                    controlLength = count >= 0 ? message.msg_controllen : 0
                    return count
                }
            }
        }
        if count < 0 {
            switch errno {
            case EAGAIN: return .wouldBlock
            case let code: return .failed(code)
            }
        }
        // Each control message: a cmsghdr, then its data, the next one CMSG_ALIGNed after it (CMSG_NXTHDR).
        var offset = 0
        while offset + controlHeader <= controlLength {
            // SAFETY: the header lies inside the `controlLength` bytes the kernel wrote; loadUnaligned needs no
            // alignment.
            let header = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self) }
            let length = Int(header.cmsg_len)
            guard length >= controlHeader, offset + length <= controlLength else { break }
            if header.cmsg_level == SOL_SOCKET && header.cmsg_type == Int32(SCM_RIGHTS) {
                for index in 0..<(length - controlHeader) / MemoryLayout<Int32>.size {
                    let at = offset + controlHeader + index * MemoryLayout<Int32>.size
                    descriptors.append(control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: Int32.self) })
                }
            }
            offset += controlAlign(length)
        }
        if flags & Int32(MSG_CTRUNC) != 0 { return .failed(EMFILE) }
        return count == 0 ? .endOfFile : .bytes(count)
    }

    /// MSG_CMSG_CLOEXEC: received descriptors are close-on-exec from the start (no window for a fork to inherit
    /// them). Linux's value; Swift's Glibc does not name it.
    private static let messageCloseOnExec: Int32 = 0x4000_0000

    /// CMSG_ALIGN: control messages and their data are aligned to size_t.
    private static func controlAlign(_ length: Int) -> Int {
        let alignment = MemoryLayout<Int>.size
        return (length + alignment - 1) & ~(alignment - 1)
    }

    /// The header's room, padded: where a control message's data starts.
    private static var controlHeader: Int { controlAlign(MemoryLayout<cmsghdr>.size) }

    /// CMSG_LEN: a control message with `payload` bytes of data.
    private static func controlLength(_ payload: Int) -> Int { controlHeader + payload }

    /// CMSG_SPACE: the room a control message with `payload` bytes of data takes.
    private static func controlSpace(_ payload: Int) -> Int { controlHeader + controlAlign(payload) }
}
