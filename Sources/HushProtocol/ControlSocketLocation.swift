#if canImport(Glibc)
import Glibc
#endif

/// Where the control socket is when no configuration names it: one rule, used by hushd to choose the socket of its
/// built-in board (`make run`, no /etc/hush/hushd.toml) and by hushctl to find a hushd without `--socket` or
/// `$HUSH_SOCKET`, so the two always agree.
///
/// The places, in order (``places``):
/// 1. `/run/hush/control.sock`, the system hushd's (hushd.service's runtime directory, the configuration's
///    default `[control] socket`);
/// 2. `$XDG_RUNTIME_DIR/hush-control.sock`, a person's own hushd (a login session's runtime directory: private,
///    on tmpfs, gone at log-out);
/// 3. `/tmp/hush-UID-control.sock`, when there is no runtime directory (a bare `su`, a container).
///
/// hushd without a configuration takes the first it can make (``daemonSocket``): /run/hush only when it may
/// write there (root, or the system's own user), else its runtime directory, else /tmp. hushctl tries that same
/// place first and then the others (``clientCandidates``), and talks to the first that answers. So a person who
/// runs `make run` in one terminal reaches that hushd from another, even on a board whose system hushd runs too;
/// and on a board with only the system hushd, a plain `hushctl` still reaches it, one failed connect later. A
/// stale socket (a hushd killed with -9) refuses the connection and is passed over like a missing one.
public struct ControlSocketLocation {
    /// The system hushd's socket.
    public static let system = "/run/hush/control.sock"

    /// `$XDG_RUNTIME_DIR`, when it is an absolute path.
    public var runtimeDirectory: String?
    /// The user hushd or hushctl runs as.
    public var uid: UInt32
    /// Whether this process may create files in a directory.
    public var isWritable: (String) -> Bool

    /// The rule for this process: its `XDG_RUNTIME_DIR`, its uid, `access(W_OK)`; each may be given instead.
    public init(
        runtimeDirectory: String? = ControlSocketLocation.absoluteVariable("XDG_RUNTIME_DIR"),
        uid: UInt32 = getuid(),
        isWritable: @escaping (String) -> Bool = { access($0, W_OK) == 0 }
    ) {
        self.runtimeDirectory = runtimeDirectory
        self.uid = uid
        self.isWritable = isWritable
    }

    /// The system socket, the runtime directory's (when there is one), then /tmp's.
    public var places: [String] {
        [Self.system] + (runtimeDirectory.map { [$0 + "/hush-control.sock"] } ?? []) + [temporary]
    }

    /// The socket a hushd with no configuration listens on.
    public var daemonSocket: String {
        if isWritable(Self.directory(of: Self.system)) { return Self.system }
        if let runtimeDirectory { return runtimeDirectory + "/hush-control.sock" }
        return temporary
    }

    /// Where hushctl looks, in order: where a hushd started by this user in this environment would listen, then
    /// the other places.
    public var clientCandidates: [String] {
        let first = daemonSocket
        return [first] + places.filter { $0 != first }
    }

    private var temporary: String { "/tmp/hush-\(uid)-control.sock" }

    /// An environment variable's value when it is an absolute path; nil when unset, empty or relative (a relative
    /// runtime directory would put the socket wherever the process happens to start).
    public static func absoluteVariable(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.hasPrefix("/") ? text : nil
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
