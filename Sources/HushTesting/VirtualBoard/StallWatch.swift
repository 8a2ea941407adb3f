import Foundation
import HushCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// A watch on the emulated machine's CPUs, for the check programs that judge timing (hush-vboard-streams,
// hush-vboard-voice): a take during a stall is a disturbance, taken again (Judged.swift), not a failure of hush.

/// When each CPU of the emulated machine was away. Under TCG every virtual CPU is a host thread, and a busy host
/// takes one away for tens of milliseconds now and then while the other runs on: hushd's audio thread may keep time
/// (no underrun counted) while its microphone reader, on the other CPU, falls behind. A thread pinned to each CPU
/// (SCHED_FIFO 60, below hushd's audio thread) sleeps a millisecond at a time and notes every wake-up that came
/// later than `threshold`: a stall of that CPU, not anything hush did. (On the build machine's TCG: see
/// docs/virtual-board.md, "The streams scenario".)
package final class StallWatch: @unchecked Sendable {
    package struct Stall {
        package var cpu: Int
        package var at: Instant
        package var length: Duration
    }

    package static let threshold = Duration.milliseconds(5)
    private let stalls = Mutex<[Stall]>([])
    private let stopped = Atomic<Bool>(false)
    package let cpus: Int

    package init() {
        cpus = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        for cpu in 0..<cpus {
            Thread.detachNewThread { [self] in watch(cpu) }
        }
    }

    private func watch(_ cpu: Int) {
        // Pinned with busybox's taskset (sched_setaffinity needs _GNU_SOURCE, which Swift's Glibc does not define);
        // /proc/thread-self names this thread's id.
        var link = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &link, link.count - 1)
        let thread = length > 0 ? String(decoding: link[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        if let tid = thread.split(separator: "/").last, Int(tid) != nil {
            shell("taskset -p \(1 << cpu) \(tid) >/dev/null")
        }
        var parameters = sched_param(sched_priority: 60)
        _ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
        var last = monotonicNow()
        while !stopped.load(ordering: .relaxed) {
            sleep(.milliseconds(1))
            let now = monotonicNow()
            let late = now - last - .milliseconds(1)
            if late > Self.threshold {
                stalls.withLock { $0.append(Stall(cpu: cpu, at: last, length: late)) }
            }
            last = now
        }
    }

    package func stop() { stopped.store(true, ordering: .relaxed) }

    /// "CPU 0: 12 stalls over 5 ms, 3 over 10 ms, 0 over 32 ms, the longest 14 ms; CPU 1: …", for the log.
    package var summary: String {
        let all = stalls.withLock { $0 }
        return (0..<cpus).map { cpu in
            let mine = all.filter { $0.cpu == cpu }.map(\.length)
            let over = [5, 10, 32].map { limit in mine.filter { $0 > .milliseconds(limit) }.count }
            return "CPU \(cpu): \(over[0]) stalls over 5 ms, \(over[1]) over 10 ms, \(over[2]) over 32 ms, the longest "
                + "\(mine.max()?.milliseconds ?? 0) ms"
        }.joined(separator: "; ")
    }

    /// The longest stall of any CPU that overlapped `from`…`to`, and its CPU.
    package func longest(from: Instant, to: Instant) -> Stall? {
        stalls.withLock { stalls in
            stalls.filter { $0.at < to && $0.at + $0.length > from }.max { $0.length < $1.length }
        }
    }

    /// A stall longer than `allowed` between `from` and `to`, as a disturbance.
    package func disturbance(from: Instant, to: Instant, allowed: Duration) -> [String] {
        guard let stall = longest(from: from, to: to), stall.length > allowed else { return [] }
        return ["CPU \(stall.cpu) of the emulated machine stalled \(stall.length.milliseconds) ms"]
    }
}

nonisolated(unsafe) package var stallWatch: StallWatch?

/// Prints what the watch saw of the emulated machine's CPUs and stops it, if one runs: a program's last words.
package func stopStallWatch() {
    guard let stallWatch else { return }
    print("the emulated machine's CPUs meanwhile: \(stallWatch.summary)")
    stallWatch.stop()
}
