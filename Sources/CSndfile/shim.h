// Swift-visible face of libsndfile.
#ifndef HUSH_CSNDFILE_SHIM_H
#define HUSH_CSNDFILE_SHIM_H
#include <sndfile.h>

_Static_assert(sizeof(sf_count_t) == 8, "libsndfile must be built with 64-bit frame counts");

#endif
