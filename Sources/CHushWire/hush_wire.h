/*
 * hush_wire.h: the shared-memory stream between hushd and the `hush` ALSA plugin (libasound_module_pcm_hush.so).
 *
 * One header for both sides: hushd imports it as the Swift module CHushWire, the plugin (C, loaded into mpd,
 * GStreamer, Python...) includes it. docs/protocol.md ("Streams") tells the whole exchange; in short:
 *
 *   1. The plugin connects to hushd's control socket and sends an `open-stream` request (one JSON line) with the
 *      category, bus, options, direction, rate, channels, sample format and buffer size the application chose.
 *   2. hushd answers with one reply line and, in the same sendmsg, two descriptors (SCM_RIGHTS):
 *      [0] a memfd holding `struct hush_wire_header` followed by the ring (sealed: it cannot shrink or grow, so
 *          neither side can make the other fault), and [1] an eventfd hushd writes when the client should look
 *          again (frames were consumed or produced while the client waits, the stream was released, it ended).
 *   3. Frames move through the ring; `stream` requests on the same connection start, pause, resume, stop and
 *      re-prepare the stream. Closing the connection ends the stream (and its session, as by rule R10).
 *
 * Counters only grow (64-bit, they never wrap in practice); a ring index is counter % ring_frames.
 * Every word of the header has exactly one writer: the client, hushd's audio thread or hushd's control thread (the
 * struct says which, line by line). **hushd trusts nothing the client writes**: it keeps the geometry it made in its
 * own memory and never reads it back, clamps client_frames into the window that is possible, and reads it once per
 * period. A client can only spoil its own stream.
 *
 * Playback: the client writes frames at client_frames and then advances it; hushd reads from server_frames.
 * Capture:  hushd writes frames at server_frames and then advances it; the client reads from client_frames.
 */
#ifndef HUSH_WIRE_H
#define HUSH_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define HUSH_WIRE_MAGIC 0x48555348u /* "HUSH" */
/* 2: one writer per word (server_flags split into audio_flags and control_flags), the audio thread's words
   published as one snapshot under `sequence`. */
#define HUSH_WIRE_VERSION 2u
/* The ring starts here, one page into the memfd. */
#define HUSH_WIRE_HEADER_BYTES 4096u

/* Limits hushd enforces on open-stream (and the plugin's hw_params constraints offer). */
#define HUSH_WIRE_MIN_RATE 8000u
#define HUSH_WIRE_MAX_RATE 192000u
#define HUSH_WIRE_MAX_CHANNELS 2u
#define HUSH_WIRE_MIN_RING_FRAMES 256u
#define HUSH_WIRE_MAX_RING_FRAMES 262144u
/* The most memory a ring may take: the plugin offers no larger buffer, and hushd refuses one ([streams] ring_kib_max
   may lower it). A byte limit, because that is what alsa-lib's ioplug can constrain. */
#define HUSH_WIRE_MAX_RING_BYTES 524288u

enum hush_wire_direction {
    HUSH_WIRE_PLAYBACK = 0,
    HUSH_WIRE_CAPTURE = 1,
};

/* Sample formats, interleaved, little-endian. */
enum hush_wire_format {
    HUSH_WIRE_S16_LE = 1,
    HUSH_WIRE_S32_LE = 2,
    HUSH_WIRE_FLOAT_LE = 3,
};

/* client_flags: what the client tells hushd without a round trip. */
enum hush_wire_client_flag {
    /* The client sleeps on the eventfd until the ring has room (playback) or frames (capture). */
    HUSH_WIRE_CLIENT_WAITING = 1u << 0,
    /* Playback: no more frames will come; an empty ring is the end, not an underrun. */
    HUSH_WIRE_CLIENT_DRAINING = 1u << 1,
};

/* server_state: what hushd does with the stream now. */
enum hush_wire_state {
    /* Opened, not started: nothing is consumed (playback) or produced (capture). */
    HUSH_WIRE_STATE_PREPARED = 0,
    /* Consumed (playback) or produced (capture) at the real rate. */
    HUSH_WIRE_STATE_RUNNING = 1,
    /* Held by the policy (interrupted, unplugged, paused by a media key): playback is not consumed and its
       position and delay are frozen; capture still receives silence at the real rate. */
    HUSH_WIRE_STATE_HELD = 2,
    /* Paused by the application (snd_pcm_pause). */
    HUSH_WIRE_STATE_PAUSED = 3,
    /* The stream is over (hushd stops, or ended it): the plugin fails with -ENODEV. */
    HUSH_WIRE_STATE_CLOSED = 4,
};

/* control_flags: what hushd's control thread tells the client about the stream. */
enum hush_wire_control_flag {
    /* Playback: the stream is at gain 0 (silence switch, R1), still consumed at the real rate. */
    HUSH_WIRE_SERVER_SILENCED = 1u << 0,
};

/* audio_flags: what hushd's audio thread tells the client, in the same snapshot as the period's counters. */
enum hush_wire_audio_flag {
    /* Capture: the frames are the microphone's (else silence: the stream is not allowed to hear it). */
    HUSH_WIRE_SERVER_MICROPHONE = 1u << 1,
};

/*
 * The first page of the memfd: four cache lines, each written by one writer only, so no word is ever
 * read-modified-written by two threads. Accessed through the functions below only.
 *
 *   geometry    hushd's control thread, once, before the memfd is passed; never read back by hushd
 *   client      the client (the application's thread that calls ALSA; ALSA calls a PCM from one at a time)
 *   audio       hushd's audio thread, once per period the stream runs, as one snapshot (hush_wire_publish)
 *   control     hushd's control thread (the policy's decisions: state, silence), whenever they change
 *
 * Whatever the client writes outside its line is overwritten or never read: hushd keeps its own copies of
 * everything it writes (including the snapshot's sequence), and reads only the client's line.
 */
struct hush_wire_header {
    /* Geometry. Writer: hushd's control thread, before the memfd is passed; hushd never reads it back. */
    uint32_t magic;
    uint32_t version;
    uint32_t header_bytes;  /* == HUSH_WIRE_HEADER_BYTES: where the ring starts */
    uint32_t direction;     /* enum hush_wire_direction */
    uint32_t format;        /* enum hush_wire_format */
    uint32_t channels;      /* 1 or 2 */
    uint32_t rate;          /* frames per second */
    uint32_t frame_bytes;   /* channels * sample size */
    uint32_t ring_frames;   /* capacity; the ring is ring_frames * frame_bytes bytes */
    uint32_t period_frames; /* hushd's mixer period at the stream's rate, rounded up: the wake-up granularity */
    uint64_t stream_id;     /* as status and the log name it */
    uint8_t reserved0[16];

    /* Writer: the client only. hushd reads each word once per period and checks it before use. */
    uint64_t client_frames; /* playback: frames written; capture: frames read */
    uint32_t client_flags;  /* enum hush_wire_client_flag */
    uint32_t wake_frames;   /* wake me when this many frames are free (playback) or ready (capture); 0: each period */
    uint8_t reserved1[48];

    /*
     * Writer: hushd's audio thread only, once per period while the stream runs (a paused or held playback stream
     * is not run: its snapshot stays as it was). One snapshot: `sequence` is odd while the words below change, and
     * a reader that sees it odd, or changed across its reads, reads again (hush_wire_read_snapshot).
     */
    uint32_t sequence;
    uint32_t audio_flags;         /* enum hush_wire_audio_flag */
    uint64_t server_frames;       /* playback: frames consumed; capture: frames written */
    uint64_t played_frames;       /* playback: frames that have reached the output device's end */
    uint64_t server_time_ns;      /* CLOCK_MONOTONIC when this snapshot's server_frames was reached */
    uint64_t underrun_frames;     /* playback: frames hushd wanted and the ring did not have (while running) */
    uint64_t overrun_frames;      /* capture: frames dropped because the client did not read them */
    uint32_t delay_frames;        /* playback: frames from server_frames to the speaker (converter, mixer, device) */
    uint32_t current_period_frames; /* hushd's period in force at the stream's rate, rounded up (R24); 0: period_frames */
    uint8_t reserved2[8];

    /* Writer: hushd's control thread only, when the policy's decisions about the stream change. */
    uint32_t server_state;  /* enum hush_wire_state */
    uint32_t control_flags; /* enum hush_wire_control_flag */
    uint8_t reserved3[56];
};

_Static_assert(offsetof(struct hush_wire_header, magic) == 0, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, period_frames) == 36, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, stream_id) == 40, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, client_frames) == 64, "the client's line starts a cache line");
_Static_assert(offsetof(struct hush_wire_header, client_flags) == 72, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, wake_frames) == 76, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, sequence) == 128, "the audio thread's line starts a cache line");
_Static_assert(offsetof(struct hush_wire_header, audio_flags) == 132, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, server_frames) == 136, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, played_frames) == 144, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, server_time_ns) == 152, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, underrun_frames) == 160, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, overrun_frames) == 168, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, delay_frames) == 176, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, current_period_frames) == 180, "hush_wire_header layout");
_Static_assert(offsetof(struct hush_wire_header, server_state) == 192, "the control thread's line starts a cache line");
_Static_assert(offsetof(struct hush_wire_header, control_flags) == 196, "hush_wire_header layout");
_Static_assert(sizeof(struct hush_wire_header) == 256, "hush_wire_header is four cache lines");
_Static_assert(sizeof(struct hush_wire_header) <= HUSH_WIRE_HEADER_BYTES, "the header fits its page");

/* Bytes per sample of a format; 0 for one hush does not know. */
static inline uint32_t hush_wire_sample_bytes(uint32_t format) {
    switch (format) {
    case HUSH_WIRE_S16_LE: return 2;
    case HUSH_WIRE_S32_LE: return 4;
    case HUSH_WIRE_FLOAT_LE: return 4;
    default: return 0;
    }
}

/* Total size of the memfd for a geometry. */
static inline uint64_t hush_wire_total_bytes(uint32_t ring_frames, uint32_t frame_bytes) {
    return (uint64_t)HUSH_WIRE_HEADER_BYTES + (uint64_t)ring_frames * frame_bytes;
}

/* The ring's first byte. */
static inline uint8_t *hush_wire_ring(struct hush_wire_header *header) {
    return (uint8_t *)header + HUSH_WIRE_HEADER_BYTES;
}

/*
 * Shared fields, with the ordering each needs: a counter is stored with release after the frames it covers are
 * written, and loaded with acquire before they are read. Plain integers and compiler builtins, so the struct reads
 * the same in C and in Swift.
 */
static inline uint64_t hush_wire_load64(const uint64_t *field) { return __atomic_load_n(field, __ATOMIC_ACQUIRE); }
static inline void hush_wire_store64(uint64_t *field, uint64_t value) {
    __atomic_store_n(field, value, __ATOMIC_RELEASE);
}
static inline uint32_t hush_wire_load32(const uint32_t *field) { return __atomic_load_n(field, __ATOMIC_ACQUIRE); }
static inline void hush_wire_store32(uint32_t *field, uint32_t value) {
    __atomic_store_n(field, value, __ATOMIC_RELEASE);
}

/* The audio thread's line, as one consistent snapshot. */
struct hush_wire_snapshot {
    uint64_t server_frames;
    uint64_t played_frames;
    uint64_t server_time_ns;
    uint64_t underrun_frames;
    uint64_t overrun_frames;
    uint32_t delay_frames;
    uint32_t audio_flags;
    uint32_t current_period_frames;
};

/*
 * hushd's audio thread only: publishes a period's snapshot. `sequence` is the writer's own count (even; never read
 * back from the shared memory, which the client can write); the next one is returned. The words are stored with
 * release, as single counters were before, so a reader that loads server_frames alone still sees the ring's frames
 * it covers.
 */
static inline uint32_t hush_wire_publish(struct hush_wire_header *header, uint32_t sequence,
                                         const struct hush_wire_snapshot *snapshot) {
    __atomic_store_n(&header->sequence, sequence + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&header->audio_flags, snapshot->audio_flags, __ATOMIC_RELEASE);
    __atomic_store_n(&header->server_frames, snapshot->server_frames, __ATOMIC_RELEASE);
    __atomic_store_n(&header->played_frames, snapshot->played_frames, __ATOMIC_RELEASE);
    __atomic_store_n(&header->server_time_ns, snapshot->server_time_ns, __ATOMIC_RELEASE);
    __atomic_store_n(&header->underrun_frames, snapshot->underrun_frames, __ATOMIC_RELEASE);
    __atomic_store_n(&header->overrun_frames, snapshot->overrun_frames, __ATOMIC_RELEASE);
    __atomic_store_n(&header->delay_frames, snapshot->delay_frames, __ATOMIC_RELEASE);
    __atomic_store_n(&header->current_period_frames, snapshot->current_period_frames, __ATOMIC_RELEASE);
    __atomic_store_n(&header->sequence, sequence + 2, __ATOMIC_RELEASE);
    return sequence + 2;
}

/*
 * Reads the audio thread's line as one snapshot: every word from the same period. True when it is consistent;
 * false when it changed under each of a bounded number of tries (a writer that stopped half-way, which a live
 * hushd never does: a snapshot takes it a few stores), and then `snapshot` holds the last try's words.
 */
static inline int hush_wire_read_snapshot(const struct hush_wire_header *header, struct hush_wire_snapshot *snapshot) {
    for (int attempt = 0; attempt < 1000; attempt++) {
        uint32_t before = __atomic_load_n(&header->sequence, __ATOMIC_ACQUIRE);
        snapshot->audio_flags = __atomic_load_n(&header->audio_flags, __ATOMIC_ACQUIRE);
        snapshot->server_frames = __atomic_load_n(&header->server_frames, __ATOMIC_ACQUIRE);
        snapshot->played_frames = __atomic_load_n(&header->played_frames, __ATOMIC_ACQUIRE);
        snapshot->server_time_ns = __atomic_load_n(&header->server_time_ns, __ATOMIC_ACQUIRE);
        snapshot->underrun_frames = __atomic_load_n(&header->underrun_frames, __ATOMIC_ACQUIRE);
        snapshot->overrun_frames = __atomic_load_n(&header->overrun_frames, __ATOMIC_ACQUIRE);
        snapshot->delay_frames = __atomic_load_n(&header->delay_frames, __ATOMIC_ACQUIRE);
        snapshot->current_period_frames = __atomic_load_n(&header->current_period_frames, __ATOMIC_ACQUIRE);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint32_t after = __atomic_load_n(&header->sequence, __ATOMIC_RELAXED);
        if (before == after && (before & 1u) == 0) return 1;
    }
    return 0;
}

#endif
