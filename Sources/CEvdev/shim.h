// Swift-visible face of libevdev (headers under /usr/include/libevdev-1.0, found through pkg-config).
#ifndef HUSH_CEVDEV_SHIM_H
#define HUSH_CEVDEV_SHIM_H
#include <libevdev/libevdev.h>
#include <libevdev/libevdev-uinput.h>
#include <linux/input.h>
// epoll and inotify are not in Swift's Glibc module; HushInput needs them to follow devices that come and go.
#include <sys/epoll.h>
#include <sys/inotify.h>

// struct input_event's time fields are macros on 64-bit-time builds; give Swift plain accessors.
static inline long cevdev_event_seconds(const struct input_event *e) { return (long)e->input_event_sec; }
static inline long cevdev_event_microseconds(const struct input_event *e) { return (long)e->input_event_usec; }

#endif
