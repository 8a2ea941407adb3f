/*
 * delay_probe.c: plays or records through a hush ALSA device and watches snd_pcm_delay between hushd's periods
 * (ALSADelayInterpolationTests runs it; `make alsa-plugin` builds it into .build/alsa-plugin/hush-delay-probe).
 *
 *   hush-delay-probe DEVICE WINDOWS WINDOW_MS [capture]
 *
 * Opens DEVICE for playback (or capture; S16_LE, stereo, 48 kHz, a 200 ms buffer), fills it (playback), starts,
 * then WINDOWS times: moves no frames for WINDOW_MS while it samples snd_pcm_avail_update (which moves only when
 * hushd publishes a period) and snd_pcm_delay, then fills the buffer again (playback) or reads what it holds
 * (capture). Prints one line per change of either (a pair taken
 * while hushd published is taken again); at each change of AVAIL, the stretch that ended (WHOLE 0 for a window's
 * first, which began before it) with when the probe first and last looked in it and how often; and how many times it
 * looked in each window:
 *
 *   sample WINDOW NANOSECONDS AVAIL DELAY
 *   stretch WINDOW WHOLE FIRST_NANOSECONDS LAST_NANOSECONDS LOOKS
 *   loops WINDOW COUNT
 *
 * and "done" at the end; an error says what failed and exits 1.
 */
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RATE 48000u
#define CHANNELS 2u
#define BUFFER_FRAMES 9600u
#define PERIOD_FRAMES 960u

static int64_t now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static int fail(const char *what, int error) {
    fprintf(stderr, "%s: %s\n", what, snd_strerror(error));
    return 1;
}

/* Playback: writes silence until less than a period of room is left. Capture: reads all there is. */
static int fill(snd_pcm_t *pcm, bool capture) {
    static int16_t frames[PERIOD_FRAMES * CHANNELS];
    for (;;) {
        snd_pcm_sframes_t avail = snd_pcm_avail_update(pcm);
        if (avail < 0) return (int)avail;
        if (capture ? avail == 0 : avail < (snd_pcm_sframes_t)PERIOD_FRAMES) return 0;
        snd_pcm_uframes_t count = capture && avail < (snd_pcm_sframes_t)PERIOD_FRAMES ? (snd_pcm_uframes_t)avail
                                                                                       : PERIOD_FRAMES;
        snd_pcm_sframes_t moved = capture ? snd_pcm_readi(pcm, frames, count) : snd_pcm_writei(pcm, frames, count);
        if (moved < 0) return (int)moved;
    }
}

int main(int argc, char **argv) {
    bool capture = argc == 5 && strcmp(argv[4], "capture") == 0;
    if (argc != 4 && !capture) {
        fprintf(stderr, "usage: %s DEVICE WINDOWS WINDOW_MS [capture]\n", argv[0]);
        return 2;
    }
    int windows = atoi(argv[2]);
    int64_t window_ns = (int64_t)atoi(argv[3]) * 1000000;
    snd_pcm_t *pcm;
    int error = snd_pcm_open(&pcm, argv[1], capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK, 0);
    if (error < 0) return fail("snd_pcm_open", error);
    snd_pcm_hw_params_t *hw;
    snd_pcm_hw_params_alloca(&hw);
    snd_pcm_hw_params_any(pcm, hw);
    snd_pcm_uframes_t buffer = BUFFER_FRAMES, period = PERIOD_FRAMES;
    unsigned int rate = RATE;
    if ((error = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)) < 0 ||
        (error = snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE)) < 0 ||
        (error = snd_pcm_hw_params_set_channels(pcm, hw, CHANNELS)) < 0 ||
        (error = snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, NULL)) < 0 ||
        (error = snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer)) < 0 ||
        (error = snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, NULL)) < 0 ||
        (error = snd_pcm_hw_params(pcm, hw)) < 0)
        return fail("snd_pcm_hw_params", error);
    printf("setup rate %u buffer %lu period %lu\n", rate, (unsigned long)buffer, (unsigned long)period);
    if (!capture && (error = fill(pcm, false)) < 0) return fail("writing", error);
    if (snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED && (error = snd_pcm_start(pcm)) < 0)
        return fail("snd_pcm_start", error);
    for (int window = 0; window < windows; window++) {
        int64_t start = now_ns();
        snd_pcm_sframes_t last_avail = -1, last_delay = -1;
        /* The stretch since the position last moved: when the probe first and last looked in it, how often. */
        int64_t first = 0, last = 0;
        long looks = 0, loops = 0, changes = 0;
        for (int64_t now = start; now - start < window_ns; now = now_ns()) {
            loops++;
            snd_pcm_sframes_t avail = snd_pcm_avail_update(pcm), delay = 0;
            if (avail < 0) return fail("snd_pcm_avail_update", (int)avail);
            if ((error = snd_pcm_delay(pcm, &delay)) < 0) return fail("snd_pcm_delay", error);
            /* hushd published between the two calls: the delay may be the next period's; look again. */
            if (snd_pcm_avail_update(pcm) != avail) continue;
            if (avail != last_avail) {
                /* The window's first stretch began before the window: it is not whole. */
                if (last_avail >= 0)
                    printf("stretch %d %d %" PRId64 " %" PRId64 " %ld\n", window, changes > 1 ? 1 : 0, first - start,
                           last - start, looks);
                changes++;
                first = now;
                looks = 0;
            }
            looks++;
            last = now;
            if (avail != last_avail || delay != last_delay) {
                printf("sample %d %" PRId64 " %ld %ld\n", window, now - start, (long)avail, (long)delay);
                last_avail = avail;
                last_delay = delay;
            }
            sched_yield(); /* looking as often as it can, but not before hushd's audio thread */
        }
        printf("loops %d %ld\n", window, loops);
        if ((error = fill(pcm, capture)) < 0) return fail(capture ? "reading" : "writing", error);
    }
    snd_pcm_drop(pcm);
    snd_pcm_close(pcm);
    printf("done\n");
    return 0;
}
