// webrtc-audio-processing behind include/CVoiceProcessing.h: one branch per library generation, chosen by which
// headers the build's include path holds (pkg-config's Cflags for the name Package.swift picked):
//   HUSH_WEBRTC_GENERATION 1: 1.x (trixie's 1.3): "modules/audio_processing/include/audio_processing.h", AEC3,
//     configured with one AudioProcessing::Config;
//   HUSH_WEBRTC_GENERATION 3: 0.3 (bookworm): "webrtc/modules/audio_processing/include/audio_processing.h", the
//     older AEC, configured component by component, each of which can refuse.
// Both take deinterleaved float blocks of 10 ms; the reference's channels are split into buffers allocated once,
// when the processor is made, so a block allocates nothing here. Every C++ exception stays inside.
//
// SwiftPM passes on only the -I of the .pc's Cflags and drops its -D ("prohibited flag(s)"), so the defines each
// generation's .pc asks for are made here: both say WEBRTC_POSIX (without it 0.3's platform_file.h stops with
// "Unsupported platform"); 0.3 adds WEBRTC_AUDIO_PROCESSING_ONLY_BUILD, 1.x WEBRTC_LIBRARY_IMPL.
#ifndef WEBRTC_POSIX
#define WEBRTC_POSIX
#endif
#if __has_include(<modules/audio_processing/include/audio_processing.h>)
#define HUSH_WEBRTC_GENERATION 1
#ifndef WEBRTC_LIBRARY_IMPL
#define WEBRTC_LIBRARY_IMPL
#endif
#include <modules/audio_processing/include/audio_processing.h>
#elif __has_include(<webrtc/modules/audio_processing/include/audio_processing.h>)
#define HUSH_WEBRTC_GENERATION 3
#ifndef WEBRTC_AUDIO_PROCESSING_ONLY_BUILD
#define WEBRTC_AUDIO_PROCESSING_ONLY_BUILD
#endif
#include <webrtc/common.h>
#include <webrtc/modules/audio_processing/include/audio_processing.h>
#else
#error "webrtc-audio-processing's headers were not found: apt-get install libwebrtc-audio-processing-dev"
#endif

#include <dlfcn.h>
#include <pthread.h>

#include <cstddef>
#include <cstdio>
#include <new>
#include <utility>
#include <vector>

#include "CVoiceProcessing.h"

struct hush_voice {
#if HUSH_WEBRTC_GENERATION == 1
    rtc::scoped_refptr<webrtc::AudioProcessing> apm;
#else
    webrtc::AudioProcessing *apm = nullptr;
#endif
    hush_voice_config config{};
    size_t frames = 0;
    webrtc::StreamConfig capture_stream;
    webrtc::StreamConfig reference_stream;
    /// The reference's channels, split: `channels` buffers of `frames` floats each.
    std::vector<float> reference;
    float *reference_channels[2] = {nullptr, nullptr};
};

namespace {

// The library is opened with dlopen the first time a processor is made, not when hushd starts: a board that never
// takes a call never loads it (nor, with 1.x, the Abseil libraries it needs), and hushd's start maps one file less
// (docs/performance.md, "Start-up"). Only the functions that make a processor are looked up by name; everything
// else the shim calls is virtual or inline in the library's header. Their types come from that header in an
// unevaluated context (decltype), so a header that changed them would not compile against these lookups. A member
// function is called as a function whose first parameter is the object: the Itanium C++ ABI (x86-64 and AArch64)
// passes `this` that way, after the hidden slot of a class-type return value.
#if HUSH_WEBRTC_GENERATION == 1
constexpr const char *kSoname = "libwebrtc-audio-processing-1.so.3";
using Builder = webrtc::AudioProcessingBuilder;
using Created = decltype(std::declval<Builder &>().Create());
struct Library {
    void (*construct)(Builder *);
    void (*destroy)(Builder *);
    Created (*create)(Builder *);
    // AudioProcessingStats' destructor is out of line too: GetStatistics() (virtual) makes the object in the
    // caller's storage, and this ends it.
    void (*destroy_statistics)(webrtc::AudioProcessingStats *);
} library;
#else
constexpr const char *kSoname = "libwebrtc_audio_processing.so.1";
using Created = decltype(webrtc::AudioProcessing::Create(std::declval<const webrtc::Config &>()));
struct Library {
    Created (*create)(const webrtc::Config &);
} library;
#endif
pthread_once_t library_once = PTHREAD_ONCE_INIT;
bool library_loaded = false;
char library_failure[512];

void *find(void *handle, const char *symbol) {
    void *address = dlsym(handle, symbol);
    if (address == nullptr && library_failure[0] == 0)
        std::snprintf(library_failure, sizeof library_failure, "%s has no %s: not the webrtc-audio-processing hush was "
                      "built for", kSoname, symbol);
    return address;
}

void load_library() {
    void *handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char *why = dlerror();
        std::snprintf(library_failure, sizeof library_failure, "%s could not be loaded: %s", kSoname,
                      why != nullptr ? why : "unknown error");
        return;
    }
#if HUSH_WEBRTC_GENERATION == 1
    library.construct = reinterpret_cast<void (*)(Builder *)>(find(handle, "_ZN6webrtc22AudioProcessingBuilderC1Ev"));
    library.destroy = reinterpret_cast<void (*)(Builder *)>(find(handle, "_ZN6webrtc22AudioProcessingBuilderD1Ev"));
    library.create = reinterpret_cast<Created (*)(Builder *)>(find(handle, "_ZN6webrtc22AudioProcessingBuilder6CreateEv"));
    library.destroy_statistics = reinterpret_cast<void (*)(webrtc::AudioProcessingStats *)>(
        find(handle, "_ZN6webrtc20AudioProcessingStatsD1Ev"));
    library_loaded = library.construct != nullptr && library.destroy != nullptr && library.create != nullptr &&
                     library.destroy_statistics != nullptr;
#else
    library.create = reinterpret_cast<Created (*)(const webrtc::Config &)>(
        find(handle, "_ZN6webrtc15AudioProcessing6CreateERKNS_6ConfigE"));
    library_loaded = library.create != nullptr;
#endif
}

bool load() {
    pthread_once(&library_once, load_library);
    return library_loaded;
}

#if HUSH_WEBRTC_GENERATION == 1
/// AudioProcessingBuilder().Create(), through the library opened above.
Created build() {
    alignas(Builder) unsigned char storage[sizeof(Builder)];
    Builder *builder = reinterpret_cast<Builder *>(storage);
    library.construct(builder);
    Created made = library.create(builder);
    library.destroy(builder);
    return made;
}
#endif

void fail(int *step, int *code, hush_voice_step what, int library_code) {
    if (step != nullptr) *step = what;
    if (code != nullptr) *code = library_code;
}

#if HUSH_WEBRTC_GENERATION == 3
/// 0.3: each component is enabled and set on its own; the first refusal is the one reported.
bool configure(hush_voice *voice, int *step, int *code) {
    const hush_voice_config &c = voice->config;
    webrtc::AudioProcessing &apm = *voice->apm;
    int result;
    if ((result = apm.echo_cancellation()->Enable(c.echo_cancellation != 0)) != 0 ||
        (c.echo_cancellation &&
         ((result = apm.echo_cancellation()->set_suppression_level(webrtc::EchoCancellation::kHighSuppression)) != 0 ||
          (result = apm.echo_cancellation()->enable_metrics(true)) != 0 ||
          (result = apm.echo_cancellation()->enable_delay_logging(true)) != 0))) {
        fail(step, code, HUSH_VOICE_STEP_ECHO_CANCELLATION, result);
        return false;
    }
    if ((result = apm.noise_suppression()->Enable(c.noise_suppression != 0)) != 0 ||
        (c.noise_suppression && (result = apm.noise_suppression()->set_level(webrtc::NoiseSuppression::kHigh)) != 0)) {
        fail(step, code, HUSH_VOICE_STEP_NOISE_SUPPRESSION, result);
        return false;
    }
    if ((result = apm.high_pass_filter()->Enable(c.high_pass_filter != 0)) != 0) {
        fail(step, code, HUSH_VOICE_STEP_HIGH_PASS_FILTER, result);
        return false;
    }
    // The digital adaptive mode: hush has no analog microphone gain to steer.
    if ((c.automatic_gain && (result = apm.gain_control()->set_mode(webrtc::GainControl::kAdaptiveDigital)) != 0) ||
        (result = apm.gain_control()->Enable(c.automatic_gain != 0)) != 0) {
        fail(step, code, HUSH_VOICE_STEP_AUTOMATIC_GAIN, result);
        return false;
    }
    return true;
}
#endif

}  // namespace

extern "C" {

int hush_voice_generation(void) { return HUSH_WEBRTC_GENERATION; }

const char *hush_voice_load_failure(void) { return load() ? nullptr : library_failure; }

hush_voice *hush_voice_create(const hush_voice_config *config, int *failed_step, int *failed_code) {
    fail(failed_step, failed_code, HUSH_VOICE_STEP_NONE, 0);
    if (config == nullptr || config->sample_rate <= 0 || config->sample_rate % 100 != 0 ||
        config->reference_channels < 1 || config->reference_channels > 2) {
        fail(failed_step, failed_code, HUSH_VOICE_STEP_FORMAT, webrtc::AudioProcessing::kBadParameterError);
        return nullptr;
    }
    if (!load()) {
        fail(failed_step, failed_code, HUSH_VOICE_STEP_LIBRARY, 0);
        return nullptr;
    }
    try {
        hush_voice *voice = new hush_voice();
        voice->config = *config;
        voice->frames = static_cast<size_t>(config->sample_rate / 100);
        voice->capture_stream = webrtc::StreamConfig(config->sample_rate, 1);
        voice->reference_stream = webrtc::StreamConfig(config->sample_rate, config->reference_channels);
        voice->reference.assign(voice->frames * static_cast<size_t>(config->reference_channels), 0.0f);
        for (int channel = 0; channel < config->reference_channels; channel++)
            voice->reference_channels[channel] = voice->reference.data() + voice->frames * channel;

        webrtc::ProcessingConfig processing;
        processing.input_stream() = voice->capture_stream;
        processing.output_stream() = voice->capture_stream;
        processing.reverse_input_stream() = voice->reference_stream;
        processing.reverse_output_stream() = voice->reference_stream;
#if HUSH_WEBRTC_GENERATION == 1
        voice->apm = rtc::scoped_refptr<webrtc::AudioProcessing>(build());
        if (!voice->apm) {
            delete voice;
            fail(failed_step, failed_code, HUSH_VOICE_STEP_CREATE, webrtc::AudioProcessing::kCreationFailedError);
            return nullptr;
        }
        // From the processor, not default-constructed here: Config's Pipeline has an out-of-line constructor.
        webrtc::AudioProcessing::Config settings = voice->apm->GetConfig();
        settings.echo_canceller.enabled = config->echo_cancellation != 0;
        settings.echo_canceller.mobile_mode = false;
        settings.noise_suppression.enabled = config->noise_suppression != 0;
        settings.noise_suppression.level = webrtc::AudioProcessing::Config::NoiseSuppression::kHigh;
        settings.high_pass_filter.enabled = config->high_pass_filter != 0;
        // The digital adaptive mode: hush has no analog microphone gain to steer.
        settings.gain_controller1.enabled = config->automatic_gain != 0;
        settings.gain_controller1.mode = webrtc::AudioProcessing::Config::GainController1::kAdaptiveDigital;
        settings.gain_controller1.analog_gain_controller.enabled = false;
        // Its likelihood is not published; it costs a correlation per block.
        settings.residual_echo_detector.enabled = false;
        voice->apm->ApplyConfig(settings);
        int result = voice->apm->Initialize(processing);
        if (result != webrtc::AudioProcessing::kNoError) {
            delete voice;
            fail(failed_step, failed_code, HUSH_VOICE_STEP_FORMAT, result);
            return nullptr;
        }
#else
        // The extended filter (128 ms of echo path instead of 48 ms, and steadier delay handling) and the delay
        // hush passes: the delay-agnostic mode would estimate what hush knows.
        webrtc::Config extra;
        extra.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(true));
        extra.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(false));
        // The experimental AGC steers an analog microphone level hush does not have.
        extra.Set<webrtc::ExperimentalAgc>(new webrtc::ExperimentalAgc(false));
        voice->apm = library.create(extra);
        if (voice->apm == nullptr) {
            delete voice;
            fail(failed_step, failed_code, HUSH_VOICE_STEP_CREATE, webrtc::AudioProcessing::kCreationFailedError);
            return nullptr;
        }
        int result = voice->apm->Initialize(processing);
        if (result != webrtc::AudioProcessing::kNoError) {
            hush_voice_destroy(voice);
            fail(failed_step, failed_code, HUSH_VOICE_STEP_FORMAT, result);
            return nullptr;
        }
        if (!configure(voice, failed_step, failed_code)) {
            hush_voice_destroy(voice);
            return nullptr;
        }
#endif
        return voice;
    } catch (...) {
        fail(failed_step, failed_code, HUSH_VOICE_STEP_MEMORY, webrtc::AudioProcessing::kCreationFailedError);
        return nullptr;
    }
}

void hush_voice_destroy(hush_voice *voice) {
    if (voice == nullptr) return;
#if HUSH_WEBRTC_GENERATION == 3
    delete voice->apm;
#endif
    delete voice;
}

int hush_voice_analyze_reverse(hush_voice *voice, const float *interleaved, size_t frames) {
    if (frames != voice->frames) return webrtc::AudioProcessing::kBadDataLengthError;
    const int channels = voice->config.reference_channels;
    for (size_t frame = 0; frame < frames; frame++)
        for (int channel = 0; channel < channels; channel++)
            voice->reference_channels[channel][frame] = interleaved[frame * channels + channel];
#if HUSH_WEBRTC_GENERATION == 1
    return voice->apm->AnalyzeReverseStream(voice->reference_channels, voice->reference_stream);
#else
    return voice->apm->AnalyzeReverseStream(
        voice->reference_channels, frames, voice->config.sample_rate,
        channels == 2 ? webrtc::AudioProcessing::kStereo : webrtc::AudioProcessing::kMono);
#endif
}

int hush_voice_process(hush_voice *voice, const float *capture, float *output, size_t frames, int delay_ms) {
    if (frames != voice->frames) return webrtc::AudioProcessing::kBadDataLengthError;
    // Both generations want the delay before every block while the canceller runs.
    int result = voice->apm->set_stream_delay_ms(delay_ms);
    if (result != webrtc::AudioProcessing::kNoError) return result;
    const float *source[1] = {capture};
    float *destination[1] = {output};
    return voice->apm->ProcessStream(source, voice->capture_stream, voice->capture_stream, destination);
}

int hush_voice_get_statistics(hush_voice *voice, hush_voice_statistics *statistics) {
    *statistics = hush_voice_statistics{};
#if HUSH_WEBRTC_GENERATION == 1
    // Made in place by the (virtual) GetStatistics and ended by the library's own destructor (see Library).
    alignas(webrtc::AudioProcessingStats) unsigned char storage[sizeof(webrtc::AudioProcessingStats)];
    webrtc::AudioProcessingStats *stats = ::new (storage) webrtc::AudioProcessingStats(voice->apm->GetStatistics());
    if (stats->echo_return_loss_enhancement) {
        statistics->has_erle = 1;
        statistics->erle_db = *stats->echo_return_loss_enhancement;
    }
    if (stats->echo_return_loss) {
        statistics->has_erl = 1;
        statistics->erl_db = *stats->echo_return_loss;
    }
    if (stats->delay_ms) {
        statistics->has_delay = 1;
        statistics->delay_ms = *stats->delay_ms;
    }
    library.destroy_statistics(stats);
    return webrtc::AudioProcessing::kNoError;
#else
    if (!voice->config.echo_cancellation) return webrtc::AudioProcessing::kNoError;
    webrtc::EchoCancellation::Metrics metrics;
    int result = voice->apm->echo_cancellation()->GetMetrics(&metrics);
    if (result != webrtc::AudioProcessing::kNoError) return result;
    // 0.3 reports -100 until it has measured anything (its offset level).
    if (metrics.echo_return_loss_enhancement.average > -100) {
        statistics->has_erle = 1;
        statistics->erle_db = metrics.echo_return_loss_enhancement.average;
    }
    if (metrics.echo_return_loss.average > -100) {
        statistics->has_erl = 1;
        statistics->erl_db = metrics.echo_return_loss.average;
    }
    return webrtc::AudioProcessing::kNoError;
#endif
}

const char *hush_voice_error_name(int code) {
    switch (code) {
    case webrtc::AudioProcessing::kNoError: return "kNoError";
    case webrtc::AudioProcessing::kUnspecifiedError: return "kUnspecifiedError";
    case webrtc::AudioProcessing::kCreationFailedError: return "kCreationFailedError";
    case webrtc::AudioProcessing::kUnsupportedComponentError: return "kUnsupportedComponentError";
    case webrtc::AudioProcessing::kUnsupportedFunctionError: return "kUnsupportedFunctionError";
    case webrtc::AudioProcessing::kNullPointerError: return "kNullPointerError";
    case webrtc::AudioProcessing::kBadParameterError: return "kBadParameterError";
    case webrtc::AudioProcessing::kBadSampleRateError: return "kBadSampleRateError";
    case webrtc::AudioProcessing::kBadDataLengthError: return "kBadDataLengthError";
    case webrtc::AudioProcessing::kBadNumberChannelsError: return "kBadNumberChannelsError";
    case webrtc::AudioProcessing::kFileError: return "kFileError";
    case webrtc::AudioProcessing::kStreamParameterNotSetError: return "kStreamParameterNotSetError";
    case webrtc::AudioProcessing::kNotEnabledError: return "kNotEnabledError";
    case webrtc::AudioProcessing::kBadStreamParameterWarning: return "kBadStreamParameterWarning";
    default: return "an unknown error";
    }
}

}  // extern "C"
