// Swift-visible face of alsa-lib. Macro-only API is re-exported here as small `calsa_` functions.
#ifndef HUSH_CALSA_SHIM_H
#define HUSH_CALSA_SHIM_H
#include <alsa/asoundlib.h>

/// SND_LIB_VERSION_STR is a macro: the version this module was compiled against.
static inline const char *calsa_header_version(void) { return SND_LIB_VERSION_STR; }

#endif
