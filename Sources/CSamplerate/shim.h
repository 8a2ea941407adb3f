// Swift-visible face of libsamplerate.
#ifndef HUSH_CSAMPLERATE_SHIM_H
#define HUSH_CSAMPLERATE_SHIM_H
#include <samplerate.h>

#endif
