// hush-vboard-voice: a call's echo through hushd, on the virtual board (board/virtual/scenarios/voice.sh). hushd
// plays on the virtual profile's routes and records its microphone from the loopback; an echo room plays the routes
// back into the microphone with a near-end talker, and a far end plays and records through the `hush` device
// (VoiceChecks.swift). docs/virtual-board.md, "The voice scenario".
//
// usage: hush-vboard-voice [CHECK ...]   (every check, in order: the first starts hushd, the others build on it;
//                                        names: the first and those)
//        hush-vboard-voice --list

import HushTesting

#if canImport(Glibc)
import Glibc
#endif

let passed = runChecks(selectChecks(voiceChecks, by: Array(CommandLine.arguments.dropFirst())))
stopStallWatch()
stopHushd()
exit(passed ? 0 : 1)
