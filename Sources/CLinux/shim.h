// Linux calls Swift's Glibc module does not expose (they need _GNU_SOURCE), as small prefixed functions.
#ifndef HUSH_CLINUX_SHIM_H
#define HUSH_CLINUX_SHIM_H
#include <pthread.h>
#include <sys/signalfd.h>

extern int pthread_setname_np(pthread_t thread, const char *name);

/// Names the calling thread (at most 15 characters), as `top -H` and `ps -L` show it.
static inline int clinux_name_this_thread(const char *name) { return pthread_setname_np(pthread_self(), name); }

#endif
