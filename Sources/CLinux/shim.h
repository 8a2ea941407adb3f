// Linux calls Swift's Glibc module does not expose (they need _GNU_SOURCE), as small prefixed functions.
#ifndef HUSH_CLINUX_SHIM_H
#define HUSH_CLINUX_SHIM_H
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>

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

/// A memfd of `bytes` bytes, sealed so that no one who holds it can shrink or grow it (a client that shrank a
/// stream's memory under hushd would make hushd fault on its next read) or change the seals. Close-on-exec.
/// Returns the descriptor, or -errno.
extern int memfd_create(const char *name, unsigned int flags);
static inline int clinux_sealed_memfd(const char *name, off_t bytes) {
    // MFD_CLOEXEC | MFD_ALLOW_SEALING; F_ADD_SEALS with F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW (glibc names them
    // only under _GNU_SOURCE, which Swift's Glibc module does not define).
    int fd = memfd_create(name, 0x0001U | 0x0002U);
    if (fd < 0) return -errno;
    if (ftruncate(fd, bytes) != 0 || fcntl(fd, 1033 /* F_ADD_SEALS */, 0x0001 | 0x0002 | 0x0004) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

/// A non-blocking, close-on-exec eventfd at 0, or -errno.
static inline int clinux_eventfd(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/// Adds one to an eventfd (never blocks: it is non-blocking and a full counter just stays full). The one system
/// call the audio thread makes for a stream, at most once per period.
static inline void clinux_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t written = write(fd, &one, sizeof one);
    (void)written;
}

#endif
