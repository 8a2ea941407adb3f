// hush-vboard-streams: applications' own audio through the `hush` ALSA device, on the virtual board
// (board/virtual/scenarios/streams.sh). hushd runs as on a board, on the virtual profile with a microphone (the
// loopback) and its light (a gpio-sim line); unmodified aplay and arecord play and record through the device; what
// they do is judged on the loopback's capture side, in the files arecord writes, by how long the applications take,
// and by hushd's status. docs/virtual-board.md, "The streams scenario".
//
// usage: hush-vboard-streams [CHECK ...]   (every check, in order: the first starts hushd, the others build on it;
//                                          names: the first and those)
//        hush-vboard-streams --list
//        hush-vboard-streams --apps [CHECK ...]   (the apps scenario's checks instead: espeak-ng, GStreamer, sounddevice)

import HushTesting

#if canImport(Glibc)
import Glibc
#endif

var arguments = Array(CommandLine.arguments.dropFirst())
let appsScenario = arguments.first == "--apps"
if appsScenario { arguments.removeFirst() }
let checks =
    appsScenario
    ? appsChecks
    : startChecks + microphoneChecks + privacyChecks + playbackChecks + periodChecks + hostileChecks + endingChecks
let passed = runChecks(selectChecks(checks, by: arguments))
microphoneTone?.stop()
stopStallWatch()
stopHushd()
exit(passed ? 0 : 1)
