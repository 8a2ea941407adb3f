/*
 * hush_client.c: the control-socket side of the `hush` ALSA plugin; see hush_client.h.
 */
#define _GNU_SOURCE
#include "hush_client.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---- time ---- */

static int64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static int remaining_ms(int64_t deadline) {
    int64_t left = deadline - now_ms();
    return left < 0 ? 0 : (int)left;
}

/* ---- connecting ---- */

static int connect_path(const char *path) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(address.sun_path)) return -ENAMETOOLONG;
    memcpy(address.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    while (connect(fd, (struct sockaddr *)&address, sizeof(address)) < 0) {
        if (errno == EINTR) continue;
        int error = -errno;
        close(fd);
        return error;
    }
    return fd;
}

/* Appends "path: reason" to `why`, separated by "; ". */
static void note_failure(char *why, size_t why_size, const char *path, int error) {
    size_t used = strlen(why);
    if (used >= why_size) return;
    const char *hint = error == -EACCES ? " (join the socket's group, usually hush)" : "";
    snprintf(why + used, why_size - used, "%s%s: %s%s", used ? "; " : "", path, strerror(-error), hint);
}

int hush_client_connect(struct hush_client *client, const char *socket_path, char *used, size_t used_size,
                        char *why, size_t why_size) {
    memset(client, 0, sizeof(*client));
    client->fd = -1;
    for (int i = 0; i < HUSH_CLIENT_MAX_FDS; i++) client->fds[i] = -1;
    if (why_size) why[0] = '\0';

    char candidates[3][512];
    int count = 0;
    const char *environment = getenv("HUSH_SOCKET");
    if (socket_path && socket_path[0]) {
        snprintf(candidates[count++], sizeof(candidates[0]), "%s", socket_path);
    } else if (environment && environment[0]) {
        snprintf(candidates[count++], sizeof(candidates[0]), "%s", environment);
    } else {
        snprintf(candidates[count++], sizeof(candidates[0]), "/run/hush/control.sock");
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        if (runtime && runtime[0] == '/')
            snprintf(candidates[count++], sizeof(candidates[0]), "%s/hush-control.sock", runtime);
        snprintf(candidates[count++], sizeof(candidates[0]), "/tmp/hush-%u-control.sock", (unsigned)getuid());
    }

    /* The errno returned is the most telling one: a socket that exists but refuses beats one that is absent. */
    int result = -ENOENT;
    for (int i = 0; i < count; i++) {
        int fd = connect_path(candidates[i]);
        if (fd >= 0) {
            client->fd = fd;
            snprintf(used, used_size, "%s", candidates[i]);
            return 0;
        }
        note_failure(why, why_size, candidates[i], fd);
        if (result == -ENOENT) result = fd;
    }
    return result;
}

void hush_client_close(struct hush_client *client) {
    hush_client_drop_fds(client);
    if (client->fd >= 0) close(client->fd);
    client->fd = -1;
    client->closed = true;
}

/* ---- sending ---- */

int hush_client_send(struct hush_client *client, const char *line, size_t length, int timeout_ms) {
    if (client->closed) return -ENODEV;
    int64_t deadline = now_ms() + timeout_ms;
    size_t sent = 0;
    while (sent < length) {
        ssize_t n = send(client->fd, line + sent, length - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = client->fd, .events = POLLOUT};
            int left = remaining_ms(deadline);
            if (left == 0) return -ETIMEDOUT;
            if (poll(&pfd, 1, left) < 0 && errno != EINTR) return -errno;
            continue;
        }
        client->closed = true;
        return -ENODEV;
    }
    return 0;
}

/* ---- receiving ---- */

static void keep_fds(struct hush_client *client, struct msghdr *message) {
    if (message->msg_flags & MSG_CTRUNC) client->fds_lost = true;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(message); c; c = CMSG_NXTHDR(message, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (client->fd_count < HUSH_CLIENT_MAX_FDS) {
                client->fds[client->fd_count++] = fd;
            } else {
                close(fd);
                client->fds_lost = true;
            }
        }
    }
}

/* Reads what is there, without waiting. 1: bytes or EOF arrived, 0: nothing yet, -ENODEV: closed. */
static int receive(struct hush_client *client) {
    if (client->closed) return -ENODEV;
    if (client->length == sizeof(client->input)) {
        /* A line longer than the buffer: drop what is held and skip to its end. */
        client->length = 0;
        client->skipping = true;
    }
    union {
        char buffer[CMSG_SPACE(sizeof(int) * (HUSH_CLIENT_MAX_FDS + 2))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = client->input + client->length,
                        .iov_len = sizeof(client->input) - client->length};
    struct msghdr message = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof(control.buffer)};
    for (;;) {
        ssize_t n = recvmsg(client->fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n > 0) {
            keep_fds(client, &message);
            client->length += (size_t)n;
            return 1;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        client->closed = true; /* EOF, ECONNRESET...: hushd is gone */
        return -ENODEV;
    }
}

/*
 * Takes the first complete line out of the buffer into `line` (NUL-terminated, '\n' dropped). 1: a line, 0: none
 * yet, -EPROTO: the line did not fit `line_size` (it is dropped).
 */
static int next_line(struct hush_client *client, char *line, size_t line_size) {
    for (;;) {
        char *newline = memchr(client->input, '\n', client->length);
        if (!newline) return 0;
        size_t length = (size_t)(newline - client->input);
        bool skipped = client->skipping;
        int result = 1;
        if (!skipped) {
            if (length < line_size) {
                memcpy(line, client->input, length);
                line[length] = '\0';
            } else {
                result = -EPROTO;
            }
        }
        client->skipping = false;
        client->length -= length + 1;
        memmove(client->input, newline + 1, client->length);
        if (!skipped) return result;
    }
}

/*
 * Whether the line is the reply to request `id`: a line with "ok" and that id, or with "ok" and no id, which hushd
 * sends to a connection it refuses (too many clients, a uid it does not serve) before it closes it.
 */
static bool is_reply_to(const char *line, uint64_t id) {
    struct hush_json object = hush_json_line(line), value;
    if (!hush_json_member(object, "ok", &value)) return false;
    uint64_t reply_id;
    if (!hush_json_member(object, "id", &value) || !hush_json_uint(value, &reply_id)) return true;
    return reply_id == id;
}

int hush_client_reply(struct hush_client *client, uint64_t id, char *reply, size_t reply_size, int timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        int got;
        while ((got = next_line(client, reply, reply_size)) != 0) {
            if (got < 0) {
                /* Too long for us: if it was our reply, we cannot read it; events are simply skipped. */
                continue;
            }
            if (is_reply_to(reply, id)) return 0;
            /* An event, or the late reply to a request that timed out: not ours. */
        }
        if (client->closed) return -ENODEV;
        int received = receive(client);
        if (received < 0) {
            /* hushd may have answered and then closed: read what is left first. */
            while ((got = next_line(client, reply, reply_size)) != 0) {
                if (got > 0 && is_reply_to(reply, id)) return 0;
            }
            return -ENODEV;
        }
        if (received > 0) continue;
        int left = remaining_ms(deadline);
        if (left == 0) return -ETIMEDOUT;
        struct pollfd pfd = {.fd = client->fd, .events = POLLIN};
        if (poll(&pfd, 1, left) < 0 && errno != EINTR) return -errno;
    }
}

int hush_client_discard(struct hush_client *client) {
    char line[256];
    for (;;) {
        int received = receive(client);
        while (next_line(client, line, sizeof(line)) != 0) {
        }
        if (client->length == sizeof(client->input)) continue; /* receive() starts skipping */
        if (received <= 0) {
            /* Descriptors only come with open-stream replies; any others would only leak. */
            hush_client_drop_fds(client);
            return received < 0 ? -ENODEV : 0;
        }
    }
}

int hush_client_take_fds(struct hush_client *client, int *fds, int max) {
    int taken = 0;
    for (int i = 0; i < client->fd_count; i++) {
        if (taken < max) {
            fds[taken++] = client->fds[i];
        } else {
            close(client->fds[i]);
        }
        client->fds[i] = -1;
    }
    client->fd_count = 0;
    return taken;
}

void hush_client_drop_fds(struct hush_client *client) {
    for (int i = 0; i < client->fd_count; i++) {
        close(client->fds[i]);
        client->fds[i] = -1;
    }
    client->fd_count = 0;
}

/* ---- reading JSON ---- */

static const char *skip_space(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

/* p at the opening quote; returns just past the closing one, or NULL. */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') {
            p++;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

static const char *skip_value(const char *p, const char *end, int depth) {
    p = skip_space(p, end);
    if (p >= end || depth > 32) return NULL;
    if (*p == '"') return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        bool object = *p == '{';
        p = skip_space(p + 1, end);
        if (p < end && *p == close) return p + 1;
        for (;;) {
            if (object) {
                if (p >= end || *p != '"') return NULL;
                p = skip_string(p, end);
                if (!p) return NULL;
                p = skip_space(p, end);
                if (p >= end || *p != ':') return NULL;
                p++;
            }
            p = skip_value(p, end, depth + 1);
            if (!p) return NULL;
            p = skip_space(p, end);
            if (p >= end) return NULL;
            if (*p == close) return p + 1;
            if (*p != ',') return NULL;
            p = skip_space(p + 1, end);
        }
    }
    /* A number, true, false or null: up to the next delimiter. */
    const char *start = p;
    while (p < end && !strchr(",}] \t\r\n", *p)) p++;
    return p > start ? p : NULL;
}

struct hush_json hush_json_line(const char *line) {
    return (struct hush_json){.start = line, .length = strlen(line)};
}

bool hush_json_member(struct hush_json object, const char *key, struct hush_json *value) {
    const char *end = object.start + object.length;
    const char *p = skip_space(object.start, end);
    if (p >= end || *p != '{') return false;
    p = skip_space(p + 1, end);
    if (p < end && *p == '}') return false;
    size_t key_length = strlen(key);
    for (;;) {
        if (p >= end || *p != '"') return false;
        const char *name = p + 1;
        p = skip_string(p, end);
        if (!p) return false;
        bool match = (size_t)(p - 1 - name) == key_length && memcmp(name, key, key_length) == 0;
        p = skip_space(p, end);
        if (p >= end || *p != ':') return false;
        const char *start = skip_space(p + 1, end);
        p = skip_value(start, end, 1);
        if (!p) return false;
        if (match) {
            *value = (struct hush_json){.start = start, .length = (size_t)(p - start)};
            return true;
        }
        p = skip_space(p, end);
        if (p >= end || *p != ',') return false;
        p = skip_space(p + 1, end);
    }
}

bool hush_json_uint(struct hush_json value, uint64_t *number) {
    if (value.length == 0 || value.length > 20) return false;
    uint64_t result = 0;
    for (size_t i = 0; i < value.length; i++) {
        char c = value.start[i];
        if (c < '0' || c > '9') return false;
        uint64_t next = result * 10 + (uint64_t)(c - '0');
        if (next / 10 != result) return false;
        result = next;
    }
    *number = result;
    return true;
}

bool hush_json_bool(struct hush_json value, bool *flag) {
    if (value.length == 4 && memcmp(value.start, "true", 4) == 0) {
        *flag = true;
        return true;
    }
    if (value.length == 5 && memcmp(value.start, "false", 5) == 0) {
        *flag = false;
        return true;
    }
    return false;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool hex4(const char *p, const char *end, unsigned *out) {
    if (end - p < 4) return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(p[i]);
        if (d < 0) return false;
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return true;
}

/* Appends bytes to out if they fit whole (a character is never cut in half). */
static void put(char *out, size_t out_size, size_t *used, const char *bytes, size_t count) {
    if (*used + count >= out_size) {
        *used = out_size; /* full: nothing more goes in */
        return;
    }
    memcpy(out + *used, bytes, count);
    *used += count;
}

bool hush_json_string(struct hush_json value, char *out, size_t out_size) {
    if (out_size == 0) return false;
    out[0] = '\0';
    if (value.length < 2 || value.start[0] != '"' || value.start[value.length - 1] != '"') return false;
    const char *p = value.start + 1, *end = value.start + value.length - 1;
    size_t used = 0;
    while (p < end && used < out_size) {
        if (*p != '\\') {
            put(out, out_size, &used, p, 1);
            p++;
            continue;
        }
        p++;
        if (p >= end) break;
        char c = *p++;
        char simple = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b' : c == 'f' ? '\f' : c;
        if (c != 'u') {
            put(out, out_size, &used, &simple, 1);
            continue;
        }
        unsigned code;
        if (!hex4(p, end, &code)) break;
        p += 4;
        if (code >= 0xD800 && code <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
            unsigned low;
            if (hex4(p + 2, end, &low) && low >= 0xDC00 && low <= 0xDFFF) {
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                p += 6;
            }
        }
        if (code >= 0xD800 && code <= 0xDFFF) code = '?';
        char bytes[4];
        size_t count;
        if (code < 0x80) {
            bytes[0] = (char)code;
            count = 1;
        } else if (code < 0x800) {
            bytes[0] = (char)(0xC0 | (code >> 6));
            bytes[1] = (char)(0x80 | (code & 0x3F));
            count = 2;
        } else if (code < 0x10000) {
            bytes[0] = (char)(0xE0 | (code >> 12));
            bytes[1] = (char)(0x80 | ((code >> 6) & 0x3F));
            bytes[2] = (char)(0x80 | (code & 0x3F));
            count = 3;
        } else {
            bytes[0] = (char)(0xF0 | (code >> 18));
            bytes[1] = (char)(0x80 | ((code >> 12) & 0x3F));
            bytes[2] = (char)(0x80 | ((code >> 6) & 0x3F));
            bytes[3] = (char)(0x80 | (code & 0x3F));
            count = 4;
        }
        put(out, out_size, &used, bytes, count);
    }
    if (used >= out_size) used = out_size - 1;
    out[used] = '\0';
    return true;
}

/* ---- writing JSON ---- */

static void append(struct hush_line *line, const char *bytes, size_t count) {
    if (line->overflow || line->length + count >= line->capacity) {
        line->overflow = true;
        return;
    }
    memcpy(line->text + line->length, bytes, count);
    line->length += count;
    line->text[line->length] = '\0';
}

void hush_line_raw(struct hush_line *line, const char *text) { append(line, text, strlen(text)); }

/* The length of the well-formed UTF-8 sequence at p (1 to 4), or 0. */
static size_t utf8_length(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    size_t count;
    uint32_t code, minimum;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) {
        count = 2, code = c & 0x1F, minimum = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        count = 3, code = c & 0x0F, minimum = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        count = 4, code = c & 0x07, minimum = 0x10000;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < count) return 0;
    for (size_t i = 1; i < count; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        code = (code << 6) | (p[i] & 0x3F);
    }
    if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
    return count;
}

void hush_line_string(struct hush_line *line, const char *text) {
    const unsigned char *p = (const unsigned char *)text, *end = p + strlen(text);
    append(line, "\"", 1);
    while (p < end) {
        if (*p == '"' || *p == '\\') {
            char escaped[2] = {'\\', (char)*p};
            append(line, escaped, 2);
            p++;
        } else if (*p < 0x20 || *p == 0x7F) {
            char escaped[8];
            snprintf(escaped, sizeof(escaped), "\\u%04x", *p);
            append(line, escaped, 6);
            p++;
        } else {
            size_t count = utf8_length(p, end);
            if (count == 0) {
                append(line, "?", 1);
                p++;
            } else {
                append(line, (const char *)p, count);
                p += count;
            }
        }
    }
    append(line, "\"", 1);
}

void hush_line_uint(struct hush_line *line, uint64_t number) {
    char digits[24];
    int count = snprintf(digits, sizeof(digits), "%" PRIu64, number);
    append(line, digits, (size_t)count);
}
