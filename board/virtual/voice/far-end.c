// far-end: the far end of a call through hush, for the virtual board's voice scenario. One process plays a file
// into one PCM and records another at the same time (both usually `hush:voice`: one process's two directions with
// one category are one session, R17), from two threads opened together, and writes what it received to a file.
//
//   far-end --play PCM --record PCM --file FAR.raw --out RECEIVED.raw --seconds S [--rate HZ]
//
// Both files are S16_LE mono at --rate (48000 Hz by default); it records S seconds and plays the file (then silence) meanwhile. It prints
// the frames played and recorded and the xruns of each direction.
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned RATE = 48000;
static long PERIOD = 480; /* 10 ms */

struct direction {
    snd_pcm_t *pcm;
    const char *name;
    int16_t *samples;
    long frames;
    long done;
    int xruns;
    int error;
};

static snd_pcm_t *open_pcm(const char *name, snd_pcm_stream_t stream, unsigned buffer_us) {
    snd_pcm_t *pcm;
    int error = snd_pcm_open(&pcm, name, stream, 0);
    if (error < 0 ||
        (error = snd_pcm_set_params(pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1, RATE, 1,
                                    buffer_us)) < 0) {
        fprintf(stderr, "far-end: cannot open %s for %s: %s\n", name,
                stream == SND_PCM_STREAM_PLAYBACK ? "playback" : "capture", snd_strerror(error));
        exit(1);
    }
    return pcm;
}

static void *play(void *argument) {
    struct direction *d = argument;
    while (d->done < d->frames) {
        long count = d->frames - d->done < PERIOD ? d->frames - d->done : PERIOD;
        snd_pcm_sframes_t wrote = snd_pcm_writei(d->pcm, d->samples + d->done, (snd_pcm_uframes_t)count);
        if (wrote == -EPIPE || wrote == -ESTRPIPE) {
            d->xruns++;
            snd_pcm_prepare(d->pcm);
            continue;
        }
        if (wrote < 0) {
            d->error = (int)wrote;
            return NULL;
        }
        d->done += wrote;
    }
    snd_pcm_drain(d->pcm);
    return NULL;
}

static void *record(void *argument) {
    struct direction *d = argument;
    while (d->done < d->frames) {
        long count = d->frames - d->done < PERIOD ? d->frames - d->done : PERIOD;
        snd_pcm_sframes_t got = snd_pcm_readi(d->pcm, d->samples + d->done, (snd_pcm_uframes_t)count);
        if (got == -EPIPE || got == -ESTRPIPE) {
            d->xruns++;
            snd_pcm_prepare(d->pcm);
            continue;
        }
        if (got < 0) {
            d->error = (int)got;
            return NULL;
        }
        d->done += got;
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *play_name = NULL, *record_name = NULL, *file_path = NULL, *out_path = NULL;
    double seconds = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--play") == 0) play_name = argv[i + 1];
        else if (strcmp(argv[i], "--record") == 0) record_name = argv[i + 1];
        else if (strcmp(argv[i], "--file") == 0) file_path = argv[i + 1];
        else if (strcmp(argv[i], "--out") == 0) out_path = argv[i + 1];
        else if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--rate") == 0) {
            RATE = (unsigned)atoi(argv[i + 1]);
            PERIOD = (long)RATE / 100;
        }
    }
    if (!play_name || !record_name || !file_path || !out_path || seconds <= 0) {
        fprintf(stderr, "usage: far-end --play PCM --record PCM --file FAR.raw --out RECEIVED.raw --seconds S\n");
        return 64;
    }
    FILE *file = fopen(file_path, "rb");
    if (!file) {
        perror(file_path);
        return 1;
    }
    fseek(file, 0, SEEK_END);
    struct direction out = {0}, in = {0};
    out.frames = ftell(file) / 2;
    fseek(file, 0, SEEK_SET);
    out.samples = malloc(sizeof(int16_t) * (size_t)out.frames);
    if (fread(out.samples, sizeof(int16_t), (size_t)out.frames, file) != (size_t)out.frames) {
        perror(file_path);
        return 1;
    }
    fclose(file);
    in.frames = (long)(seconds * RATE);
    in.samples = calloc((size_t)in.frames, sizeof(int16_t));
    // A deep capture buffer (1 s), as the checks' arecord has: the emulated machine's stalls must not overrun it.
    out.name = play_name;
    out.pcm = open_pcm(play_name, SND_PCM_STREAM_PLAYBACK, 200000);
    in.name = record_name;
    in.pcm = open_pcm(record_name, SND_PCM_STREAM_CAPTURE, 1000000);
    pthread_t player, recorder;
    pthread_create(&recorder, NULL, record, &in);
    pthread_create(&player, NULL, play, &out);
    pthread_join(recorder, NULL);
    pthread_join(player, NULL);
    printf("far-end: played %ld of %ld frames (%d underruns), recorded %ld of %ld frames (%d overruns)\n", out.done,
           out.frames, out.xruns, in.done, in.frames, in.xruns);
    if (out.error || in.error)
        printf("far-end: failed: %s\n", snd_strerror(out.error ? out.error : in.error));
    file = fopen(out_path, "wb");
    if (!file || fwrite(in.samples, sizeof(int16_t), (size_t)in.done, file) != (size_t)in.done) {
        perror(out_path);
        return 1;
    }
    fclose(file);
    snd_pcm_close(out.pcm);
    snd_pcm_close(in.pcm);
    return out.error || in.error ? 1 : 0;
}
