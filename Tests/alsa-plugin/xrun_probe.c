/*
 * xrun_probe.c: falls behind on a hush ALSA device on purpose and prints what ALSA tells it (R23: ALSA's underrun
 * contract; ALSAXrunTests runs it, `make alsa-plugin` builds it into .build/alsa-plugin/hush-xrun-probe).
 *
 *   hush-xrun-probe DEVICE playback|capture STOP ACCESS BLOCKING CYCLE...
 *
 *   STOP      default (the buffer size), boundary (never stop), or +MS / -MS (the buffer plus or minus MS)
 *   ACCESS    rw (snd_pcm_writei/readi) or mmap (snd_pcm_mmap_writei/readi)
 *   BLOCKING  block or nonblock (SND_PCM_NONBLOCK; the probe waits with snd_pcm_wait)
 *   CYCLE     CALL:MS — keep the stream going for 300 ms, move no frames for MS, then make CALL first:
 *             move (a write or read), wait (snd_pcm_wait), delay (snd_pcm_delay) or status (snd_pcm_status);
 *             or pause: snd_pcm_pause for MS, then resume
 *
 * S16_LE, stereo, 48 kHz, a 100 ms buffer of 10 ms periods; playback writes a 1 kHz tone. Prints per cycle
 *
 *   cycle N CALL MS result RESULT state STATE then RESULT2 state2 STATE2 slept SLEPT
 *
 * SLEPT is how long the stall took in ms, to the first call's end (a busy machine makes it longer). RESULT is the
 * first call's (0, a count, or an error name such as EPIPE), STATE what snd_pcm_state says after it;
 * RESULT2 and STATE2 are those of a transfer made right after (the xrun seen again, or the stream going on). A
 * cycle whose stream is in XRUN recovers with snd_pcm_prepare (and snd_pcm_start for capture) and says
 * "recovered N". At the end: "xruns N" (cycles that found the stream in XRUN), "unplanned N" (xruns where the probe
 * meant to keep up: the machine stalled it; recovered the same way), "longest_gap_ms N" (the longest it went
 * without moving frames where it meant to keep up) and "done". An error that is not part of the
 * contract exits 1 with what failed.
 */
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RATE 48000u
#define CHANNELS 2u
#define BUFFER_FRAMES 4800u
#define PERIOD_FRAMES 480u

static snd_pcm_t *pcm;
static bool capture, use_mmap, nonblock;
static int16_t frames[PERIOD_FRAMES * CHANNELS];
static uint64_t written;
static int unplanned;
/* The longest the probe went without moving frames where it meant to keep up (the machine's stalls), and when it
   last moved some. */
static int64_t longest_gap_ns, kept_at_ns;

static int64_t now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Where the probe keeps up: how long since it last did. */
static void keeping_up(void) {
    int64_t now = now_ns();
    if (kept_at_ns && now - kept_at_ns > longest_gap_ns) longest_gap_ns = now - kept_at_ns;
    kept_at_ns = now;
}

static long begin(void);

static int fail(const char *what, long error) {
    fprintf(stderr, "%s: %s\n", what, error < 0 ? snd_strerror((int)error) : "unexpected");
    return 1;
}

static const char *result_name(long result) {
    static char text[32];
    switch (result) {
    case -EPIPE: return "EPIPE";
    case -EAGAIN: return "EAGAIN";
    case -ENODEV: return "ENODEV";
    case -EIO: return "EIO";
    case -EBADFD: return "EBADFD";
    case -ESTRPIPE: return "ESTRPIPE";
    default: snprintf(text, sizeof(text), "%ld", result); return text;
    }
}

static void tone(void) {
    for (unsigned i = 0; i < PERIOD_FRAMES; i++, written++) {
        int16_t value = (int16_t)(3277.0 * sin(2.0 * M_PI * 1000.0 * (double)written / RATE));
        frames[2 * i] = frames[2 * i + 1] = value;
    }
}

/* One period moved, as the probe's access asks. */
static long transfer(void) {
    if (capture) return use_mmap ? snd_pcm_mmap_readi(pcm, frames, PERIOD_FRAMES) : snd_pcm_readi(pcm, frames, PERIOD_FRAMES);
    tone();
    return use_mmap ? snd_pcm_mmap_writei(pcm, frames, PERIOD_FRAMES) : snd_pcm_writei(pcm, frames, PERIOD_FRAMES);
}

/* Keeps the stream fed (or read) for `ms`; a non-blocking stream waits for room or frames with snd_pcm_wait. */
static long run_for(int ms) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >= ms) return 0;
        keeping_up();
        long moved = transfer();
        if (moved == -EAGAIN) moved = snd_pcm_wait(pcm, 1000);
        if (moved == -EPIPE) {
            /* Behind where it meant to keep up: the machine stalled the probe. Recovered and counted, so the run
               can tell its planned xruns from these. */
            unplanned++;
            long error = snd_pcm_prepare(pcm);
            if (error >= 0) error = begin();
            if (error < 0) return error;
            continue;
        }
        if (moved < 0) return moved;
    }
}

/* Prepared and going again: playback fills the buffer (the start threshold starts it), capture starts. */
static long begin(void) {
    if (capture) return snd_pcm_start(pcm);
    for (unsigned i = 0; i < BUFFER_FRAMES / PERIOD_FRAMES; i++) {
        long moved = transfer();
        if (moved < 0) return moved;
    }
    return 0;
}

static long first_call(const char *call) {
    if (strcmp(call, "move") == 0) return transfer();
    if (strcmp(call, "wait") == 0) return snd_pcm_wait(pcm, 1000);
    if (strcmp(call, "delay") == 0) {
        snd_pcm_sframes_t delay = 0;
        return snd_pcm_delay(pcm, &delay);
    }
    if (strcmp(call, "status") == 0) {
        snd_pcm_status_t *status;
        snd_pcm_status_alloca(&status);
        long error = snd_pcm_status(pcm, status);
        return error < 0 ? error : (long)snd_pcm_status_get_state(status) == SND_PCM_STATE_XRUN ? -EPIPE : 0;
    }
    return -EINVAL;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: hush-xrun-probe DEVICE playback|capture STOP rw|mmap block|nonblock CALL:MS...\n");
        return 2;
    }
    capture = strcmp(argv[2], "capture") == 0;
    use_mmap = strcmp(argv[4], "mmap") == 0;
    nonblock = strcmp(argv[5], "nonblock") == 0;
    long error = snd_pcm_open(&pcm, argv[1], capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK,
                              nonblock ? SND_PCM_NONBLOCK : 0);
    if (error < 0) return fail("snd_pcm_open", error);
    snd_pcm_hw_params_t *hw;
    snd_pcm_hw_params_alloca(&hw);
    snd_pcm_hw_params_any(pcm, hw);
    if ((error = snd_pcm_hw_params_set_access(pcm, hw, use_mmap ? SND_PCM_ACCESS_MMAP_INTERLEAVED
                                                                  : SND_PCM_ACCESS_RW_INTERLEAVED)) < 0 ||
        (error = snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE)) < 0 ||
        (error = snd_pcm_hw_params_set_channels(pcm, hw, CHANNELS)) < 0 ||
        (error = snd_pcm_hw_params_set_rate(pcm, hw, RATE, 0)) < 0 ||
        (error = snd_pcm_hw_params_set_buffer_size(pcm, hw, BUFFER_FRAMES)) < 0 ||
        (error = snd_pcm_hw_params_set_period_size(pcm, hw, PERIOD_FRAMES, 0)) < 0 ||
        (error = snd_pcm_hw_params(pcm, hw)) < 0)
        return fail("hw_params", error);
    snd_pcm_sw_params_t *sw;
    snd_pcm_sw_params_alloca(&sw);
    snd_pcm_sw_params_current(pcm, sw);
    snd_pcm_uframes_t boundary = 0;
    snd_pcm_sw_params_get_boundary(sw, &boundary);
    snd_pcm_uframes_t stop = BUFFER_FRAMES;
    if (strcmp(argv[3], "boundary") == 0) stop = boundary;
    else if (argv[3][0] == '+') stop = BUFFER_FRAMES + (snd_pcm_uframes_t)atoi(argv[3] + 1) * RATE / 1000;
    else if (argv[3][0] == '-') stop = BUFFER_FRAMES - (snd_pcm_uframes_t)atoi(argv[3] + 1) * RATE / 1000;
    if ((error = snd_pcm_sw_params_set_start_threshold(pcm, sw, BUFFER_FRAMES)) < 0 ||
        (error = snd_pcm_sw_params_set_stop_threshold(pcm, sw, stop)) < 0 ||
        (error = snd_pcm_sw_params(pcm, sw)) < 0)
        return fail("sw_params", error);
    if ((error = begin()) < 0) return fail("the first start", error);

    int xruns = 0;
    for (int i = 6; i < argc; i++) {
        char call[16];
        int ms = 0;
        if (sscanf(argv[i], "%15[a-z]:%d", call, &ms) != 2) return fail(argv[i], -EINVAL);
        if ((error = run_for(300)) < 0) return fail("keeping the stream going", error);
        struct timespec stall = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
        keeping_up();
        kept_at_ns = 0; /* the stall is the probe's own */
        bool pause = strcmp(call, "pause") == 0;
        long result = pause ? snd_pcm_pause(pcm, 1) : 0;
        int64_t stalled_at = now_ns();
        nanosleep(&stall, NULL);
        if (pause) {
            if (result >= 0) result = snd_pcm_pause(pcm, 0);
        } else {
            result = first_call(call);
        }
        int slept_ms = (int)((now_ns() - stalled_at) / 1000000);
        snd_pcm_state_t state = snd_pcm_state(pcm);
        long then = transfer();
        snd_pcm_state_t state2 = snd_pcm_state(pcm);
        printf("cycle %d %s %d result %s state %s", i - 5, call, ms, result_name(result), snd_pcm_state_name(state));
        printf(" then %s state2 %s slept %d\n", result_name(then), snd_pcm_state_name(state2), slept_ms);
        fflush(stdout);
        if (state2 == SND_PCM_STATE_XRUN || state == SND_PCM_STATE_XRUN || then == -EPIPE) {
            xruns++;
            if ((error = snd_pcm_prepare(pcm)) < 0) return fail("snd_pcm_prepare after the xrun", error);
            if ((error = begin()) < 0) return fail("going again after the xrun", error);
            printf("recovered %d\n", i - 5);
            kept_at_ns = now_ns();
        } else if (then < 0 && then != -EAGAIN) {
            return fail("a transfer after the stall", then);
        }
    }
    if ((error = run_for(300)) < 0) return fail("keeping the stream going at the end", error);
    if (!capture) {
        snd_pcm_nonblock(pcm, 0);
        keeping_up();
        snd_pcm_drain(pcm);
    }
    printf("xruns %d\n", xruns);
    printf("unplanned %d\n", unplanned);
    printf("longest_gap_ms %d\n", (int)(longest_gap_ns / 1000000));
    snd_pcm_close(pcm);
    printf("done\n");
    return 0;
}
