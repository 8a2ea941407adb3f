// A plain C view of webrtc-audio-processing for HushVoice: one capture channel processed in 10 ms blocks against
// a reference (what hushd plays) of one or two channels. Nothing C++ crosses this header.
//
// Two library generations sit behind it, one branch each in CVoiceProcessing.cpp, chosen by the headers
// pkg-config's name for the library points the build at (Package.swift picks the name):
//   - 0.3 (Debian and Raspberry Pi OS bookworm, pkg-config "webrtc-audio-processing"): the older canceller
//     (AEC with the extended filter), noise suppression, high-pass, the adaptive digital gain control;
//   - 1.x (trixie's 1.3, pkg-config "webrtc-audio-processing-1"): AEC3, the same three others.
// HushVoice calls only the hush_voice_* functions, so its behaviour and its messages are the same on both.
#ifndef HUSH_CVOICEPROCESSING_H
#define HUSH_CVOICEPROCESSING_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What to run on the capture stream.
typedef struct hush_voice_config {
    /// 16000 or 48000: the capture's and the reference's rate.
    int sample_rate;
    /// 1 or 2: the reference's channels (interleaved). The capture is one channel.
    int reference_channels;
    int echo_cancellation;
    int noise_suppression;
    int high_pass_filter;
    int automatic_gain;
} hush_voice_config;

/// The step of hush_voice_create that failed, for the message a person reads.
typedef enum hush_voice_step {
    HUSH_VOICE_STEP_NONE = 0,
    HUSH_VOICE_STEP_CREATE = 1,
    HUSH_VOICE_STEP_FORMAT = 2,
    HUSH_VOICE_STEP_ECHO_CANCELLATION = 3,
    HUSH_VOICE_STEP_NOISE_SUPPRESSION = 4,
    HUSH_VOICE_STEP_HIGH_PASS_FILTER = 5,
    HUSH_VOICE_STEP_AUTOMATIC_GAIN = 6,
    HUSH_VOICE_STEP_MEMORY = 7,
    /// The library could not be opened (hush_voice_load_failure says why).
    HUSH_VOICE_STEP_LIBRARY = 8,
} hush_voice_step;

/// The canceller's own figures; a `has_` field of 0 means the library has none (yet, or in this generation).
typedef struct hush_voice_statistics {
    int has_erle;
    /// Echo return loss enhancement, dB: 0.3's running average, 1.x's smoothed value.
    double erle_db;
    int has_erl;
    double erl_db;
    int has_delay;
    /// 1.x only: AEC3's own estimate of the echo's delay, ms (the delay it found, to check against the one
    /// hush passed).
    int delay_ms;
} hush_voice_statistics;

typedef struct hush_voice hush_voice;

/// 3 for 0.3, 1 for 1.x: which branch this build compiled.
int hush_voice_generation(void);

/// Why the library could not be loaded, or NULL when it is loaded (loading it now if need be).
const char *hush_voice_load_failure(void);

/// A processor ready for blocks of `sample_rate / 100` frames, or NULL with `*failed_step` and `*failed_code` (the
/// library's error code, 0 when it gave none) saying what was refused.
hush_voice *hush_voice_create(const hush_voice_config *config, int *failed_step, int *failed_code);
void hush_voice_destroy(hush_voice *voice);

/// One 10 ms block of the reference, interleaved (`frames` * reference_channels samples, floats in [-1, 1]).
/// 0, or the library's (negative) error code.
int hush_voice_analyze_reverse(hush_voice *voice, const float *interleaved, size_t frames);

/// One 10 ms block of the capture, mono, into `output` (may be `capture`), with the delay from a reference frame's
/// analysis to its echo's capture (`delay_ms`, 0...500). 0, or the library's (negative) error code.
int hush_voice_process(hush_voice *voice, const float *capture, float *output, size_t frames, int delay_ms);

/// The library's statistics now. 0, or the library's error code.
int hush_voice_get_statistics(hush_voice *voice, hush_voice_statistics *statistics);

/// The library's name for an error code, e.g. "kBadSampleRateError".
const char *hush_voice_error_name(int code);

#ifdef __cplusplus
}
#endif

#endif
