#include "CAllocationCounter.h"

#include <errno.h>
#include <execinfo.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define HUSH_UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HUSH_UNDER_SANITIZER 1
#endif

// Thread-local and static: the executable's own TLS block, reached without a call, so reading them never
// allocates (a dynamic TLS access could, and would recurse into malloc).
static _Thread_local bool counting;
static _Thread_local int64_t allocations;
static _Thread_local int64_t frees;

void hush_allocation_counting(bool on) {
    allocations = 0;
    frees = 0;
    counting = on;
}

int64_t hush_allocations_on_this_thread(void) { return allocations; }

int64_t hush_frees_on_this_thread(void) { return frees; }

#if defined(HUSH_UNDER_SANITIZER)

bool hush_allocation_counter_installed(void) { return false; }

#else

bool hush_allocation_counter_installed(void) { return true; }

// glibc's implementations under their other names (exported since glibc 2.0 for exactly this use): calling them
// needs no dlsym, which itself allocates before it can answer.
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

/* HUSH_ALLOC_TRACE: each counted allocation's backtrace on stderr (backtrace may allocate: not traced again). */
static _Thread_local bool tracing;
static inline void counted_allocation(void) {
    if (counting) allocations += 1;
    if (counting && !tracing && getenv("HUSH_ALLOC_TRACE")) {
        tracing = true;
        void *frames[24];
        int n = backtrace(frames, 24);
        backtrace_symbols_fd(frames, n, 2);
        ssize_t written = write(2, "----\n", 5);
        (void)written;
        tracing = false;
    }
}

void *malloc(size_t size) {
    counted_allocation();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    counted_allocation();
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    // A block that moves is a new allocation and a free; one that grows in place still went to the allocator,
    // which is what the real-time path must not do: count every call.
    counted_allocation();
    if (counting && pointer != NULL) frees += 1;
    return __libc_realloc(pointer, size);
}

void free(void *pointer) {
    if (counting && pointer != NULL) frees += 1;
    __libc_free(pointer);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    // The checks glibc's own posix_memalign makes before it allocates.
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0) return EINVAL;
    counted_allocation();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    counted_allocation();
    return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    counted_allocation();
    return __libc_memalign(alignment, size);
}

void *valloc(size_t size) {
    counted_allocation();
    return __libc_valloc(size);
}

void *pvalloc(size_t size) {
    counted_allocation();
    return __libc_pvalloc(size);
}

#endif
