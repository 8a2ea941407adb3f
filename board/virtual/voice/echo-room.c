// echo-room: the acoustic path of the virtual board's voice scenario (board/virtual/scenarios/voice.sh). It hears
// what hushd plays on each route (a snd-aloop capture substream), delays each by its route's own delay, sums them,
// passes the sum through a room response (a sparse FIR read from a file: a direct path and decaying reflections),
// adds a near-end talker from the moment the far end's first sound arrives and a low noise floor, and plays the
// result into the substream hushd's `[capture] pcm` records: the microphone. It keeps the real rate (the loopback's
// clock), runs SCHED_FIFO, and counts every xrun of its own, since an xrun moves the echo in time. Its arithmetic is
// fixed-point (gains in Q15, sums in 64 bits): under TCG every floating-point operation is a call into qemu's
// soft-float, and the room must not take the CPU the emulated board's hushd needs.
//
// It writes a tap of what it played, float32 interleaved: the echo, the near-end talker, and the microphone as
// written (all three at the microphone's frames); and prints, when it ends, the frame the call started at (the far
// end's first sound), each route's first and last frame with sound, its xruns and its own latency (frames from a
// route's capture to the microphone's playback, beyond the route's delay). SIGUSR1 marks a moment (the frame it came
// at is printed as "mark"): the check sends it just before it changes hushd's route.
//
//   echo-room --route PCM=DELAY_MS [--route PCM=DELAY_MS] --microphone PCM --response FILE --near FILE
//             --tap FILE [--rate HZ] [--noise DBFS] [--queue MS] [--seconds S] [--priority N]
//
// --response: lines "TAP GAIN" (TAP in frames); --near: float32 mono, from the call's start; both at --rate (48000 by
// default). The routes' and microphone's format is S16_LE, 2 channels, at that rate (hushd's output's).
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CHANNELS 2
#define MAX_PERIOD 480 /* 5 ms at 96 kHz */
#define MAX_ROUTES 4

static volatile sig_atomic_t stopping, marked;
static void on_signal(int number) { (void)number; stopping = 1; }
static void on_mark(int number) { (void)number; marked = 1; }

static void die(const char *what, const char *pcm, int error) {
    fprintf(stderr, "echo-room: %s %s: %s\n", what, pcm, error ? snd_strerror(error) : "");
    exit(1);
}

static unsigned RATE = 48000;
static long PERIOD = 240;

static snd_pcm_t *open_pcm(const char *name, snd_pcm_stream_t stream, snd_pcm_uframes_t start_threshold) {
    snd_pcm_t *pcm;
    int error = snd_pcm_open(&pcm, name, stream, 0);
    if (error < 0) die("cannot open", name, error);
    snd_pcm_hw_params_t *hw;
    snd_pcm_hw_params_malloc(&hw);
    snd_pcm_hw_params_any(pcm, hw);
    snd_pcm_uframes_t period = (snd_pcm_uframes_t)PERIOD, buffer = (snd_pcm_uframes_t)PERIOD * 32;
    if ((error = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)) < 0 ||
        (error = snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE)) < 0 ||
        (error = snd_pcm_hw_params_set_channels(pcm, hw, CHANNELS)) < 0 ||
        (error = snd_pcm_hw_params_set_rate(pcm, hw, RATE, 0)) < 0 ||
        (error = snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, 0)) < 0 ||
        (error = snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer)) < 0 ||
        (error = snd_pcm_hw_params(pcm, hw)) < 0)
        die("cannot set S16_LE, 2 channels, the rate and 5 ms periods on", name, error);
    snd_pcm_hw_params_free(hw);
    snd_pcm_sw_params_t *sw;
    snd_pcm_sw_params_malloc(&sw);
    snd_pcm_sw_params_current(pcm, sw);
    snd_pcm_sw_params_set_start_threshold(pcm, sw, start_threshold);
    if ((error = snd_pcm_sw_params(pcm, sw)) < 0) die("cannot set the start threshold of", name, error);
    snd_pcm_sw_params_free(sw);
    return pcm;
}

// Roughly Gaussian, unit variance (four uniforms), from a fixed seed: the same floor every run.
static uint64_t seed = 0x9E3779B97F4A7C15u;
static int64_t uniform(void) { // uniform in [-2^31, 2^31)
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (int64_t)(seed >> 32) - 2147483648LL;
}
static int64_t gaussian(void) { return uniform() + uniform() + uniform() + uniform(); }

static int compare_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *route_names[MAX_ROUTES];
    int route_delays[MAX_ROUTES];
    int routes = 0;
    const char *microphone_name = NULL, *response_path = NULL, *near_path = NULL, *tap_path = NULL;
    double noise_db = -70, queue_ms = 15, seconds = 0;
    int priority = 72;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *option = argv[i], *value = argv[i + 1];
        if (strcmp(option, "--route") == 0 && routes < MAX_ROUTES) {
            char *equals = strrchr(value, '=');
            if (!equals) die("--route needs PCM=DELAY_MS, not", value, 0);
            *equals = 0;
            route_names[routes] = value;
            route_delays[routes++] = (int)(atof(equals + 1) * 1000); // µs until the rate is known
        } else if (strcmp(option, "--rate") == 0) {
            RATE = (unsigned)atoi(value);
            PERIOD = (long)RATE / 200;
            if (PERIOD < 8 || PERIOD > MAX_PERIOD) die("unsupported --rate", value, 0);
        } else if (strcmp(option, "--microphone") == 0) microphone_name = value;
        else if (strcmp(option, "--response") == 0) response_path = value;
        else if (strcmp(option, "--near") == 0) near_path = value;
        else if (strcmp(option, "--tap") == 0) tap_path = value;
        else if (strcmp(option, "--noise") == 0) noise_db = atof(value);
        else if (strcmp(option, "--queue") == 0) queue_ms = atof(value);
        else if (strcmp(option, "--seconds") == 0) seconds = atof(value);
        else if (strcmp(option, "--priority") == 0) priority = atoi(value);
        else die("unknown option", option, 0);
    }
    if (routes == 0 || !microphone_name || !response_path || !near_path || !tap_path) {
        fprintf(stderr, "usage: echo-room --route PCM=DELAY_MS [--route ...] --microphone PCM --response FILE "
                        "--near FILE --tap FILE [--noise DBFS] [--queue MS] [--seconds S] [--priority N]\n");
        return 64;
    }

    for (int r = 0; r < routes; r++) route_delays[r] = (int)lround((double)route_delays[r] * RATE / 1000000.0);
    // The room response.
    FILE *file = fopen(response_path, "r");
    if (!file) die("cannot read", response_path, 0);
    int taps = 0, longest = 0;
    static int tap_at[8192];
    static int32_t tap_gain[8192];
    float gain;
    while (taps < 8192 && fscanf(file, "%d %f", &tap_at[taps], &gain) == 2) {
        tap_gain[taps] = (int32_t)lroundf(gain * 32768.0f);
        if (tap_at[taps] > longest) longest = tap_at[taps];
        taps++;
    }
    fclose(file);
    // The near-end talker.
    file = fopen(near_path, "rb");
    if (!file) die("cannot read", near_path, 0);
    fseek(file, 0, SEEK_END);
    long near_frames = ftell(file) / (long)sizeof(float);
    fseek(file, 0, SEEK_SET);
    float *near_float = malloc(sizeof(float) * (size_t)(near_frames + 1));
    if (fread(near_float, sizeof(float), (size_t)near_frames, file) != (size_t)near_frames) die("cannot read", near_path, 0);
    fclose(file);
    // In 1/256 of a 16-bit step: the talker's quiet tails survive, and the sum stays integer.
    int32_t *near = malloc(sizeof(int32_t) * (size_t)(near_frames + 1));
    for (long n = 0; n < near_frames; n++) near[n] = (int32_t)lroundf(near_float[n] * 32767.0f * 256.0f);
    free(near_float);
    FILE *tap = fopen(tap_path, "wb");
    if (!tap) die("cannot write", tap_path, 0);

    // Delay lines: each route's mono signal, then their sum through the room. Sizes are powers of two.
    int longest_delay = 0;
    for (int r = 0; r < routes; r++)
        if (route_delays[r] > longest_delay) longest_delay = route_delays[r];
    size_t delay_size = 1, history_size = 1;
    while (delay_size < (size_t)(longest_delay + PERIOD + 1)) delay_size <<= 1;
    while (history_size < (size_t)(longest + PERIOD + 1)) history_size <<= 1;
    int32_t *delay_line[MAX_ROUTES];
    for (int r = 0; r < routes; r++) delay_line[r] = calloc(delay_size, sizeof(int32_t));
    int32_t *history = calloc(history_size, sizeof(int32_t));

    snd_pcm_uframes_t queue = (snd_pcm_uframes_t)lround(queue_ms * RATE / 1000);
    snd_pcm_t *capture[MAX_ROUTES];
    for (int r = 0; r < routes; r++) capture[r] = open_pcm(route_names[r], SND_PCM_STREAM_CAPTURE, 1);
    snd_pcm_t *microphone = open_pcm(microphone_name, SND_PCM_STREAM_PLAYBACK, queue);

    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGUSR1, on_mark);
    mlockall(MCL_CURRENT | MCL_FUTURE);
    struct sched_param parameters = {.sched_priority = priority};
    if (sched_setscheduler(0, SCHED_FIFO, &parameters) != 0) fprintf(stderr, "echo-room: no SCHED_FIFO\n");

    static int16_t silence[MAX_PERIOD * CHANNELS * 64];
    int16_t input[MAX_PERIOD * CHANNELS], output[MAX_PERIOD * CHANNELS];
    float taps_out[MAX_PERIOD * 3];
    // Fills the microphone's queue: its length is the room's own latency (with a capture period). Xruns and the
    // latency are counted from the call's start on.
    snd_pcm_writei(microphone, silence, queue);
    for (int r = 0; r < routes; r++) snd_pcm_start(capture[r]);
    printf("echo-room: ready: %d route(s), %d taps over %.1f ms, queue %.1f ms\n", routes, taps,
           longest * 1000.0 / RATE, queue * 1000.0 / RATE);
    fflush(stdout);

    long frame = 0, call_start = -1, near_index = 0, mark = -1;
    long first_sound[MAX_ROUTES], last_sound[MAX_ROUTES];
    int capture_xruns[MAX_ROUTES] = {0}, microphone_xruns = 0;
    for (int r = 0; r < routes; r++) first_sound[r] = last_sound[r] = -1;
    long *latencies = malloc(sizeof(long) * 200000);
    long latency_count = 0;
    // The floor in 1/256 of a 16-bit step: the integer Gaussian below, shifted by 16, has a deviation of
    // 2^16 / sqrt(3); times this Q16 factor, shifted by 16 again, the floor's.
    int64_t noise = llround(pow(10, noise_db / 20) * 32767.0 * 256.0 * sqrt(3.0));
    long limit = seconds > 0 ? (long)(seconds * RATE) : -1;
    while (!stopping && (limit < 0 || frame < limit)) {
        int32_t mono[MAX_ROUTES][MAX_PERIOD];
        snd_pcm_sframes_t late = 0;
        for (int r = 0; r < routes; r++) {
            // A whole period, through signals (SIGUSR1's mark interrupts the wait).
            snd_pcm_sframes_t got = 0;
            while (got < PERIOD && !stopping) {
                snd_pcm_sframes_t part = snd_pcm_readi(capture[r], input + got * CHANNELS, (snd_pcm_uframes_t)(PERIOD - got));
                if (part == -EINTR) continue;
                if (part < 0) {
                    // An overrun, or the loopback stopped this side (-EIO when its other side went away): counted
                    // (the echo moved in time), and started again with silence for the rest of the period.
                    if (call_start >= 0) capture_xruns[r]++;
                    if (capture_xruns[r] > 1000) die("cannot read", route_names[r], (int)part);
                    snd_pcm_drop(capture[r]);
                    snd_pcm_prepare(capture[r]);
                    snd_pcm_start(capture[r]);
                    break;
                }
                got += part;
            }
            if (got < PERIOD) memset(input + got * CHANNELS, 0, sizeof(int16_t) * CHANNELS * (PERIOD - got));
            if (r == 0) late = snd_pcm_avail_update(capture[r]);
            for (int n = 0; n < PERIOD; n++) {
                int left = input[n * CHANNELS], right = input[n * CHANNELS + 1];
                mono[r][n] = left + right; // twice the mean: halved with the taps' Q15 below
                if (left != 0 || right != 0) {
                    if (first_sound[r] < 0) first_sound[r] = frame + n;
                    last_sound[r] = frame + n;
                    if (call_start < 0) call_start = frame + n;
                }
            }
        }
        if (stopping) break;
        if (marked && mark < 0) mark = frame;
        for (int n = 0; n < PERIOD; n++) {
            long t = frame + n;
            int32_t x = 0;
            for (int r = 0; r < routes; r++) {
                delay_line[r][(size_t)t & (delay_size - 1)] = mono[r][n];
                x += delay_line[r][(size_t)(t - route_delays[r]) & (delay_size - 1)];
            }
            history[(size_t)t & (history_size - 1)] = x;
            // The echo in 1/256 of a 16-bit step: sum of Q15 gains times twice the mean, shifted by 16 - 8.
            int64_t sum = 0;
            for (int k = 0; k < taps; k++) sum += (int64_t)tap_gain[k] * history[(size_t)(t - tap_at[k]) & (history_size - 1)];
            int32_t echo = (int32_t)(sum >> 8);
            int32_t talker = 0;
            if (call_start >= 0 && t >= call_start && near_index < near_frames) talker = near[near_index++];
            int64_t hiss = ((gaussian() >> 16) * noise) >> 16;
            int64_t total = (int64_t)echo + talker + hiss;
            long value = (long)((total + 128) >> 8);
            if (value > 32767) value = 32767;
            if (value < -32768) value = -32768;
            output[n * CHANNELS] = output[n * CHANNELS + 1] = (int16_t)value;
            taps_out[n * 3] = (float)echo / (32767.0f * 256.0f);
            taps_out[n * 3 + 1] = (float)talker / (32767.0f * 256.0f);
            taps_out[n * 3 + 2] = (float)value / 32767.0f;
        }
        fwrite(taps_out, sizeof(float), (size_t)PERIOD * 3, tap);
        for (snd_pcm_sframes_t wrote = 0; wrote < PERIOD && !stopping;) {
            snd_pcm_sframes_t part = snd_pcm_writei(microphone, output + wrote * CHANNELS, (snd_pcm_uframes_t)(PERIOD - wrote));
            if (part == -EINTR) continue;
            if (part < 0) {
                // An underrun: counted, and the queue filled again (the room's latency as it was).
                // Before the call only the latency matters: the routes' backlog is dropped, so that the queue is the
                // room's latency again. During the call it is counted (the echo moved), from 0.5 s on: when hushd's
                // output starts on the loopback the room's first reads wait long once, every take.
                if (call_start >= 0 && frame > call_start + (long)RATE / 2) microphone_xruns++;
                if (microphone_xruns > 1000) die("cannot write", microphone_name, (int)part);
                snd_pcm_prepare(microphone);
                snd_pcm_writei(microphone, silence, queue);
                if (call_start < 0)
                    for (int r = 0; r < routes; r++) {
                        snd_pcm_sframes_t backlog = snd_pcm_avail(capture[r]);
                        if (backlog > 0) snd_pcm_forward(capture[r], (snd_pcm_uframes_t)backlog);
                    }
                continue;
            }
            wrote += part;
        }
        snd_pcm_sframes_t queued = 0;
        if (call_start >= 0 && frame > call_start + (long)RATE / 2 && snd_pcm_delay(microphone, &queued) == 0 && late >= 0 && latency_count < 200000)
            latencies[latency_count++] = late + queued;
        frame += PERIOD;
    }
    fclose(tap);
    qsort(latencies, (size_t)latency_count, sizeof(long), compare_long);
    double median = latency_count ? latencies[latency_count / 2] * 1000.0 / RATE : -1;
    double low = latency_count ? latencies[0] * 1000.0 / RATE : -1;
    double high = latency_count ? latencies[latency_count - 1] * 1000.0 / RATE : -1;
    printf("echo-room: frames %ld; call start %ld; mark %ld; microphone xruns %d; latency median %.2f ms (%.2f to "
           "%.2f)\n",
           frame, call_start, mark, microphone_xruns, median, low, high);
    for (int r = 0; r < routes; r++)
        printf("echo-room: route %d %s delay %d frames: sound from %ld to %ld; xruns %d\n", r, route_names[r],
               route_delays[r], first_sound[r], last_sound[r], capture_xruns[r]);
    fflush(stdout);
    for (int r = 0; r < routes; r++) snd_pcm_close(capture[r]);
    snd_pcm_drop(microphone);
    snd_pcm_close(microphone);
    return 0;
}
