// Swift-visible face of alsa-lib. Macro-only API is re-exported here as small `calsa_` functions.
#ifndef HUSH_CALSA_SHIM_H
#define HUSH_CALSA_SHIM_H
#include <alsa/asoundlib.h>

/// SND_LIB_VERSION_STR is a macro: the version this module was compiled against.
static inline const char *calsa_header_version(void) { return SND_LIB_VERSION_STR; }

/// alsa-lib prints some errors itself, to standard error, besides returning them: every open of a PCM on a missing
/// card adds "ALSA lib confmisc.c:165:(snd_config_get_card) Cannot get card index for X". hush reports each failure
/// with its errno and retries a missing card every 250 ms, so those lines would fill the journal. A handler with
/// no body drops them; NULL gives alsa-lib's own printing back. (A variadic function: Swift cannot define one.)
static void calsa_drop_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file, (void)line, (void)function, (void)err, (void)fmt;
}
static inline void calsa_print_library_errors(int print) {
    snd_lib_error_set_handler(print ? NULL : calsa_drop_error);
}

#endif
