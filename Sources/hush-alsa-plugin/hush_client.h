/*
 * hush_client.h: the control-socket side of the `hush` ALSA plugin (pcm_hush.c): finding and connecting to
 * hushd's socket, sending one request line, waiting (with a deadline) for its reply line and the descriptors that
 * came with it, skipping event lines, and the little JSON the plugin reads and writes. No allocation after
 * hush_client_connect; every wait has a deadline. docs/protocol.md describes the lines.
 */
#ifndef HUSH_CLIENT_H
#define HUSH_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Long enough for any reply the plugin waits for; a longer line (an event) is skipped to its end. */
#define HUSH_CLIENT_LINE_BYTES 8192
/* The most descriptors one reply carries (open-stream: the memfd and the eventfd). */
#define HUSH_CLIENT_MAX_FDS 2

struct hush_client {
    int fd;
    /* hushd closed the connection, or it failed: every request now fails with -ENODEV. */
    bool closed;
    /* A line longer than the buffer is being skipped up to its newline. */
    bool skipping;
    size_t length;
    char input[HUSH_CLIENT_LINE_BYTES];
    /* Descriptors received (SCM_RIGHTS) and not yet taken by hush_client_take_fds. */
    int fds[HUSH_CLIENT_MAX_FDS];
    int fd_count;
    /* Descriptors beyond HUSH_CLIENT_MAX_FDS, or a truncated control message: a protocol error. */
    bool fds_lost;
};

/*
 * Connects to hushd: `socket_path` if not NULL, else $HUSH_SOCKET, else the first of /run/hush/control.sock,
 * $XDG_RUNTIME_DIR/hush-control.sock (if absolute) and /tmp/hush-UID-control.sock that accepts. Returns 0, or a
 * negative errno with `why` holding every path tried and what it answered ("/run/hush/control.sock: No such file
 * or directory; ..."); `used` receives the path connected to.
 */
int hush_client_connect(struct hush_client *client, const char *socket_path, char *used, size_t used_size,
                        char *why, size_t why_size);

/* Closes the connection and any descriptors received and not taken. */
void hush_client_close(struct hush_client *client);

/* Sends one line (with its '\n'), waiting at most timeout_ms for room. 0, -ENODEV (closed) or -ETIMEDOUT. */
int hush_client_send(struct hush_client *client, const char *line, size_t length, int timeout_ms);

/*
 * Waits at most timeout_ms for the reply whose "id" is `id`, skipping events and stale replies. The line (without
 * '\n', NUL-terminated) goes to `reply`. 0, -ENODEV (closed), -ETIMEDOUT, or -EPROTO (a reply too long).
 */
int hush_client_reply(struct hush_client *client, uint64_t id, char *reply, size_t reply_size, int timeout_ms);

/*
 * Reads, without waiting, whatever hushd has sent and drops event lines (and replies nobody waits for), so hushd's
 * queue for this client never fills. 0, or -ENODEV once hushd has closed the connection.
 */
int hush_client_discard(struct hush_client *client);

/* Takes up to `max` received descriptors (oldest first) into `fds`; returns how many. The rest are closed. */
int hush_client_take_fds(struct hush_client *client, int *fds, int max);

/* Closes every received descriptor not taken. */
void hush_client_drop_fds(struct hush_client *client);

/* A piece of a JSON line. */
struct hush_json {
    const char *start;
    size_t length;
};

/* The value of `key` in the object `object` (top level only). False if absent or if the object is malformed. */
bool hush_json_member(struct hush_json object, const char *key, struct hush_json *value);
bool hush_json_uint(struct hush_json value, uint64_t *number);
bool hush_json_bool(struct hush_json value, bool *flag);
/* Decodes a JSON string into `out` (UTF-8, NUL-terminated, cut to fit). False if `value` is not a string. */
bool hush_json_string(struct hush_json value, char *out, size_t out_size);
/* The whole NUL-terminated line as a hush_json. */
struct hush_json hush_json_line(const char *line);

/* A fixed buffer a request line is written into; `overflow` is set instead of writing past its end. */
struct hush_line {
    char *text;
    size_t length;
    size_t capacity;
    bool overflow;
};

void hush_line_raw(struct hush_line *line, const char *text);
/* Appends a JSON string: quoted, with '"', '\\' and control characters escaped, bytes that are not UTF-8 as '?'. */
void hush_line_string(struct hush_line *line, const char *text);
void hush_line_uint(struct hush_line *line, uint64_t number);

#endif
