/*
 * pcm_hush.c: the `hush` ALSA PCM plugin (libasound_module_pcm_hush.so), an ioplug that carries an application's
 * frames to and from hushd, so `aplay -D hush:music` or mpd with `device "hush:ringtone"` play under hush's policy.
 *
 * Not a SwiftPM target: a .so that SwiftPM links would pull libswiftCore into every program that opens an ALSA
 * device. The Makefile builds it with cc (`make alsa-plugin`); deploy/alsa/ holds its configuration and
 * deploy/install.sh installs both. Plain C11, no thread of its own: ALSA calls a PCM from one thread at a time.
 *
 * One control-socket connection per PCM (docs/protocol.md, "Streams"; the shared memory is CHushWire's
 * hush_wire.h): `hello` at open; `open-stream` at hw_params, answered with a memfd (header + ring) and an eventfd;
 * `stream` actions for start, pause, resume, stop and prepare; `close-stream` at hw_free. Frames go through the
 * ring; counters only grow. The plugin's position (what ioplug calls the hardware pointer) is hushd's
 * server_frames counted from the last prepare, wrapped at ALSA's boundary (SND_PCM_IOPLUG_FLAG_BOUNDARY_WA, so a
 * whole buffer consumed between two looks is never mistaken for none). The application's position is ioplug's
 * appl_ptr, followed as a 64-bit count, so mmap access, rewinds and capture's late commit land where ALSA expects.
 *
 * A lost hushd (killed, stopped, or the stream closed) is noticed by poll (the socket hangs up), by any request,
 * and by each transfer; from then on ALSA sees SND_PCM_STATE_DISCONNECTED and the application gets -ENODEV.
 * Every wait for a reply has a deadline (HUSH_REPLY_TIMEOUT_MS); drain has a deadline that moves while frames play.
 */
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hush_client.h"
#include "hush_wire.h"

/* How long any request waits for hushd's reply. hushd answers from its control loop, within milliseconds. */
#define HUSH_REPLY_TIMEOUT_MS 2000
/* The smallest period offered, in frames (ALSA wakes the application about once a period). */
#define HUSH_MIN_PERIOD_FRAMES 32u
/* The widest and the narrowest frame: S32_LE or FLOAT_LE stereo, and S16_LE mono. */
#define HUSH_MAX_FRAME_BYTES (4u * HUSH_WIRE_MAX_CHANNELS)
#define HUSH_MIN_FRAME_BYTES 2u

/* Categories as hushd spells them, and the aliases that pick a category, a bus and a mode. */
static const struct {
    const char *name;
    const char *category;
    const char *bus;  /* NULL: hushd's default rule */
    const char *mode; /* NULL: default */
} categories[] = {
    {"ambient", "ambient", NULL, NULL},
    {"soloAmbient", "soloAmbient", NULL, NULL},
    {"playback", "playback", NULL, NULL},
    {"record", "record", NULL, NULL},
    {"playAndRecord", "playAndRecord", NULL, NULL},
    {"music", "playback", "music", NULL},
    {"effects", "ambient", "effect", NULL},
    {"ringtone", "soloAmbient", "ringer", NULL},
    {"alarm", "playback", "ringer", NULL},
    {"voice", "playAndRecord", "music", "voiceChat"},
};
/* Session modes as hushd spells them (policy R22). */
static const char *const modes[] = {"default", "voiceChat", "measurement"};
#define CATEGORY_NAMES \
    "ambient, soloAmbient, playback, record, playAndRecord, or an alias: music, effects, ringtone, alarm, voice"

struct hush_pcm {
    snd_pcm_ioplug_t io;
    struct hush_client client;
    char socket_path[512];
    uint64_t last_id;

    /* What the configuration asked for. */
    const char *category;
    char *bus; /* NULL: not given */
    bool mix_with_others;
    bool duck_others;
    bool transient;
    const char *mode; /* NULL: default */
    bool mode_given;  /* MODE= rather than the alias's */
    bool level_given; /* GAIN=: the session's own level (policy R26) */
    int level_tenths; /* in tenths of a dB, -960 to 0 */
    char name[256];
    bool has_session;
    uint64_t session;

    /* The stream, between hw_params and hw_free. */
    bool open;
    uint64_t stream_id;
    struct hush_wire_header *header;
    size_t map_bytes;
    int event_fd;
    uint32_t ring_frames;
    uint32_t frame_bytes;
    uint32_t period_frames; /* hushd's */
    snd_pcm_channel_area_t ring_areas[HUSH_WIRE_MAX_CHANNELS];

    /* Positions, as 64-bit frame counts: `base` is server_frames at the last prepare, where ALSA's pointers are 0. */
    uint64_t base;
    uint64_t client_frames; /* what this side last stored in the header (it is the only writer) */
    uint64_t appl_frames;   /* ioplug's appl_ptr since prepare, unwrapped */
    snd_pcm_uframes_t last_appl;
    uint64_t hw_frames; /* the last position given to ioplug, absolute; never goes back */
    snd_pcm_uframes_t boundary;
    snd_pcm_uframes_t avail_min;
    /* The application's stop threshold (sw_params); 0 until it sets one: the buffer size, ALSA's default. */
    snd_pcm_uframes_t stop_threshold;
    /* hushd's underrun_frames (playback) or overrun_frames (capture) when the stream last began to move: what
       hushd counts after it is this side's lateness (R23). */
    uint64_t late_base;
    bool started;
    /* When the stream last began to move as this side saw it (started, resumed, or found moving after it was
       not): the delay is not interpolated from a snapshot older than that. */
    int64_t moving_since_ns;
    bool disconnected;

    char reply[HUSH_CLIENT_LINE_BYTES];
};

static bool is_playback(const struct hush_pcm *pcm) { return pcm->io.stream == SND_PCM_STREAM_PLAYBACK; }

static int64_t now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static int64_t now_ms(void) { return now_ns() / 1000000; }

/* ---- the eventfd ---- */

/* Empties the eventfd. It is hushd's descriptor too, so its flags stay as hushd set them: poll, then read. */
static void clear_event(struct hush_pcm *pcm) {
    if (pcm->event_fd < 0) return;
    struct pollfd pfd = {.fd = pcm->event_fd, .events = POLLIN};
    if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN)) {
        uint64_t value;
        if (read(pcm->event_fd, &value, sizeof(value)) < 0) {
            /* Nothing to do: the next poll reports it again. */
        }
    }
}

/* Makes the eventfd readable, so a poll returns at once (the application is ready to move frames now). */
static void raise_event(struct hush_pcm *pcm) {
    if (pcm->event_fd < 0) return;
    uint64_t one = 1;
    if (write(pcm->event_fd, &one, sizeof(one)) < 0) {
        /* Only when the counter is full, and then it is readable anyway. */
    }
}

/* ---- losing hushd ---- */

/* hushd closed the connection or ended the stream: from now on ALSA reports the PCM as disconnected. */
static void set_disconnected(struct hush_pcm *pcm) {
    if (!pcm->disconnected) {
        pcm->disconnected = true;
        SNDERR("hush: hushd closed the connection or ended the stream (it stopped or was restarted)");
    }
    snd_pcm_ioplug_set_state(&pcm->io, SND_PCM_STATE_DISCONNECTED);
}

static bool gone(struct hush_pcm *pcm) {
    if (!pcm->disconnected && pcm->client.closed) set_disconnected(pcm);
    if (!pcm->disconnected && pcm->header &&
        hush_wire_load32(&pcm->header->server_state) == HUSH_WIRE_STATE_CLOSED)
        set_disconnected(pcm);
    return pcm->disconnected;
}

/* ---- requests ---- */

static struct hush_line start_request(struct hush_pcm *pcm, char *text, size_t size, const char *command,
                                      uint64_t *id) {
    struct hush_line line = {.text = text, .length = 0, .capacity = size, .overflow = false};
    text[0] = '\0';
    *id = ++pcm->last_id;
    hush_line_raw(&line, "{\"command\":");
    hush_line_string(&line, command);
    hush_line_raw(&line, ",\"id\":");
    hush_line_uint(&line, *id);
    return line;
}

/* The errno for hushd's error code, after the message is shown. */
static int refused(struct hush_pcm *pcm, const char *what) {
    struct hush_json error, value;
    char code[64] = "", message[512] = "";
    if (hush_json_member(hush_json_line(pcm->reply), "error", &error)) {
        if (hush_json_member(error, "code", &value)) hush_json_string(value, code, sizeof(code));
        if (hush_json_member(error, "message", &value)) hush_json_string(value, message, sizeof(message));
    }
    if (message[0]) {
        SNDERR("hush: %s", message);
    } else {
        SNDERR("hush: hushd refused %s (%s)", what, code[0] ? code : "no reason given");
    }
    if (strcmp(code, "invalid-value") == 0) return -EINVAL;
    if (strncmp(code, "too-many-", 9) == 0) return -EBUSY;
    if (strcmp(code, "not-permitted") == 0) return -EPERM;
    return -EIO;
}

/* Sends the request in `line` (closing it) and waits for its reply in pcm->reply. 0 when hushd said ok. */
static int request(struct hush_pcm *pcm, struct hush_line *line, uint64_t id, const char *what) {
    if (pcm->disconnected || pcm->client.closed) {
        gone(pcm);
        return -ENODEV;
    }
    hush_line_raw(line, "}\n");
    if (line->overflow) {
        SNDERR("hush: the %s request is too long (a name or bus of that length?)", what);
        return -EINVAL;
    }
    int error = hush_client_send(&pcm->client, line->text, line->length, HUSH_REPLY_TIMEOUT_MS);
    if (error == 0) error = hush_client_reply(&pcm->client, id, pcm->reply, sizeof(pcm->reply), HUSH_REPLY_TIMEOUT_MS);
    if (error == -ENODEV) {
        set_disconnected(pcm);
        return -ENODEV;
    }
    if (error == -ETIMEDOUT) {
        SNDERR("hush: hushd did not answer %s within %d ms (is it stopped?)", what, HUSH_REPLY_TIMEOUT_MS);
        return -ETIMEDOUT;
    }
    if (error < 0) {
        SNDERR("hush: %s: %s", what, strerror(-error));
        return error;
    }
    struct hush_json value;
    bool ok = false;
    if (!hush_json_member(hush_json_line(pcm->reply), "ok", &value) || !hush_json_bool(value, &ok)) {
        SNDERR("hush: hushd's reply to %s is not what hush expects: %.200s", what, pcm->reply);
        return -EPROTO;
    }
    return ok ? 0 : refused(pcm, what);
}

static int stream_action(struct hush_pcm *pcm, const char *action) {
    if (!pcm->open) return -EBADFD;
    char text[256], what[32];
    uint64_t id;
    struct hush_line line = start_request(pcm, text, sizeof(text), "stream", &id);
    hush_line_raw(&line, ",\"stream\":");
    hush_line_uint(&line, pcm->stream_id);
    hush_line_raw(&line, ",\"action\":");
    hush_line_string(&line, action);
    snprintf(what, sizeof(what), "'%s'", action);
    return request(pcm, &line, id, what);
}

/* ---- the stream ---- */

static void unmap_stream(struct hush_pcm *pcm) {
    if (pcm->header) munmap(pcm->header, pcm->map_bytes);
    if (pcm->event_fd >= 0) close(pcm->event_fd);
    pcm->header = NULL;
    pcm->event_fd = -1;
    pcm->open = false;
    pcm->started = false;
}

static void close_stream(struct hush_pcm *pcm) {
    if (!pcm->open) return;
    if (!pcm->disconnected) {
        char text[128];
        uint64_t id;
        struct hush_line line = start_request(pcm, text, sizeof(text), "close-stream", &id);
        hush_line_raw(&line, ",\"stream\":");
        hush_line_uint(&line, pcm->stream_id);
        request(pcm, &line, id, "close-stream");
    }
    unmap_stream(pcm);
}

/* Asks hushd to forget a stream this side could not use (its reply is not waited for beyond the usual). */
static void abandon_stream(struct hush_pcm *pcm, uint64_t stream_id) {
    char text[128];
    uint64_t id;
    struct hush_line line = start_request(pcm, text, sizeof(text), "close-stream", &id);
    hush_line_raw(&line, ",\"stream\":");
    hush_line_uint(&line, stream_id);
    request(pcm, &line, id, "close-stream");
}

/* The eventfd hushd passed is one: polling a memfd instead would spin. Unknowable without /proc: trusted then. */
static bool is_eventfd(int fd) {
    char path[64], target[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n < 0) return true;
    target[n] = '\0';
    return strcmp(target, "anon_inode:[eventfd]") == 0;
}

/* Checks the memfd's header against what was asked. NULL, or what is wrong. */
static const char *check_header(const struct hush_pcm *pcm, const struct hush_wire_header *header,
                                uint32_t format, uint64_t stream_id) {
    if (header->magic != HUSH_WIRE_MAGIC) return "its magic number is wrong";
    if (header->version != HUSH_WIRE_VERSION) return "its version is not the one this plugin speaks";
    if (header->header_bytes != HUSH_WIRE_HEADER_BYTES) return "its header size is wrong";
    if (header->direction != (is_playback(pcm) ? HUSH_WIRE_PLAYBACK : HUSH_WIRE_CAPTURE)) return "its direction is not this stream's";
    if (header->format != format) return "its sample format is not the one asked for";
    if (header->channels != pcm->io.channels) return "its channel count is not the one asked for";
    if (header->rate != pcm->io.rate) return "its rate is not the one asked for";
    if (header->frame_bytes != pcm->frame_bytes) return "its frame size is wrong";
    if (header->ring_frames != pcm->io.buffer_size) return "its ring is not the buffer size asked for";
    if (header->stream_id != stream_id) return "its stream id is not the one in the reply";
    return NULL;
}

/*
 * open-stream's fields, after start_request's: what the configuration asked for (category, bus, options,
 * transient, name, session) and the geometry the application chose. Tests/alsa-plugin/request_lines.c prints these
 * lines for the Swift parser (PluginRequestLineTests), so the plugin's table and hushd's cannot drift apart.
 */
static void open_stream_fields(struct hush_line *line, const struct hush_pcm *pcm, bool playback, unsigned int rate,
                               unsigned int channels, const char *format_name, uint64_t buffer_frames,
                               uint64_t period_frames) {
    hush_line_raw(line, ",\"direction\":");
    hush_line_string(line, playback ? "playback" : "capture");
    hush_line_raw(line, ",\"category\":");
    hush_line_string(line, pcm->category);
    if (pcm->bus) {
        hush_line_raw(line, ",\"bus\":");
        hush_line_string(line, pcm->bus);
    }
    if (pcm->mix_with_others || pcm->duck_others) {
        hush_line_raw(line, ",\"options\":[");
        if (pcm->mix_with_others) hush_line_raw(line, "\"mixWithOthers\"");
        if (pcm->mix_with_others && pcm->duck_others) hush_line_raw(line, ",");
        if (pcm->duck_others) hush_line_raw(line, "\"duckOthers\"");
        hush_line_raw(line, "]");
    }
    if (pcm->transient) hush_line_raw(line, ",\"transient\":true");
    /* An alias's mode describes a session to activate; MODE= is always sent, so hushd can refuse it with SESSION. */
    if (pcm->mode && (pcm->mode_given || !pcm->has_session)) {
        hush_line_raw(line, ",\"mode\":");
        hush_line_string(line, pcm->mode);
    }
    /* Always sent when given, so hushd can refuse it with SESSION (a joined session keeps its own level). */
    if (pcm->level_given) {
        char number[16];
        int tenths = pcm->level_tenths < 0 ? -pcm->level_tenths : pcm->level_tenths;
        if (tenths % 10)
            snprintf(number, sizeof(number), "%s%d.%d", pcm->level_tenths < 0 ? "-" : "", tenths / 10, tenths % 10);
        else
            snprintf(number, sizeof(number), "%s%d", pcm->level_tenths < 0 ? "-" : "", tenths / 10);
        hush_line_raw(line, ",\"gain\":");
        hush_line_raw(line, number);
    }
    hush_line_raw(line, ",\"name\":");
    hush_line_string(line, pcm->name);
    if (pcm->has_session) {
        hush_line_raw(line, ",\"session\":");
        hush_line_uint(line, pcm->session);
    }
    hush_line_raw(line, ",\"rate\":");
    hush_line_uint(line, rate);
    hush_line_raw(line, ",\"channels\":");
    hush_line_uint(line, channels);
    hush_line_raw(line, ",\"format\":");
    hush_line_string(line, format_name);
    hush_line_raw(line, ",\"bufferFrames\":");
    hush_line_uint(line, buffer_frames);
    hush_line_raw(line, ",\"periodFrames\":");
    hush_line_uint(line, period_frames);
}

static void rebase_late(struct hush_pcm *pcm);

static int hush_hw_params(snd_pcm_ioplug_t *io, snd_pcm_hw_params_t *params) {
    (void)params;
    struct hush_pcm *pcm = io->private_data;
    close_stream(pcm); /* hw_params again without hw_free: the old stream goes first */
    if (gone(pcm)) return -ENODEV;

    const char *format_name;
    uint32_t format;
    switch (io->format) {
    case SND_PCM_FORMAT_S16_LE: format_name = "S16_LE", format = HUSH_WIRE_S16_LE; break;
    case SND_PCM_FORMAT_S32_LE: format_name = "S32_LE", format = HUSH_WIRE_S32_LE; break;
    case SND_PCM_FORMAT_FLOAT_LE: format_name = "FLOAT_LE", format = HUSH_WIRE_FLOAT_LE; break;
    default: SNDERR("hush: sample format %s is not one hushd takes", snd_pcm_format_name(io->format)); return -EINVAL;
    }
    uint32_t sample_bytes = hush_wire_sample_bytes(format);
    pcm->frame_bytes = sample_bytes * io->channels;
    if (io->buffer_size < HUSH_WIRE_MIN_RING_FRAMES || io->buffer_size > HUSH_WIRE_MAX_RING_FRAMES) {
        SNDERR("hush: a buffer of %lu frames is outside what hushd takes (%u to %u frames)",
               (unsigned long)io->buffer_size, HUSH_WIRE_MIN_RING_FRAMES, HUSH_WIRE_MAX_RING_FRAMES);
        return -EINVAL;
    }

    char text[1024];
    uint64_t id;
    struct hush_line line = start_request(pcm, text, sizeof(text), "open-stream", &id);
    open_stream_fields(&line, pcm, is_playback(pcm), io->rate, io->channels, format_name, io->buffer_size,
                       io->period_size);

    int fds[HUSH_CLIENT_MAX_FDS] = {-1, -1};
    int error = request(pcm, &line, id, "open-stream");
    bool lost = pcm->client.fds_lost;
    pcm->client.fds_lost = false;
    int count = hush_client_take_fds(&pcm->client, fds, HUSH_CLIENT_MAX_FDS);
    if (error < 0) {
        for (int i = 0; i < count; i++) close(fds[i]);
        return error;
    }

    /* The reply: {"id":N,"ok":true,"stream":{"id":S,"periodFrames":p,"ringFrames":r,"session":s}}. */
    struct hush_json stream, value;
    uint64_t stream_id = 0, ring_frames = 0, period_frames = 0;
    const char *problem = NULL;
    if (!hush_json_member(hush_json_line(pcm->reply), "stream", &stream) ||
        !hush_json_member(stream, "id", &value) || !hush_json_uint(value, &stream_id) ||
        !hush_json_member(stream, "ringFrames", &value) || !hush_json_uint(value, &ring_frames)) {
        problem = "the reply has no stream id or ringFrames";
    } else if (hush_json_member(stream, "periodFrames", &value) && !hush_json_uint(value, &period_frames)) {
        problem = "the reply's periodFrames is not a whole number";
    } else if (ring_frames != io->buffer_size) {
        problem = "the reply's ringFrames is not the buffer size asked for";
    } else if (count != 2 || lost) {
        problem = "it did not come with two descriptors (a memfd and an eventfd)";
    } else if (!is_eventfd(fds[1])) {
        problem = "its second descriptor is not an eventfd";
    }

    uint64_t total = hush_wire_total_bytes((uint32_t)io->buffer_size, pcm->frame_bytes);
    void *map = MAP_FAILED;
    if (!problem) {
        struct stat status;
        int seals = fcntl(fds[0], F_GET_SEALS);
        if (fstat(fds[0], &status) < 0 || (uint64_t)status.st_size < total) {
            problem = "its memfd is smaller than the header and the ring";
        } else if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
            /* A memfd that can shrink could make every access here fault (SIGBUS) in the application. */
            problem = "its memfd is not sealed against shrinking";
        } else {
            map = mmap(NULL, (size_t)total, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
            if (map == MAP_FAILED) problem = "its memfd cannot be mapped";
        }
    }
    if (!problem) problem = check_header(pcm, map, format, stream_id);
    if (count > 0) close(fds[0]); /* the mapping keeps the memory */
    if (problem) {
        SNDERR("hush: hushd's answer to open-stream does not match what was asked: %s", problem);
        if (map != MAP_FAILED) munmap(map, (size_t)total);
        if (count > 1) close(fds[1]);
        if (stream_id) abandon_stream(pcm, stream_id);
        return -EPROTO;
    }

    pcm->header = map;
    pcm->map_bytes = (size_t)total;
    pcm->event_fd = fds[1];
    pcm->stream_id = stream_id;
    pcm->ring_frames = (uint32_t)ring_frames;
    pcm->period_frames = (uint32_t)period_frames;
    pcm->open = true;
    pcm->started = false;
    for (unsigned c = 0; c < io->channels; c++) {
        pcm->ring_areas[c] = (snd_pcm_channel_area_t){
            .addr = hush_wire_ring(pcm->header), .first = c * sample_bytes * 8, .step = pcm->frame_bytes * 8};
    }
    hush_wire_store32(&pcm->header->client_flags, 0);
    hush_wire_store32(&pcm->header->wake_frames, (uint32_t)pcm->avail_min);
    /* As after a prepare; ALSA prepares next anyway. */
    pcm->base = pcm->client_frames = pcm->hw_frames = hush_wire_load64(&pcm->header->server_frames);
    hush_wire_store64(&pcm->header->client_frames, pcm->client_frames);
    pcm->appl_frames = 0;
    pcm->last_appl = io->appl_ptr;
    pcm->stop_threshold = 0; /* until sw_params says: the buffer size */
    rebase_late(pcm);
    return 0;
}

static int hush_hw_free(snd_pcm_ioplug_t *io) {
    close_stream(io->private_data);
    return 0;
}

static int hush_sw_params(snd_pcm_ioplug_t *io, snd_pcm_sw_params_t *params) {
    struct hush_pcm *pcm = io->private_data;
    snd_pcm_uframes_t avail_min = 0, boundary = 0;
    snd_pcm_uframes_t stop = 0;
    snd_pcm_sw_params_get_avail_min(params, &avail_min);
    snd_pcm_sw_params_get_boundary(params, &boundary);
    snd_pcm_sw_params_get_stop_threshold(params, &stop);
    if (boundary) pcm->boundary = boundary;
    pcm->stop_threshold = stop;
    pcm->avail_min = avail_min < io->buffer_size ? avail_min : io->buffer_size;
    if (pcm->header) hush_wire_store32(&pcm->header->wake_frames, (uint32_t)pcm->avail_min);
    return 0;
}

/* Follows ioplug's appl_ptr (which wraps at the boundary and may step back on a rewind) as a 64-bit count. */
static void follow_appl(struct hush_pcm *pcm) {
    snd_pcm_uframes_t appl = pcm->io.appl_ptr, boundary = pcm->boundary ? pcm->boundary : pcm->io.buffer_size;
    snd_pcm_uframes_t forward = appl >= pcm->last_appl ? appl - pcm->last_appl : appl + boundary - pcm->last_appl;
    if (forward <= boundary / 2) {
        pcm->appl_frames += forward;
    } else {
        uint64_t back = boundary - forward;
        pcm->appl_frames = back < pcm->appl_frames ? pcm->appl_frames - back : 0;
    }
    pcm->last_appl = appl;
}

/* Capture: what the application has read is hushd's room (only ever grows). */
static void publish_read(struct hush_pcm *pcm, uint64_t position) {
    if (position > pcm->client_frames) {
        pcm->client_frames = position;
        hush_wire_store64(&pcm->header->client_frames, position);
    }
}

static snd_pcm_sframes_t position(const struct hush_pcm *pcm, uint64_t frames) {
    snd_pcm_uframes_t boundary = pcm->boundary ? pcm->boundary : pcm->io.buffer_size;
    return (snd_pcm_sframes_t)((frames - pcm->base) % boundary);
}

/*
 * hushd's server_frames, never below `base`: after a prepare hushd continues from the position its reply gave,
 * but its audio thread publishes that position only when it next runs the stream (not before a start).
 */
static uint64_t server_frames(const struct hush_pcm *pcm) {
    uint64_t server = hush_wire_load64(&pcm->header->server_frames);
    return server < pcm->base ? pcm->base : server;
}

/*
 * ALSA's underrun contract (R23). hushd judges: while a stream's frames move at the real rate, it counts the frames it
 * wanted from an empty playback ring (underrun_frames) or had to drop into a full capture ring (overrun_frames); a
 * held, paused or draining stream is not counted. What it counted since the stream last began to move is this
 * side's lateness, and it becomes ALSA's XRUN as the kernel makes it one for a sound card: when `avail` reaches the
 * stop threshold. So the next write or read fails with -EPIPE and snd_pcm_prepare recovers, as aplay and GStreamer
 * expect; a program that set its stop threshold to the boundary asked never to be stopped, and is not.
 */
static uint64_t late_counter(const struct hush_pcm *pcm) {
    return hush_wire_load64(is_playback(pcm) ? &pcm->header->underrun_frames : &pcm->header->overrun_frames);
}

/* Lateness counts from here: the stream begins to move (started, resumed) or the application recovered. */
static void rebase_late(struct hush_pcm *pcm) {
    if (pcm->open) pcm->late_base = late_counter(pcm);
}

/* Whether the stream is in XRUN now, by its stop threshold; `server` is hushd's position. */
static bool late(struct hush_pcm *pcm, uint64_t server) {
    if (!pcm->open || pcm->io.state != SND_PCM_STATE_RUNNING) return false;
    snd_pcm_uframes_t boundary = pcm->boundary ? pcm->boundary : pcm->io.buffer_size;
    snd_pcm_uframes_t stop = pcm->stop_threshold ? pcm->stop_threshold : pcm->io.buffer_size;
    if (stop >= boundary) return false; /* never stop: the program's own choice */
    uint64_t counted = late_counter(pcm);
    uint64_t missed = counted > pcm->late_base ? counted - pcm->late_base : 0;
    /* avail as the kernel has it: room to write (playback) or frames to read (capture). */
    uint64_t avail;
    if (is_playback(pcm)) {
        uint64_t queued = pcm->client_frames > server ? pcm->client_frames - server : 0;
        avail = queued < pcm->ring_frames ? pcm->ring_frames - queued : 0;
    } else {
        follow_appl(pcm);
        uint64_t at = pcm->base + pcm->appl_frames;
        avail = server > at ? server - at : 0;
    }
    /* The default: hushd found the ring dry (or full) while it ran; hushd's count and this one agree. */
    if (missed > 0 && stop <= pcm->ring_frames) return true;
    /* Below the buffer, the kernel's own rule: XRUN once avail reaches it. */
    if (stop < pcm->ring_frames && avail >= stop) return true;
    /* Above it, that many frames of starvation pass (what went missing counts as avail, as on a card)... */
    if (missed > 0 && avail + missed >= stop) return true;
    /* ...and are forgotten once the application has caught up. */
    if (missed > 0 && avail < pcm->ring_frames) pcm->late_base = counted;
    return false;
}

static snd_pcm_sframes_t hush_pointer(snd_pcm_ioplug_t *io) {
    struct hush_pcm *pcm = io->private_data;
    if (!pcm->open) return 0;
    /*
     * The position is hushd's own counter, never interpolated (only the delay is, hush_delay): for playback it
     * says which part of the ring is free, and a position ahead of what hushd consumed would offer room that is
     * not.
     */
    /*
     * A lost hushd is a state, not an error: a negative return would make ioplug report an xrun (-EPIPE) and the
     * application would try to recover; DISCONNECTED makes the next transfer or wait return -ENODEV (as
     * bluez-alsa's bluealsa_pointer does).
     */
    if (gone(pcm)) return position(pcm, pcm->hw_frames);
    uint64_t server = server_frames(pcm);
    if (is_playback(pcm)) {
        /* Never past what was written, whatever the header says. */
        if (server > pcm->client_frames) server = pcm->client_frames;
        if (io->state == SND_PCM_STATE_DRAINING) {
            /* While draining, the position is what has been heard: ioplug ends the drain when it reaches the end. */
            uint64_t played = hush_wire_load64(&pcm->header->played_frames);
            if (played < server) server = played;
        }
    } else {
        follow_appl(pcm);
        publish_read(pcm, pcm->base + pcm->appl_frames);
    }
    /* ioplug turns a negative position into XRUN: the next transfer fails with -EPIPE (R23). */
    if (late(pcm, server)) return -EPIPE;
    if (server > pcm->hw_frames) pcm->hw_frames = server;
    return position(pcm, pcm->hw_frames);
}

static snd_pcm_sframes_t hush_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
                                       snd_pcm_uframes_t offset, snd_pcm_uframes_t size) {
    struct hush_pcm *pcm = io->private_data;
    if (!pcm->open) return -EBADFD;
    /* Events are read here too, for applications that never poll; a closed socket shows up the same way. */
    if (hush_client_discard(&pcm->client) < 0 || gone(pcm)) {
        gone(pcm);
        return -ENODEV;
    }
    follow_appl(pcm);
    uint64_t at = pcm->base + pcm->appl_frames;
    uint64_t server = server_frames(pcm);
    uint64_t count;
    if (is_playback(pcm)) {
        /* Frames before server_frames are consumed; the ring holds ring_frames from there. */
        uint64_t limit = server + pcm->ring_frames;
        count = at < limit ? limit - at : 0;
    } else {
        count = server > at ? server - at : 0;
    }
    if (count > size) count = size;
    for (uint64_t done = 0; done < count;) {
        uint64_t index = (at + done) % pcm->ring_frames;
        uint64_t piece = pcm->ring_frames - index;
        if (piece > count - done) piece = count - done;
        if (is_playback(pcm)) {
            snd_pcm_areas_copy(pcm->ring_areas, index, areas, offset + done, io->channels, piece, io->format);
        } else {
            snd_pcm_areas_copy(areas, offset + done, pcm->ring_areas, index, io->channels, piece, io->format);
        }
        done += piece;
    }
    if (is_playback(pcm)) {
        /* Release: hushd sees the count only after the frames it covers. */
        if (at + count > pcm->client_frames) {
            pcm->client_frames = at + count;
            hush_wire_store64(&pcm->header->client_frames, pcm->client_frames);
        }
    } else if (io->access == SND_PCM_ACCESS_RW_INTERLEAVED) {
        /* readi moves appl_ptr by what is returned; with mmap the application commits later (follow_appl). */
        publish_read(pcm, at + count);
    }
    return (snd_pcm_sframes_t)count;
}

/*
 * Frames the device has played (or the microphone captured) since hushd's last snapshot, by the clock. hushd's
 * audio thread publishes once a period; between two, the delay would stand still and then jump by a period, so it
 * is interpolated from how long ago the snapshot was taken — or the stream began to move, if that was later (a
 * snapshot from before a pause says nothing about the time since) — at most one period (a late hushd is not a fast
 * device). None while the stream does not move: not running here, paused by the application, or held by the
 * policy (a held capture stream still receives silence at the real rate); then the delay is the snapshot's.
 */
static uint64_t frames_since_snapshot(struct hush_pcm *pcm, const struct hush_wire_snapshot *snapshot) {
    int64_t now = now_ns();
    uint32_t state = hush_wire_load32(&pcm->header->server_state);
    bool moving = (pcm->io.state == SND_PCM_STATE_RUNNING || pcm->io.state == SND_PCM_STATE_DRAINING) &&
                  (state == HUSH_WIRE_STATE_RUNNING || (!is_playback(pcm) && state == HUSH_WIRE_STATE_HELD));
    if (!moving) {
        pcm->moving_since_ns = now;
        return 0;
    }
    /* The period in force when the snapshot was taken (R24: it grows while music plays alone). */
    uint64_t period = snapshot->current_period_frames != 0 ? snapshot->current_period_frames : pcm->period_frames;
    if (snapshot->server_time_ns == 0 || period == 0 || pcm->io.rate == 0) return 0;
    int64_t since = (int64_t)snapshot->server_time_ns;
    if (since < pcm->moving_since_ns) since = pcm->moving_since_ns;
    if (now <= since) return 0;
    uint64_t frames = (uint64_t)(now - since) * pcm->io.rate / 1000000000ull;
    return frames < period ? frames : period;
}

static int hush_delay(snd_pcm_ioplug_t *io, snd_pcm_sframes_t *delay) {
    struct hush_pcm *pcm = io->private_data;
    *delay = 0;
    if (gone(pcm)) return -ENODEV;
    if (!pcm->open) return 0;
    /* One snapshot: server_frames, delay_frames and their time from the same period. */
    struct hush_wire_snapshot snapshot;
    hush_wire_read_snapshot(pcm->header, &snapshot);
    uint64_t server = snapshot.server_frames < pcm->base ? pcm->base : snapshot.server_frames;
    uint64_t moved = frames_since_snapshot(pcm, &snapshot);
    if (is_playback(pcm)) {
        /* Written and not yet consumed, plus hushd's own way to the speaker, less what played since. */
        if (server > pcm->client_frames) server = pcm->client_frames;
        uint64_t queued = pcm->client_frames - server + snapshot.delay_frames;
        *delay = (snd_pcm_sframes_t)(queued > moved ? queued - moved : 0);
    } else {
        /* Captured and not yet read, including what the microphone has taken since the snapshot. */
        follow_appl(pcm);
        uint64_t read = pcm->base + pcm->appl_frames;
        *delay = server > read ? (snd_pcm_sframes_t)(server - read + moved) : (snd_pcm_sframes_t)moved;
    }
    /* Late (R23): XRUN now, as the kernel's delay (which updates the hardware pointer first) finds it. */
    if (io->state != SND_PCM_STATE_XRUN && late(pcm, server)) snd_pcm_ioplug_set_state(io, SND_PCM_STATE_XRUN);
    return io->state == SND_PCM_STATE_XRUN ? -EPIPE : 0;
}

static int hush_prepare(snd_pcm_ioplug_t *io) {
    struct hush_pcm *pcm = io->private_data;
    if (gone(pcm)) return -ENODEV;
    if (!pcm->open) return -EBADFD;
    /*
     * hushd discards what the ring holds and answers with the position both sides continue from (playback: this
     * side's client_frames, which hushd's consumption jumps to; capture: what hushd has written, which reading
     * skips to). ALSA's pointers start again from 0 there. Without a position: the same rule, from the header.
     */
    int error = stream_action(pcm, "prepare");
    if (error < 0) return error;
    struct hush_json value;
    uint64_t position;
    if (!hush_json_member(hush_json_line(pcm->reply), "position", &value) || !hush_json_uint(value, &position))
        position = is_playback(pcm) ? pcm->client_frames : hush_wire_load64(&pcm->header->server_frames);
    if (position < pcm->client_frames) position = pcm->client_frames; /* counters only grow */
    hush_wire_store32(&pcm->header->client_flags, 0);
    pcm->started = false;
    pcm->base = pcm->client_frames = pcm->hw_frames = position;
    hush_wire_store64(&pcm->header->client_frames, pcm->client_frames);
    pcm->appl_frames = 0;
    pcm->last_appl = io->appl_ptr;
    rebase_late(pcm);
    /* Playback may write a whole buffer now, so a poll must not wait; capture has nothing until started. */
    if (is_playback(pcm)) {
        raise_event(pcm);
    } else {
        clear_event(pcm);
    }
    return 0;
}

static int hush_start(snd_pcm_ioplug_t *io) {
    struct hush_pcm *pcm = io->private_data;
    if (gone(pcm)) return -ENODEV;
    /* Waiting first, so hushd wakes this side from its first period. */
    hush_wire_store32(&pcm->header->client_flags, HUSH_WIRE_CLIENT_WAITING);
    /* hushd judges the stream from this start (R23): nothing before it was this side's lateness. */
    rebase_late(pcm);
    int error = stream_action(pcm, "start");
    if (error < 0) {
        if (pcm->header) hush_wire_store32(&pcm->header->client_flags, 0);
        return error;
    }
    pcm->started = true;
    pcm->moving_since_ns = now_ns();
    return 0;
}

static int hush_stop(snd_pcm_ioplug_t *io) {
    struct hush_pcm *pcm = io->private_data;
    if (!pcm->open) return 0;
    /* ALSA drops again at close; a stream that is not running has nothing to stop (prepare discards the rest). The
       stop first: until hushd has it, the stream is judged (R23), and a drained ring without the draining flag
       would be an underrun nobody caused. */
    if (pcm->started && !gone(pcm)) stream_action(pcm, "stop");
    hush_wire_store32(&pcm->header->client_flags, 0);
    pcm->started = false;
    /* Someone polling after a drop must not sleep forever. */
    raise_event(pcm);
    return 0;
}

static int hush_pause(snd_pcm_ioplug_t *io, int enable) {
    struct hush_pcm *pcm = io->private_data;
    if (gone(pcm)) return -ENODEV;
    /* A paused stream is not judged (R23); whatever hushd counted before the resume is not this side's. */
    if (!enable) rebase_late(pcm);
    int error = stream_action(pcm, enable ? "pause" : "resume");
    if (error < 0) return error;
    pcm->moving_since_ns = now_ns();
    raise_event(pcm);
    return 0;
}

/* Frames written and not yet heard. */
static uint64_t unplayed(const struct hush_pcm *pcm) {
    uint64_t played = hush_wire_load64(&pcm->header->played_frames);
    return played < pcm->client_frames ? pcm->client_frames - played : 0;
}

/* How long to wait for `frames` to be heard before giving up: their time, hushd's way out, and a second more. */
static int64_t drain_allowance_ms(const struct hush_pcm *pcm, uint64_t frames) {
    uint64_t ahead = frames + hush_wire_load32(&pcm->header->delay_frames) + 2ull * pcm->period_frames;
    return (int64_t)(ahead * 1000 / pcm->io.rate) + 1000;
}

static int hush_drain(snd_pcm_ioplug_t *io) {
    struct hush_pcm *pcm = io->private_data;
    if (gone(pcm)) return -ENODEV;
    if (!pcm->open || !is_playback(pcm)) return 0; /* capture: ioplug drops the stream */
    hush_wire_store32(&pcm->header->client_flags, HUSH_WIRE_CLIENT_WAITING | HUSH_WIRE_CLIENT_DRAINING);
    /* Drained before reaching the start threshold: what was written still has to play. */
    if (!pcm->started) {
        int error = stream_action(pcm, "start");
        if (error < 0) return error;
        pcm->started = true;
    }
    if (io->nonblock) return unplayed(pcm) == 0 ? 0 : -EAGAIN;

    uint64_t last_played = hush_wire_load64(&pcm->header->played_frames);
    int64_t deadline = now_ms() + drain_allowance_ms(pcm, unplayed(pcm));
    for (;;) {
        if (hush_client_discard(&pcm->client) < 0 || gone(pcm)) {
            gone(pcm);
            return -ENODEV;
        }
        uint64_t left = unplayed(pcm);
        if (left == 0) return 0;
        uint64_t played = hush_wire_load64(&pcm->header->played_frames);
        uint32_t state = hush_wire_load32(&pcm->header->server_state);
        int64_t now = now_ms();
        /* Progress, or a stream the policy holds (a paused device): the deadline moves. */
        if (played != last_played || state == HUSH_WIRE_STATE_HELD) {
            last_played = played;
            deadline = now + drain_allowance_ms(pcm, left);
        }
        if (now >= deadline) {
            SNDERR("hush: drain gave up: hushd played nothing for %" PRId64 " ms with %" PRIu64 " frames left",
                   drain_allowance_ms(pcm, left), left);
            hush_stop(io);
            snd_pcm_ioplug_set_state(io, SND_PCM_STATE_SETUP);
            return -EIO;
        }
        /* Sleep until hushd wakes us, or until these frames should have been heard (if it does not). */
        int64_t wait = (int64_t)(left * 1000 / io->rate);
        wait = wait < 5 ? 5 : wait > 200 ? 200 : wait;
        if (wait > deadline - now) wait = deadline - now;
        struct pollfd pfds[2] = {{.fd = pcm->event_fd, .events = POLLIN}, {.fd = pcm->client.fd, .events = POLLIN}};
        if (poll(pfds, 2, (int)wait) < 0) {
            if (errno != EINTR) return -errno;
            if (io->nonblock == 2) return 0; /* snd_pcm_abort: stop waiting, ioplug drops the stream */
            continue;
        }
        if (pfds[0].revents & POLLIN) clear_event(pcm);
    }
}

static int hush_poll_descriptors_count(snd_pcm_ioplug_t *io) {
    (void)io;
    return 2;
}

static int hush_poll_descriptors(snd_pcm_ioplug_t *io, struct pollfd *pfds, unsigned int space) {
    struct hush_pcm *pcm = io->private_data;
    if (space < 2) return -EINVAL;
    /* The eventfd (hushd: frames moved) and the socket (events; a hang-up when hushd is gone). */
    pfds[0] = (struct pollfd){.fd = pcm->event_fd, .events = POLLIN};
    pfds[1] = (struct pollfd){.fd = pcm->client.fd, .events = POLLIN};
    return 2;
}

/* Frames the application may move now: room to write (playback) or frames to read (capture). */
static uint64_t avail_frames(struct hush_pcm *pcm) {
    follow_appl(pcm);
    uint64_t at = pcm->base + pcm->appl_frames;
    uint64_t server = server_frames(pcm);
    if (is_playback(pcm)) {
        uint64_t queued = at > server ? at - server : 0;
        return queued < pcm->ring_frames ? pcm->ring_frames - queued : 0;
    }
    return server > at ? server - at : 0;
}

static int hush_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfds, unsigned int nfds,
                             unsigned short *revents) {
    struct hush_pcm *pcm = io->private_data;
    *revents = 0;
    /* By descriptor, not by place: an application's event loop may hand back only the descriptors that fired, or
       in its own order (mpd's does). */
    for (unsigned int i = 0; i < nfds; i++) {
        if (pfds[i].fd < 0 || !pfds[i].revents) continue;
        if (pfds[i].fd == pcm->event_fd && (pfds[i].revents & POLLIN)) clear_event(pcm);
        if (pfds[i].fd == pcm->client.fd && hush_client_discard(&pcm->client) < 0) gone(pcm);
    }
    if (gone(pcm)) {
        *revents = POLLERR | POLLHUP; /* alsa-lib turns this into -ENODEV from the DISCONNECTED state */
        return 0;
    }
    unsigned short ready = is_playback(pcm) ? POLLOUT : POLLIN;
    if (!pcm->open) {
        *revents = ready | POLLERR;
        return 0;
    }
    switch (io->state) {
    case SND_PCM_STATE_PREPARED:
    case SND_PCM_STATE_RUNNING:
    case SND_PCM_STATE_PAUSED:
        /* Late (R23): XRUN before POLLERR, so snd_pcm_wait answers -EPIPE (from the state), not -EIO. */
        if (late(pcm, server_frames(pcm))) {
            snd_pcm_ioplug_set_state(io, SND_PCM_STATE_XRUN);
            *revents = ready | POLLERR;
            break;
        }
        /* As the kernel's snd_pcm_poll: ready when avail_min frames can move. */
        if (avail_frames(pcm) >= (pcm->avail_min ? pcm->avail_min : 1)) *revents = ready;
        break;
    case SND_PCM_STATE_DRAINING:
        /* However the drain began (a non-blocking one may not have reached hush_drain), tell hushd, so it takes
           the empty ring as the end, not an underrun, and keeps waking this side until all is played. */
        if (is_playback(pcm)) {
            hush_wire_store32(&pcm->header->client_flags, HUSH_WIRE_CLIENT_WAITING | HUSH_WIRE_CLIENT_DRAINING);
        }
        if (!is_playback(pcm) || unplayed(pcm) == 0) {
            /* A non-blocking drain is over when the last frame has been played: the PCM leaves DRAINING as a
               device's does, for applications that wait for the state to change (mpd calls snd_pcm_drain once,
               then polls until snd_pcm_state says SETUP). */
            if (is_playback(pcm) && io->nonblock) {
                hush_stop(io);
                snd_pcm_ioplug_set_state(io, SND_PCM_STATE_SETUP);
            }
            *revents = ready;
        }
        break;
    default:
        *revents = ready | POLLERR;
        break;
    }
    /* Level-triggered, as a device is: while the application can move frames, the next poll returns at once. */
    if (*revents) raise_event(pcm);
    return 0;
}

static void hush_dump(snd_pcm_ioplug_t *io, snd_output_t *out) {
    struct hush_pcm *pcm = io->private_data;
    snd_output_printf(out, "hush: %s, category %s, bus %s, mode %s, level %s%d.%d dB, via %s\n",
                      is_playback(pcm) ? "playback" : "capture", pcm->category,
                      pcm->bus ? pcm->bus : "(hushd's default)", pcm->mode ? pcm->mode : "default",
                      pcm->level_tenths < 0 ? "-" : "", abs(pcm->level_tenths) / 10, abs(pcm->level_tenths) % 10,
                      pcm->socket_path);
    if (pcm->open) {
        snd_output_printf(out, "hushd stream %" PRIu64 ", ring %u frames, hushd's period %u frames\n",
                          pcm->stream_id, pcm->ring_frames, pcm->period_frames);
        snd_output_printf(out, "Its setup is:\n");
        snd_pcm_dump_setup(io->pcm, out);
    }
}

static void free_pcm(struct hush_pcm *pcm) {
    unmap_stream(pcm);
    hush_client_close(&pcm->client);
    free(pcm->bus);
    free(pcm);
}

static int hush_close(snd_pcm_ioplug_t *io) {
    free_pcm(io->private_data); /* closing the connection ends the stream and its session in hushd */
    return 0;
}

static const snd_pcm_ioplug_callback_t hush_callback = {
    .start = hush_start,
    .stop = hush_stop,
    .pointer = hush_pointer,
    .transfer = hush_transfer,
    .close = hush_close,
    .hw_params = hush_hw_params,
    .hw_free = hush_hw_free,
    .sw_params = hush_sw_params,
    .prepare = hush_prepare,
    .drain = hush_drain,
    .pause = hush_pause,
    .poll_descriptors_count = hush_poll_descriptors_count,
    .poll_descriptors = hush_poll_descriptors,
    .poll_revents = hush_poll_revents,
    .dump = hush_dump,
    .delay = hush_delay,
};

/* ---- opening ---- */

static int parse_category(struct hush_pcm *pcm, const char *text, const char *bus) {
    const char *name = text && text[0] ? text : "playback";
    for (size_t i = 0; i < sizeof(categories) / sizeof(categories[0]); i++) {
        if (strcasecmp(name, categories[i].name) != 0) continue;
        pcm->category = categories[i].category;
        pcm->mode = categories[i].mode;
        const char *chosen = bus && bus[0] ? bus : categories[i].bus;
        if (chosen && !(pcm->bus = strdup(chosen))) return -ENOMEM;
        return 0;
    }
    SNDERR("hush: unknown category '%s'; the categories are " CATEGORY_NAMES, name);
    return -EINVAL;
}

static int parse_mode(struct hush_pcm *pcm, const char *text) {
    if (!text || !text[0]) return 0;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcasecmp(text, modes[i]) != 0) continue;
        pcm->mode = i == 0 ? NULL : modes[i];
        pcm->mode_given = true;
        return 0;
    }
    SNDERR("hush: unknown mode '%s'; the modes are default, voiceChat and measurement", text);
    return -EINVAL;
}

/*
 * GAIN=: the session's own level in dB, -96 to 0, to a tenth of a dB ("-10", "-3.5", "-6dB"). Parsed by hand, not
 * with strtod, whose decimal point is the host program's locale's.
 */
static int parse_level(struct hush_pcm *pcm, const char *text) {
    if (!text || !text[0]) return 0;
    const char *p = text;
    while (*p == ' ') p++;
    bool negative = *p == '-';
    if (*p == '-' || *p == '+') p++;
    long tenths = 0;
    int digits = 0, decimals = 0;
    for (; *p >= '0' && *p <= '9' && tenths <= 10000; p++, digits++) tenths = tenths * 10 + (*p - '0');
    tenths *= 10;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, decimals++) {
            if (decimals == 0) tenths += *p - '0';
            else if (decimals == 1 && *p >= '5') tenths += 1; /* rounds to the tenth */
        }
    }
    while (*p == ' ') p++;
    if ((p[0] == 'd' || p[0] == 'D') && (p[1] == 'b' || p[1] == 'B')) p += 2;
    while (*p == ' ') p++;
    if (negative) tenths = -tenths;
    if (*p || digits + decimals == 0 || tenths < -960 || tenths > 0) {
        SNDERR("hush: GAIN is the stream's own level in dB, from -96 to 0 (never louder than its bus allows), "
               "not '%s'", text);
        return -EINVAL;
    }
    pcm->level_given = true;
    pcm->level_tenths = (int)tenths;
    return 0;
}

static int parse_options(struct hush_pcm *pcm, const char *text) {
    if (!text) return 0;
    const char *p = text;
    while (*p) {
        size_t length = strcspn(p, "|, ");
        if (length == 0) {
            p++;
            continue;
        }
        if (length == 13 && strncasecmp(p, "mixWithOthers", 13) == 0) {
            pcm->mix_with_others = true;
        } else if (length == 10 && strncasecmp(p, "duckOthers", 10) == 0) {
            pcm->duck_others = true;
        } else {
            SNDERR("hush: unknown option '%.*s'; the options are mixWithOthers and duckOthers (separate them with "
                   "'|' or ',')", (int)length, p);
            return -EINVAL;
        }
        p += length;
    }
    return 0;
}

static int parse_flag(const char *text, bool *flag) {
    static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false", "off", "0", ""};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        if (strcasecmp(text, yes[i]) == 0) return *flag = true, 0;
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        if (strcasecmp(text, no[i]) == 0) return *flag = false, 0;
    SNDERR("hush: transient is yes or no (true/false, 1/0), not '%s'", text);
    return -EINVAL;
}

static int parse_session(struct hush_pcm *pcm, const char *text) {
    if (!text || !text[0]) return 0;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || *end || text[0] < '0' || text[0] > '9') {
        SNDERR("hush: session is a session number (hushctl status lists them), not '%s'", text);
        return -EINVAL;
    }
    pcm->has_session = true;
    pcm->session = value;
    return 0;
}

/* The name hushd shows for this stream: the configuration's, else the program's (/proc/self/comm). */
static void set_name(struct hush_pcm *pcm, const char *text) {
    if (text && text[0]) {
        snprintf(pcm->name, sizeof(pcm->name), "%s", text);
        return;
    }
    snprintf(pcm->name, sizeof(pcm->name), "alsa");
    FILE *comm = fopen("/proc/self/comm", "re");
    if (!comm) return;
    char line[64];
    if (fgets(line, sizeof(line), comm)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0]) snprintf(pcm->name, sizeof(pcm->name), "%s", line);
    }
    fclose(comm);
}

/* hushd itself opening this device (its output set to "default" while hush is the default) would wait on itself. */
static int refuse_self(const struct hush_pcm *pcm) {
    struct ucred peer;
    socklen_t length = sizeof(peer);
    if (getsockopt(pcm->client.fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0 && peer.pid == getpid()) {
        SNDERR("hush: hushd cannot play through the hush device, which feeds hushd: give its route a hw: PCM");
        return -EDEADLK;
    }
    return 0;
}

static int hello(struct hush_pcm *pcm) {
    char text[512];
    uint64_t id;
    struct hush_line line = start_request(pcm, text, sizeof(text), "hello", &id);
    hush_line_raw(&line, ",\"name\":");
    hush_line_string(&line, pcm->name);
    return request(pcm, &line, id, "hello");
}

enum {
    ARG_CATEGORY,
    ARG_BUS,
    ARG_OPTIONS,
    ARG_TRANSIENT,
    ARG_NAME,
    ARG_SESSION,
    ARG_SOCKET,
    ARG_MODE,
    ARG_GAIN,
    ARG_COUNT
};
static const char *const argument_names[ARG_COUNT] = {"category", "bus",    "options", "transient", "name",
                                                      "session",  "socket", "mode",    "gain"};

static int configure(struct hush_pcm *pcm, snd_config_t *conf, char **arguments) {
    snd_config_iterator_t i, next;
    snd_config_for_each(i, next, conf) {
        snd_config_t *node = snd_config_iterator_entry(i);
        const char *id;
        if (snd_config_get_id(node, &id) < 0) continue;
        if (strcmp(id, "comment") == 0 || strcmp(id, "type") == 0 || strcmp(id, "hint") == 0) continue;
        int which = -1;
        for (int a = 0; a < ARG_COUNT; a++)
            if (strcmp(id, argument_names[a]) == 0) which = a;
        if (which < 0) {
            SNDERR("hush: unknown field '%s'; the fields are category, bus, options, transient, name, session, "
                   "socket, mode, gain", id);
            return -EINVAL;
        }
        free(arguments[which]);
        arguments[which] = NULL;
        if (snd_config_get_ascii(node, &arguments[which]) < 0) {
            SNDERR("hush: field '%s' must be a string", id);
            return -EINVAL;
        }
    }
    int error = parse_category(pcm, arguments[ARG_CATEGORY], arguments[ARG_BUS]);
    if (error == 0) error = parse_options(pcm, arguments[ARG_OPTIONS]);
    if (error == 0) error = parse_mode(pcm, arguments[ARG_MODE]);
    if (error == 0) error = parse_level(pcm, arguments[ARG_GAIN]);
    if (error == 0 && arguments[ARG_TRANSIENT]) error = parse_flag(arguments[ARG_TRANSIENT], &pcm->transient);
    if (error == 0) error = parse_session(pcm, arguments[ARG_SESSION]);
    if (error == 0) set_name(pcm, arguments[ARG_NAME]);
    return error;
}

static int set_constraints(snd_pcm_ioplug_t *io) {
    static const unsigned int accesses[] = {SND_PCM_ACCESS_RW_INTERLEAVED, SND_PCM_ACCESS_MMAP_INTERLEAVED};
    static const unsigned int formats[] = {SND_PCM_FORMAT_S16_LE, SND_PCM_FORMAT_S32_LE, SND_PCM_FORMAT_FLOAT_LE};
    /*
     * ioplug constrains sizes in bytes only, whatever the frame size. So that every size it allows is a ring hushd
     * takes, the smallest buffer is HUSH_WIRE_MIN_RING_FRAMES of the widest frame and the largest
     * HUSH_WIRE_MAX_RING_FRAMES of the narrowest: S16_LE mono gets at least 1024 frames, S32_LE stereo at most
     * 65536. The period likewise is at least HUSH_MIN_PERIOD_FRAMES of the widest frame.
     */
    int error = snd_pcm_ioplug_set_param_list(io, SND_PCM_IOPLUG_HW_ACCESS, 2, accesses);
    if (error == 0) error = snd_pcm_ioplug_set_param_list(io, SND_PCM_IOPLUG_HW_FORMAT, 3, formats);
    if (error == 0) error = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_CHANNELS, 1, HUSH_WIRE_MAX_CHANNELS);
    if (error == 0)
        error = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_RATE, HUSH_WIRE_MIN_RATE, HUSH_WIRE_MAX_RATE);
    if (error == 0)
        error = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_BUFFER_BYTES,
                                                HUSH_WIRE_MIN_RING_FRAMES * HUSH_MAX_FRAME_BYTES,
                                                HUSH_WIRE_MAX_RING_BYTES);
    if (error == 0)
        error = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_PERIOD_BYTES,
                                                HUSH_MIN_PERIOD_FRAMES * HUSH_MAX_FRAME_BYTES,
                                                HUSH_WIRE_MAX_RING_FRAMES * HUSH_MIN_FRAME_BYTES / 2);
    if (error == 0) error = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_PERIODS, 2, 1024);
    return error;
}

/* The plugin's entry: `type hush` in an ALSA configuration (deploy/alsa/50-hush.conf). */
#pragma GCC visibility push(default)
SND_PCM_PLUGIN_DEFINE_FUNC(hush) {
    (void)root;
    struct hush_pcm *pcm = calloc(1, sizeof(*pcm));
    if (!pcm) return -ENOMEM;
    pcm->event_fd = -1;
    pcm->client.fd = -1;
    pcm->client.closed = true;

    char *arguments[ARG_COUNT] = {NULL};
    int error = configure(pcm, conf, arguments);
    if (error == 0) {
        char why[2048];
        error = hush_client_connect(&pcm->client, arguments[ARG_SOCKET], pcm->socket_path, sizeof(pcm->socket_path),
                                    why, sizeof(why));
        if (error < 0) SNDERR("hush: cannot reach hushd: %s; is hushd running?", why);
    }
    for (int a = 0; a < ARG_COUNT; a++) free(arguments[a]);
    if (error == 0) error = refuse_self(pcm);
    if (error == 0) error = hello(pcm);
    if (error < 0) {
        free_pcm(pcm);
        return error;
    }

    pcm->io.version = SND_PCM_IOPLUG_VERSION;
    pcm->io.name = "hush";
    pcm->io.callback = &hush_callback;
    pcm->io.private_data = pcm;
    pcm->io.poll_fd = pcm->client.fd;
    pcm->io.poll_events = POLLIN;
    pcm->io.mmap_rw = 0;
    pcm->io.flags = SND_PCM_IOPLUG_FLAG_BOUNDARY_WA;
    error = snd_pcm_ioplug_create(&pcm->io, name, stream, mode);
    if (error < 0) {
        free_pcm(pcm);
        return error;
    }
    error = set_constraints(&pcm->io);
    if (error < 0) {
        snd_pcm_ioplug_delete(&pcm->io); /* closes: hush_close frees pcm */
        return error;
    }
    *pcmp = pcm->io.pcm;
    return 0;
}
SND_PCM_PLUGIN_SYMBOL(hush)
#pragma GCC visibility pop
