// libsndfile for HushAudioFile, opened the first time a sound file is used rather than when hushd starts.
//
// libsndfile brings seven codec libraries with it (FLAC, Ogg, Vorbis and its encoder, Opus, mpg123, LAME): eight of
// the twenty files the loader would otherwise open, map and relocate before hushd's first instruction, 16 ms of a
// cold start on the build machine (docs/performance.md, "Start-up"). A doorbell that never plays a file never loads
// them. The types and constants are libsndfile's own header's; the functions are hush_sf_* wrappers that load
// libsndfile.so.1 on first use (once, thread-safe) and forward to it.
//
// When the library cannot be loaded, every wrapper fails as libsndfile fails: hush_sf_open returns NULL,
// hush_sf_strerror(NULL) says why ("libsndfile.so.1 could not be loaded: ..."), the counts are 0.
#ifndef HUSH_CSNDFILE_H
#define HUSH_CSNDFILE_H

#include <sndfile.h>

_Static_assert(sizeof(sf_count_t) == 8, "libsndfile must be built with 64-bit frame counts");

#ifdef __cplusplus
extern "C" {
#endif

/// The soname opened: the ABI hush was built against (libsndfile1 in Debian).
#define HUSH_SNDFILE_SONAME "libsndfile.so.1"

/// 1 once libsndfile is loaded (loading it if it is not yet), 0 if it cannot be: then hush_sf_strerror(NULL) says
/// why, so that a file is not blamed for a missing library.
int hush_sf_load(void);

SNDFILE *hush_sf_open(const char *path, int mode, SF_INFO *info);
int hush_sf_close(SNDFILE *file);
int hush_sf_error(SNDFILE *file);
const char *hush_sf_strerror(SNDFILE *file);
sf_count_t hush_sf_seek(SNDFILE *file, sf_count_t frames, int whence);
sf_count_t hush_sf_readf_float(SNDFILE *file, float *samples, sf_count_t frames);
sf_count_t hush_sf_readf_short(SNDFILE *file, short *samples, sf_count_t frames);
sf_count_t hush_sf_writef_float(SNDFILE *file, const float *samples, sf_count_t frames);
sf_count_t hush_sf_writef_short(SNDFILE *file, const short *samples, sf_count_t frames);
int hush_sf_command(SNDFILE *file, int command, void *data, int size);
/// e.g. "libsndfile-1.2.0", or "libsndfile (not loaded: ...)".
const char *hush_sf_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
