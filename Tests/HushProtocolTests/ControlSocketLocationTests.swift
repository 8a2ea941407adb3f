import Glibc
import Testing

@testable import HushProtocol

/// The one rule for where the control socket is when nothing names it: hushd's built-in board listens where
/// ``ControlSocketLocation/daemonSocket`` says, and hushctl tries that place first.
@Suite("the control socket's usual places")
struct ControlSocketLocationTests {
    @Test("root, or the system's user, may write /run/hush: hushd takes the system socket, hushctl tries it first")
    func system() {
        let rule = ControlSocketLocation(runtimeDirectory: "/run/user/0", uid: 0, isWritable: { $0 == "/run/hush" })
        #expect(rule.daemonSocket == "/run/hush/control.sock")
        #expect(
            rule.clientCandidates == [
                "/run/hush/control.sock", "/run/user/0/hush-control.sock", "/tmp/hush-0-control.sock",
            ]
        )
    }

    @Test("a person with a runtime directory: hushd listens there; hushctl tries it before the system socket")
    func person() {
        var asked: [String] = []
        let rule = ControlSocketLocation(runtimeDirectory: "/run/user/1000", uid: 1000) {
            asked.append($0)
            return false
        }
        #expect(rule.daemonSocket == "/run/user/1000/hush-control.sock")
        #expect(asked == ["/run/hush"], "only the system socket's directory is checked")
        #expect(
            rule.clientCandidates == [
                "/run/user/1000/hush-control.sock", "/run/hush/control.sock", "/tmp/hush-1000-control.sock",
            ]
        )
    }

    @Test("no runtime directory (su, a container): /tmp, named after the uid so two users never share it")
    func bare() {
        let rule = ControlSocketLocation(runtimeDirectory: nil, uid: 1001, isWritable: { _ in false })
        #expect(rule.daemonSocket == "/tmp/hush-1001-control.sock")
        #expect(rule.places == ["/run/hush/control.sock", "/tmp/hush-1001-control.sock"])
        #expect(rule.clientCandidates == ["/tmp/hush-1001-control.sock", "/run/hush/control.sock"])
    }

    @Test("every candidate is a place, each once, and the first is where hushd would listen", arguments: [nil, "/r"])
    func candidatesArePlaces(runtime: String?) {
        for uid: UInt32 in [0, 1000] {
            for writable in [false, true] {
                let rule = ControlSocketLocation(runtimeDirectory: runtime, uid: uid, isWritable: { _ in writable })
                #expect(rule.clientCandidates.sorted() == rule.places.sorted())
                #expect(rule.clientCandidates.first == rule.daemonSocket)
            }
        }
    }

    @Test("only an absolute XDG_RUNTIME_DIR counts")
    func absoluteVariable() {
        setenv("HUSH_TEST_LOCATION", "relative/dir", 1)
        #expect(ControlSocketLocation.absoluteVariable("HUSH_TEST_LOCATION") == nil)
        setenv("HUSH_TEST_LOCATION", "/run/user/7", 1)
        #expect(ControlSocketLocation.absoluteVariable("HUSH_TEST_LOCATION") == "/run/user/7")
        unsetenv("HUSH_TEST_LOCATION")
        #expect(ControlSocketLocation.absoluteVariable("HUSH_TEST_LOCATION") == nil)
    }
}
