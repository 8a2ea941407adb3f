// Swift-visible face of speexdsp's echo canceller and preprocessor (tests only).
#ifndef HUSH_CSPEEXDSP_SHIM_H
#define HUSH_CSPEEXDSP_SHIM_H
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>

/// speex_echo_ctl's and speex_preprocess_ctl's requests are macros Swift cannot import with their types.
static inline int hush_speex_echo_set_sampling_rate(SpeexEchoState *state, int rate) {
    return speex_echo_ctl(state, SPEEX_ECHO_SET_SAMPLING_RATE, &rate);
}
static inline int hush_speex_preprocess_set_echo_state(SpeexPreprocessState *pre, SpeexEchoState *echo) {
    return speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_STATE, echo);
}
static inline int hush_speex_preprocess_set_denoise(SpeexPreprocessState *pre, int on) {
    return speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_DENOISE, &on);
}
#endif
