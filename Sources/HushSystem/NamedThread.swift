import CLinux
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// A dedicated, named pthread (the audio and capture threads): named so `top -H` and `ps -L` show what it is,
/// joinable, and its creation failure phrased for the console.
package final class NamedThread {
    package let name: String
    private var handle: pthread_t?

    /// Starts `body` on a new thread called `name` (at most 15 characters).
    package init(name: String, _ body: @escaping () -> Void) throws(HardwareError) {
        self.name = name
        final class Start {
            let name: String
            let body: () -> Void
            init(name: String, body: @escaping () -> Void) {
                self.name = name
                self.body = body
            }
        }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        let result = pthread_create(
            &thread,
            nil,
            { context in
                let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
                _ = clinux_name_this_thread(start.name)
                start.body()
                return nil
            },
            context
        )
        guard result == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw HardwareError(
                operation: "start thread",
                device: "'\(name)'",
                errno: result,
                message: String(cString: strerror(result))
            )
        }
        handle = thread
    }

    /// Asks for SCHED_FIFO at `priority`; returns the error number when refused.
    package func makeRealtime(priority: Int32) -> Int32 {
        guard let handle else { return ESRCH }
        var parameters = sched_param(sched_priority: priority)
        return pthread_setschedparam(handle, SCHED_FIFO, &parameters)
    }

    /// Waits for the thread to end (its body must be told to return first).
    package func join() {
        guard let handle else { return }
        pthread_join(handle, nil)
        self.handle = nil
    }
}
