// Deliberately empty: this module carries webrtc-audio-processing's pkg-config flags (its include directory, the
// generation's defines) and its library to CVoiceProcessing, whose C++ includes the library's headers itself.
// Swift imports CVoiceProcessing, never this.
#ifndef HUSH_CWEBRTCAUDIOPROCESSING_SHIM_H
#define HUSH_CWEBRTCAUDIOPROCESSING_SHIM_H
#endif
