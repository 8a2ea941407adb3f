// libsndfile loaded on first use: see include/CSndfile.h for why.
#include "CSndfile.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static struct {
    SNDFILE *(*open)(const char *, int, SF_INFO *);
    int (*close)(SNDFILE *);
    int (*error)(SNDFILE *);
    const char *(*strerror)(SNDFILE *);
    sf_count_t (*seek)(SNDFILE *, sf_count_t, int);
    sf_count_t (*readf_float)(SNDFILE *, float *, sf_count_t);
    sf_count_t (*readf_short)(SNDFILE *, short *, sf_count_t);
    sf_count_t (*writef_float)(SNDFILE *, const float *, sf_count_t);
    sf_count_t (*writef_short)(SNDFILE *, const short *, sf_count_t);
    int (*command)(SNDFILE *, int, void *, int);
    const char *(*version_string)(void);
} sf;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
// Why loading failed, for hush_sf_strerror(NULL) and the version line: written once, under `once`.
static char failure[512];
// hush_sf_version_string's answer when loading failed, written with `failure`.
static char unavailable[600];

static void fail(void) { snprintf(unavailable, sizeof unavailable, "libsndfile (not loaded: %s)", failure); }

static void load(void) {
    // RTLD_LOCAL: the codecs' symbols stay out of hushd's global scope.
    void *library = dlopen(HUSH_SNDFILE_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "%s could not be loaded: %s (is the libsndfile1 package installed?)",
                 HUSH_SNDFILE_SONAME, why ? why : "unknown error");
        fail();
        return;
    }
#define FIND(field, name)                                                                                      \
    do {                                                                                                       \
        *(void **)&sf.field = dlsym(library, name);                                                             \
        if (sf.field == NULL) {                                                                                \
            snprintf(failure, sizeof failure, "%s has no %s: not the libsndfile hush was built for",           \
                     HUSH_SNDFILE_SONAME, name);                                                               \
            fail();                                                                                            \
            return;                                                                                            \
        }                                                                                                      \
    } while (0)
    FIND(open, "sf_open");
    FIND(close, "sf_close");
    FIND(error, "sf_error");
    FIND(strerror, "sf_strerror");
    FIND(seek, "sf_seek");
    FIND(readf_float, "sf_readf_float");
    FIND(readf_short, "sf_readf_short");
    FIND(writef_float, "sf_writef_float");
    FIND(writef_short, "sf_writef_short");
    FIND(command, "sf_command");
    FIND(version_string, "sf_version_string");
#undef FIND
    loaded = 1;
}

int hush_sf_load(void) {
    pthread_once(&once, load);
    return loaded;
}

SNDFILE *hush_sf_open(const char *path, int mode, SF_INFO *info) {
    return hush_sf_load() ? sf.open(path, mode, info) : NULL;
}

// Only a file hush_sf_open returned reaches the rest, so the library is loaded there.
int hush_sf_close(SNDFILE *file) { return sf.close(file); }
int hush_sf_error(SNDFILE *file) { return sf.error(file); }
sf_count_t hush_sf_seek(SNDFILE *file, sf_count_t frames, int whence) { return sf.seek(file, frames, whence); }
sf_count_t hush_sf_readf_float(SNDFILE *file, float *samples, sf_count_t frames) {
    return sf.readf_float(file, samples, frames);
}
sf_count_t hush_sf_readf_short(SNDFILE *file, short *samples, sf_count_t frames) {
    return sf.readf_short(file, samples, frames);
}
sf_count_t hush_sf_writef_float(SNDFILE *file, const float *samples, sf_count_t frames) {
    return sf.writef_float(file, samples, frames);
}
sf_count_t hush_sf_writef_short(SNDFILE *file, const short *samples, sf_count_t frames) {
    return sf.writef_short(file, samples, frames);
}

const char *hush_sf_strerror(SNDFILE *file) {
    if (!hush_sf_load()) return failure;
    return sf.strerror(file);
}

int hush_sf_command(SNDFILE *file, int command, void *data, int size) {
    // SFC_GET_LIB_VERSION and the like take no file.
    return hush_sf_load() ? sf.command(file, command, data, size) : 0;
}

const char *hush_sf_version_string(void) { return hush_sf_load() ? sf.version_string() : unavailable; }
