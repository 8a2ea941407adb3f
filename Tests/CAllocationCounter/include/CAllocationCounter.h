// Counts the heap allocations a thread makes, for the tests that prove the real-time path allocates nothing.
//
// The test executable's own malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign, valloc and
// pvalloc replace glibc's (an executable's definitions come first in symbol lookup, and glibc supports replacing
// them); each forwards to glibc's implementation (__libc_malloc and friends) and counts only on a thread that
// switched counting on, so the test runner's other threads (Swift Testing runs suites side by side) never disturb
// a count. swift-nio's allocation-counter tests hook the same functions.
//
// With HUSH_ALLOC_TRACE set in the environment, every allocation counted prints its backtrace on stderr (resolve
// the addresses with addr2line -f -C -e THE_TEST_BINARY): what found the metadata the Swift runtime made on the
// audio thread at its first handover.
//
// Under AddressSanitizer or ThreadSanitizer the hooks are left out: the sanitizer's own allocator must see every
// allocation. hush_allocation_counter_installed() then answers false, and the tests skip themselves.
#ifndef HUSH_ALLOCATION_COUNTER_H
#define HUSH_ALLOCATION_COUNTER_H
#include <stdbool.h>
#include <stdint.h>

/// Whether the hooks are linked in (false under a sanitizer).
bool hush_allocation_counter_installed(void);

/// Starts or stops counting on the calling thread; starting sets its counts to 0.
void hush_allocation_counting(bool on);

/// Blocks handed out (malloc, calloc, realloc, and the aligned forms) on the calling thread since counting started.
int64_t hush_allocations_on_this_thread(void);

/// Blocks given back (free, and realloc's old block) on the calling thread since counting started.
int64_t hush_frees_on_this_thread(void);

#endif
