/* first-sound: the booted board's ear (board/booted/run.sh). Captures PCM (default hw:Loopback,1,0, where the
 * virtual profile's speaker is heard) from before hushd starts and prints, when the first sample above a threshold
 * arrives, the CLOCK_MONOTONIC time at which that sample was captured, in microseconds, with its level:
 *
 *     first-sound PCM SECONDS PERIOD BUFFER   ->  "first_sound_us 12345678 peak 16383"  (or "none" after SECONDS)
 *
 * It goes to the background once the capture runs (a Type=forking unit ordered before hushd.service), so that hushd
 * starts only when it listens. snd-aloop ties the two ends of a loopback: the side opened second must take the
 * first side's period and buffer sizes, so PERIOD and BUFFER are hushd's own for the virtual profile (512 frames,
 * and the buffer ALSAPlayback asks for: 3584 frames with periods = 3 and max_period_frames = 2048).
 *
 * The time is the moment the read returned, less the frames that were captured after that sample (those later in
 * the same read and those still in the buffer, snd_pcm_delay): what systemd's *TimestampMonotonic properties use.
 * Test tooling, not part of hush. */
#include <alsa/asoundlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { RATE = 48000, CHANNELS = 2, FRAMES = 128, THRESHOLD = 64 };

static long long monotonic_us(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: first-sound PCM SECONDS PERIOD BUFFER\n");
        return 64;
    }
    const char *name = argv[1];
    double seconds = atof(argv[2]);
    snd_pcm_uframes_t period = strtoul(argv[3], NULL, 10), buffer_frames = strtoul(argv[4], NULL, 10);
    snd_pcm_t *pcm;
    int error = snd_pcm_open(&pcm, name, SND_PCM_STREAM_CAPTURE, 0);
    if (error < 0) {
        fprintf(stderr, "first-sound: cannot open %s: %s\n", name, snd_strerror(error));
        return 1;
    }
    snd_pcm_hw_params_t *hw;
    snd_pcm_hw_params_alloca(&hw);
    unsigned rate = RATE;
    if ((error = snd_pcm_hw_params_any(pcm, hw)) < 0 ||
        (error = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)) < 0 ||
        (error = snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE)) < 0 ||
        (error = snd_pcm_hw_params_set_channels(pcm, hw, CHANNELS)) < 0 ||
        (error = snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, NULL)) < 0 ||
        (error = snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, NULL)) < 0 ||
        (error = snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer_frames)) < 0 ||
        (error = snd_pcm_hw_params(pcm, hw)) < 0 || (error = snd_pcm_start(pcm)) < 0) {
        fprintf(stderr, "first-sound: %s refuses S16_LE %d Hz %d ch: %s\n", name, RATE, CHANNELS, snd_strerror(error));
        return 1;
    }
    short buffer[FRAMES * CHANNELS];
    long long deadline = monotonic_us() + (long long)(seconds * 1e6);
    printf("first-sound: listening on %s (%u Hz, %lu-frame periods, %lu-frame buffer) from %lld us\n", name, rate,
           (unsigned long)period, (unsigned long)buffer_frames, monotonic_us());
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("first-sound: fork");
        return 1;
    }
    if (child > 0) _exit(0);
    while (monotonic_us() < deadline) {
        snd_pcm_sframes_t got = snd_pcm_readi(pcm, buffer, FRAMES);
        long long now = monotonic_us();
        if (got < 0) {
            /* An overrun is recovered; EIO is alsa-lib's "no period in 10 s": snd-aloop's capture side stands still
             * while nothing plays into it, and moves again once hushd plays. Either way, start again and listen. */
            if (got == -EIO || snd_pcm_recover(pcm, (int)got, 1) < 0) {
                printf("first-sound: %s at %lld us; listening again\n", snd_strerror((int)got), monotonic_us());
                fflush(stdout);
                snd_pcm_drop(pcm);
                if ((error = snd_pcm_prepare(pcm)) < 0 || (error = snd_pcm_start(pcm)) < 0) {
                    fprintf(stderr, "first-sound: %s failed (%s), and would not start again: %s\n", name,
                            snd_strerror((int)got), snd_strerror(error));
                    return 1;
                }
            }
            continue;
        }
        for (snd_pcm_sframes_t frame = 0; frame < got; frame++) {
            int peak = 0;
            for (int channel = 0; channel < CHANNELS; channel++) {
                int value = abs(buffer[frame * CHANNELS + channel]);
                if (value > peak) peak = value;
            }
            if (peak < THRESHOLD) continue;
            snd_pcm_sframes_t delay = 0;
            if (snd_pcm_delay(pcm, &delay) < 0) delay = 0;
            long long later = (long long)(got - frame) + delay;
            printf("first_sound_us %lld peak %d\n", now - later * 1000000 / RATE, peak);
            return 0;
        }
    }
    printf("none\n");
    return 2;
}
