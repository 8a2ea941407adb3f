// Swift-visible face of libgpiod: one small hush-owned API over both library generations.
//
// libgpiod 1.6 (Debian bookworm, Raspberry Pi OS bookworm) and libgpiod 2.x (trixie) share no line API: 1.x
// requests a `gpiod_line` owned by its chip, 2.x builds settings, a line config and a request config and gets a
// `gpiod_line_request` of its own. HushGPIO calls only the `hush_gpio_*` functions below, so its Swift code, its
// behaviour and its error messages are the same on both; which branch compiles follows the <gpiod.h> that
// pkg-config's "libgpiod" points the build at (the header of the version `pkg-config --modversion libgpiod` names).
//
// Every function that fails returns NULL or -1 with errno set by the library or the kernel (EBUSY, ENOENT, EACCES,
// EINVAL, ...): HushGPIO turns errno into the sentence a person reads.
#ifndef HUSH_CGPIOD_SHIM_H
#define HUSH_CGPIOD_SHIM_H
#include <errno.h>
#include <gpiod.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// libgpiod 1.x defines GPIOD_LINE_BULK_MAX_LINES (its bulk API); 2.x has no bulk and defines no such macro.
#ifdef GPIOD_LINE_BULK_MAX_LINES
#define HUSH_GPIOD_API 1
_Static_assert(GPIOD_LINE_EVENT_RISING_EDGE == 1, "libgpiod 1.x event constants expected");
_Static_assert(GPIOD_LINE_BULK_MAX_LINES == 64, "libgpiod 1.x bulk size expected");
#else
#define HUSH_GPIOD_API 2
_Static_assert(GPIOD_EDGE_EVENT_RISING_EDGE == 1, "libgpiod 2.x edge event constants expected");
_Static_assert(GPIOD_LINE_VALUE_ACTIVE == 1 && GPIOD_LINE_VALUE_ERROR == -1, "libgpiod 2.x line values expected");
#endif

// The kernel's limit for chip labels and line names and consumers is 32 bytes with the terminating zero.
#define HUSH_GPIO_NAME_CAPACITY 64

/// Bias of an input line (HushGPIO's GPIOBias, in this order).
enum hush_gpio_bias {
    HUSH_GPIO_BIAS_AS_IS = 0,
    HUSH_GPIO_BIAS_DISABLED = 1,
    HUSH_GPIO_BIAS_PULL_UP = 2,
    HUSH_GPIO_BIAS_PULL_DOWN = 3,
};

/// One edge of a requested input line: when (CLOCK_MONOTONIC, nanoseconds, the kernel's stamp) and which way,
/// after active-low (rising = the line became active).
typedef struct hush_gpio_edge {
    uint64_t timestamp_ns;
    int rising;
} hush_gpio_edge;

/// An open chip. Lines requested through it must be released before it is closed.
typedef struct hush_gpio_chip {
    struct gpiod_chip *chip;
    char name[HUSH_GPIO_NAME_CAPACITY];
    char label[HUSH_GPIO_NAME_CAPACITY];
    unsigned int lines;
    // What hush_gpio_chip_line_name and hush_gpio_chip_line_consumer return: valid until the next such call.
    char scratch[HUSH_GPIO_NAME_CAPACITY];
} hush_gpio_chip;

/// One requested line (input with both edges, or output).
typedef struct hush_gpio_request {
    unsigned int offset;
#if HUSH_GPIOD_API == 1
    struct gpiod_line *line;
#else
    struct gpiod_line_request *request;
    struct gpiod_edge_event_buffer *events;
#endif
} hush_gpio_request;

static inline void hush_gpio_copy(char *to, const char *from) {
    if (from == NULL) from = "";
    strncpy(to, from, HUSH_GPIO_NAME_CAPACITY - 1);
    to[HUSH_GPIO_NAME_CAPACITY - 1] = '\0';
}

/// The libgpiod version loaded at run time, e.g. "1.6.3" or "2.2.1".
static inline const char *hush_gpio_library_version(void) {
#if HUSH_GPIOD_API == 1
    return gpiod_version_string();
#else
    return gpiod_api_version();
#endif
}

/// Opens the chip at `path` (a GPIO character device). NULL with errno: ENOENT, EACCES, ENODEV or ENOTTY (not a
/// GPIO chip), ...
static inline hush_gpio_chip *hush_gpio_chip_open(const char *path) {
    hush_gpio_chip *handle = (hush_gpio_chip *)calloc(1, sizeof(hush_gpio_chip));
    if (handle == NULL) return NULL;
    handle->chip = gpiod_chip_open(path);
    if (handle->chip == NULL) {
        int code = errno;
        free(handle);
        errno = code;
        return NULL;
    }
#if HUSH_GPIOD_API == 1
    hush_gpio_copy(handle->name, gpiod_chip_name(handle->chip));
    hush_gpio_copy(handle->label, gpiod_chip_label(handle->chip));
    handle->lines = gpiod_chip_num_lines(handle->chip);
#else
    struct gpiod_chip_info *info = gpiod_chip_get_info(handle->chip);
    if (info == NULL) {
        int code = errno;
        gpiod_chip_close(handle->chip);
        free(handle);
        errno = code;
        return NULL;
    }
    hush_gpio_copy(handle->name, gpiod_chip_info_get_name(info));
    hush_gpio_copy(handle->label, gpiod_chip_info_get_label(info));
    handle->lines = (unsigned int)gpiod_chip_info_get_num_lines(info);
    gpiod_chip_info_free(info);
#endif
    return handle;
}

static inline void hush_gpio_chip_close(hush_gpio_chip *handle) {
    gpiod_chip_close(handle->chip);
    free(handle);
}

static inline const char *hush_gpio_chip_name(const hush_gpio_chip *handle) { return handle->name; }
static inline const char *hush_gpio_chip_label(const hush_gpio_chip *handle) { return handle->label; }
static inline unsigned int hush_gpio_chip_num_lines(const hush_gpio_chip *handle) { return handle->lines; }

/// The offset of the line called `name` on the chip, or -1 with errno ENOENT when none is.
static inline int64_t hush_gpio_chip_find_line(hush_gpio_chip *handle, const char *name) {
#if HUSH_GPIOD_API == 1
    struct gpiod_line *line = gpiod_chip_find_line(handle->chip, name);
    if (line == NULL) return -1;
    return gpiod_line_offset(line);
#else
    return gpiod_chip_get_line_offset_from_name(handle->chip, name);
#endif
}

/// The name of line `offset` (in the chip's scratch buffer), or NULL when it has none or cannot be read.
static inline const char *hush_gpio_chip_line_name(hush_gpio_chip *handle, unsigned int offset) {
#if HUSH_GPIOD_API == 1
    struct gpiod_line *line = gpiod_chip_get_line(handle->chip, offset);
    const char *name = line == NULL ? NULL : gpiod_line_name(line);
    if (name == NULL || name[0] == '\0') return NULL;
    hush_gpio_copy(handle->scratch, name);
#else
    struct gpiod_line_info *info = gpiod_chip_get_line_info(handle->chip, offset);
    if (info == NULL) return NULL;
    const char *name = gpiod_line_info_get_name(info);
    int named = name != NULL && name[0] != '\0';
    if (named) hush_gpio_copy(handle->scratch, name);
    gpiod_line_info_free(info);
    if (!named) return NULL;
#endif
    return handle->scratch;
}

/// Who holds line `offset` as the kernel says now (in the chip's scratch buffer), or NULL when nobody named does.
static inline const char *hush_gpio_chip_line_consumer(hush_gpio_chip *handle, unsigned int offset) {
#if HUSH_GPIOD_API == 1
    struct gpiod_line *line = gpiod_chip_get_line(handle->chip, offset);
    if (line == NULL || gpiod_line_update(line) != 0) return NULL;
    const char *consumer = gpiod_line_consumer(line);
    if (consumer == NULL || consumer[0] == '\0') return NULL;
    hush_gpio_copy(handle->scratch, consumer);
#else
    struct gpiod_line_info *info = gpiod_chip_get_line_info(handle->chip, offset);
    if (info == NULL) return NULL;
    const char *consumer = gpiod_line_info_is_used(info) ? gpiod_line_info_get_consumer(info) : NULL;
    int named = consumer != NULL && consumer[0] != '\0';
    if (named) hush_gpio_copy(handle->scratch, consumer);
    gpiod_line_info_free(info);
    if (!named) return NULL;
#endif
    return handle->scratch;
}

#if HUSH_GPIOD_API == 1
// One line of a 1.6 request: the line, requested as `type` with `flags`, held by a new hush_gpio_request.
static inline hush_gpio_request *hush_gpio_request_line(
    hush_gpio_chip *handle, unsigned int offset, const char *consumer, int type, int flags) {
    struct gpiod_line *line = gpiod_chip_get_line(handle->chip, offset);
    if (line == NULL) return NULL;
    struct gpiod_line_request_config config = {.consumer = consumer, .request_type = type, .flags = flags};
    if (gpiod_line_request(line, &config, 0) != 0) return NULL;
    hush_gpio_request *request = (hush_gpio_request *)calloc(1, sizeof(hush_gpio_request));
    if (request == NULL) {
        gpiod_line_release(line);
        errno = ENOMEM;
        return NULL;
    }
    request->offset = offset;
    request->line = line;
    return request;
}
#else
// One line of a 2.x request: settings, a line config with them for `offset`, a request config with the consumer.
static inline hush_gpio_request *hush_gpio_request_line(
    hush_gpio_chip *handle, unsigned int offset, const char *consumer, struct gpiod_line_settings *settings) {
    hush_gpio_request *request = (hush_gpio_request *)calloc(1, sizeof(hush_gpio_request));
    struct gpiod_line_config *lines = gpiod_line_config_new();
    struct gpiod_request_config *config = gpiod_request_config_new();
    int code = ENOMEM;
    if (request != NULL && lines != NULL && config != NULL) {
        request->offset = offset;
        gpiod_request_config_set_consumer(config, consumer);
        if (gpiod_line_config_add_line_settings(lines, &offset, 1, settings) == 0)
            request->request = gpiod_chip_request_lines(handle->chip, config, lines);
        code = errno;
    }
    if (config != NULL) gpiod_request_config_free(config);
    if (lines != NULL) gpiod_line_config_free(lines);
    gpiod_line_settings_free(settings);
    if (request != NULL && request->request != NULL) return request;
    free(request);
    errno = code;
    return NULL;
}
#endif

/// Requests line `offset` as an input watched on both edges, with `bias` (hush_gpio_bias) and active-low.
/// NULL with errno: EBUSY when another holder has it, EINVAL when the kernel cannot set that bias, ...
static inline hush_gpio_request *hush_gpio_request_input(
    hush_gpio_chip *handle, unsigned int offset, const char *consumer, int active_low, int bias) {
#if HUSH_GPIOD_API == 1
    int flags = active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0;
    switch (bias) {
    case HUSH_GPIO_BIAS_DISABLED: flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE; break;
    case HUSH_GPIO_BIAS_PULL_UP: flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP; break;
    case HUSH_GPIO_BIAS_PULL_DOWN: flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN; break;
    default: break;
    }
    return hush_gpio_request_line(handle, offset, consumer, GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES, flags);
#else
    struct gpiod_line_settings *settings = gpiod_line_settings_new();
    if (settings == NULL) return NULL;
    enum gpiod_line_bias kind = GPIOD_LINE_BIAS_AS_IS;
    switch (bias) {
    case HUSH_GPIO_BIAS_DISABLED: kind = GPIOD_LINE_BIAS_DISABLED; break;
    case HUSH_GPIO_BIAS_PULL_UP: kind = GPIOD_LINE_BIAS_PULL_UP; break;
    case HUSH_GPIO_BIAS_PULL_DOWN: kind = GPIOD_LINE_BIAS_PULL_DOWN; break;
    default: break;
    }
    // Timestamps on CLOCK_MONOTONIC, hush's timeline (the library's default, said so it stays so).
    if (gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_INPUT) != 0
        || gpiod_line_settings_set_edge_detection(settings, GPIOD_LINE_EDGE_BOTH) != 0
        || gpiod_line_settings_set_bias(settings, kind) != 0
        || gpiod_line_settings_set_event_clock(settings, GPIOD_LINE_CLOCK_MONOTONIC) != 0) {
        int code = errno;
        gpiod_line_settings_free(settings);
        errno = code;
        return NULL;
    }
    gpiod_line_settings_set_active_low(settings, active_low != 0);
    hush_gpio_request *request = hush_gpio_request_line(handle, offset, consumer, settings);
    if (request == NULL) return NULL;
    request->events = gpiod_edge_event_buffer_new(16);
    if (request->events == NULL) {
        gpiod_line_request_release(request->request);
        free(request);
        errno = ENOMEM;
        return NULL;
    }
    return request;
#endif
}

/// Requests line `offset` as an output, initially inactive. NULL with errno as for an input.
static inline hush_gpio_request *hush_gpio_request_output(
    hush_gpio_chip *handle, unsigned int offset, const char *consumer, int active_low) {
#if HUSH_GPIOD_API == 1
    return hush_gpio_request_line(
        handle, offset, consumer, GPIOD_LINE_REQUEST_DIRECTION_OUTPUT,
        active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0);
#else
    struct gpiod_line_settings *settings = gpiod_line_settings_new();
    if (settings == NULL) return NULL;
    if (gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_OUTPUT) != 0
        || gpiod_line_settings_set_output_value(settings, GPIOD_LINE_VALUE_INACTIVE) != 0) {
        int code = errno;
        gpiod_line_settings_free(settings);
        errno = code;
        return NULL;
    }
    gpiod_line_settings_set_active_low(settings, active_low != 0);
    return hush_gpio_request_line(handle, offset, consumer, settings);
#endif
}

static inline void hush_gpio_request_release(hush_gpio_request *request) {
#if HUSH_GPIOD_API == 1
    gpiod_line_release(request->line);
#else
    gpiod_line_request_release(request->request);
    if (request->events != NULL) gpiod_edge_event_buffer_free(request->events);
#endif
    free(request);
}

/// The descriptor that becomes readable when an input's edges are waiting.
static inline int hush_gpio_request_fd(hush_gpio_request *request) {
#if HUSH_GPIOD_API == 1
    return gpiod_line_event_get_fd(request->line);
#else
    return gpiod_line_request_get_fd(request->request);
#endif
}

/// The line's level now, after active-low: 1 active, 0 inactive, -1 with errno.
static inline int hush_gpio_request_get_value(hush_gpio_request *request) {
#if HUSH_GPIOD_API == 1
    return gpiod_line_get_value(request->line);
#else
    return (int)gpiod_line_request_get_value(request->request, request->offset);
#endif
}

/// Drives an output line active (1) or inactive (0), after active-low. 0, or -1 with errno.
static inline int hush_gpio_request_set_value(hush_gpio_request *request, int active) {
#if HUSH_GPIOD_API == 1
    return gpiod_line_set_value(request->line, active ? 1 : 0);
#else
    return gpiod_line_request_set_value(
        request->request, request->offset, active ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
#endif
}

/// Reads up to `capacity` waiting edges into `edges` (at most 16 a call); blocks when none is waiting, so poll the
/// descriptor first. The number read, or -1 with errno (ENODEV: the chip is gone; EINTR).
static inline int hush_gpio_request_read_edges(hush_gpio_request *request, hush_gpio_edge *edges, unsigned int capacity) {
    if (capacity > 16) capacity = 16;
#if HUSH_GPIOD_API == 1
    struct gpiod_line_event events[16];
    int count = gpiod_line_event_read_multiple(request->line, events, capacity);
    for (int index = 0; index < count; index++) {
        edges[index].timestamp_ns = (uint64_t)events[index].ts.tv_sec * 1000000000u + (uint64_t)events[index].ts.tv_nsec;
        edges[index].rising = events[index].event_type == GPIOD_LINE_EVENT_RISING_EDGE;
    }
    return count;
#else
    int count = gpiod_line_request_read_edge_events(request->request, request->events, capacity);
    for (int index = 0; index < count; index++) {
        struct gpiod_edge_event *event = gpiod_edge_event_buffer_get_event(request->events, (unsigned long)index);
        edges[index].timestamp_ns = gpiod_edge_event_get_timestamp_ns(event);
        edges[index].rising = gpiod_edge_event_get_event_type(event) == GPIOD_EDGE_EVENT_RISING_EDGE;
    }
    return count;
#endif
}

#endif
