// hush-vboard-check: the hardware adapters against real kernel drivers, run inside the virtual board
// (board/virtual). Each check drives the simulated hardware (gpio-sim through sysfs, uinput, ALSA user controls)
// and verifies what hush's adapter reports.
//
// usage: hush-vboard-check [CHECK ...]   (no names: every adapter check; `--list` prints them)
//        hush-vboard-check --end-to-end  (hushd end to end: the e2e scenario)
//        hush-vboard-check --soak        (hushd under random events for HUSH_SOAK_SECONDS: the soak)
//        hush-vboard-check --faults      (hushd stopped, starved, robbed of its card, killed: the faults scenario)

import HushTesting

#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--tone", arguments.count == 3, let seconds = Double(arguments[2]) {
    // A helper for the output checks: a 440 Hz tone at -6 dBFS into a playback PCM, paced by the device.
    exit(playTone(pcm: arguments[1], seconds: seconds) ? 0 : 1)
}
if arguments == ["--list"] {
    for check in allChecks + e2eChecks + hearingChecks + faultChecks { print(check.name) }
    exit(0)
}
if arguments == ["--soak"] {
    // hushd for HUSH_SOAK_SECONDS under random events and clients (board/virtual/soak/soak.sh, make soak).
    exit(runChecks(soakChecks) ? 0 : 1)
}
if arguments == ["--end-to-end"] {
    // hushd as on a board, heard through snd-aloop (board/virtual/scenarios/e2e.sh); the checks build on each
    // other (the first starts hushd), so they run in order and all of them.
    exit(runChecks(e2eChecks + hearingChecks) ? 0 : 1)
}
if arguments == ["--faults"] {
    // Like --end-to-end: the first check starts hushd and the others build on it.
    exit(runChecks(faultChecks) ? 0 : 1)
}
let selected =
    arguments.isEmpty ? allChecks : (allChecks + e2eChecks + hearingChecks).filter { arguments.contains($0.name) }
let unknown = arguments.filter { name in !(allChecks + e2eChecks + hearingChecks).contains { $0.name == name } }
guard unknown.isEmpty else {
    print("unknown check(s): \(unknown.joined(separator: ", ")); --list shows them")
    exit(64)
}
exit(runChecks(selected) ? 0 : 1)
