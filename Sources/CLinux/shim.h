// Linux calls Swift's Glibc module does not expose (they need _GNU_SOURCE), as small prefixed functions.
#ifndef HUSH_CLINUX_SHIM_H
#define HUSH_CLINUX_SHIM_H
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/signalfd.h>

extern int pthread_setname_np(pthread_t thread, const char *name);

/// Names the calling thread (at most 15 characters), as `top -H` and `ps -L` show it.
static inline int clinux_name_this_thread(const char *name) { return pthread_setname_np(pthread_self(), name); }

// Pseudo-terminals (glibc declares these only under _XOPEN_SOURCE): the serial console's tests drive a pty.
extern int posix_openpt(int flags);
extern int grantpt(int fd);
extern int unlockpt(int fd);
extern int ptsname_r(int fd, char *buf, size_t buflen);

/// The bytes malloc has handed out and not had back (arena and mmapped chunks): what `hush-render --soak` watches
/// for growth, finer than the resident size, which moves in pages. Glibc's malloc.h is not in Swift's Glibc module.
static inline size_t clinux_malloc_bytes_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

#endif
