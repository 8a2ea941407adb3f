// Swift-visible face of libgpiod 1.6 (the API Debian bookworm ships).
#ifndef HUSH_CGPIOD_SHIM_H
#define HUSH_CGPIOD_SHIM_H
#include <gpiod.h>

// hush is written against the 1.x line API (gpiod_line_request_*); libgpiod 2 changed it completely.
_Static_assert(GPIOD_LINE_EVENT_RISING_EDGE == 1, "libgpiod 1.x event constants expected");
_Static_assert(GPIOD_LINE_BULK_MAX_LINES == 64, "libgpiod 1.x bulk size expected");

#endif
