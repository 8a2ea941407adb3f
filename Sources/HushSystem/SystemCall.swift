#if canImport(Glibc)
import Glibc
#endif

/// The one place hushd retries a system call that a signal interrupted.
///
/// Every call that can fail with EINTR (reads, writes, opens, accepts, polls, sends) goes through ``retrying(_:)``;
/// callers then read `errno` for the failure that was not EINTR (nothing runs in between to change it). `close` is
/// the exception: Linux releases the descriptor even when close reports EINTR, so retrying it could close a
/// descriptor another thread has just been given.
package enum SystemCall {
    /// Runs `call` again while it returns a negative value with errno EINTR, and returns the first other result.
    @inline(__always)
    package static func retrying<T: BinaryInteger>(_ call: () -> T) -> T {
        while true {
            let result = call()
            if result < 0 && errno == EINTR { continue }
            return result
        }
    }
}
