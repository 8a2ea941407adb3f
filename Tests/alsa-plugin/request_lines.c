/*
 * request_lines.c: prints the `hush` ALSA plugin's category table and the open-stream lines it sends, built by the
 * plugin's own code (pcm_hush.c is included whole), so that PluginRequestLineTests can parse every line with
 * hushd's RequestParser and compare it with Swift's table. `make alsa-plugin` builds it into
 * .build/alsa-plugin/hush-request-lines.
 *
 *   hush-request-lines [CONFIGURATION...]
 *
 * Prints `table NAME CATEGORY BUS MODE` for each row of the plugin's table (BUS `-` when it leaves the bus to hushd,
 * MODE `-` for the default),
 * then for the device with no arguments, for each name in the table (as `hush:NAME` configures it), and for each
 * CONFIGURATION (the slave's fields, as 50-hush.conf passes them: `category "music" options "duckOthers"`):
 *
 *   case N CONFIGURATION
 *   line N playback {"command":"open-stream",...}
 *   line N capture {"command":"open-stream",...}
 *
 * or `refused N ERRNO` when the plugin refuses the configuration.
 */
#include "../../Sources/hush-alsa-plugin/pcm_hush.c"

static void print_case(int number, const char *configuration) {
    printf("case %d %s\n", number, configuration);
    snd_config_t *top = NULL;
    snd_input_t *input = NULL;
    int error = snd_config_top(&top);
    if (error == 0) error = snd_input_buffer_open(&input, configuration, (ssize_t)strlen(configuration));
    if (error == 0) error = snd_config_load(top, input);
    if (input) snd_input_close(input);
    struct hush_pcm *pcm = calloc(1, sizeof(*pcm));
    char *arguments[ARG_COUNT] = {NULL};
    if (error == 0 && pcm) error = configure(pcm, top, arguments);
    for (int a = 0; a < ARG_COUNT; a++) free(arguments[a]);
    if (top) snd_config_delete(top);
    if (error < 0 || !pcm) {
        printf("refused %d %d\n", number, pcm ? -error : ENOMEM);
        if (pcm) free(pcm->bus);
        free(pcm);
        return;
    }
    for (int playback = 1; playback >= 0; playback--) {
        char text[1024];
        uint64_t id;
        struct hush_line line = start_request(pcm, text, sizeof(text), "open-stream", &id);
        open_stream_fields(&line, pcm, playback, 48000, 2, "S16_LE", 4096, 1024);
        hush_line_raw(&line, "}");
        printf("line %d %s %s\n", number, playback ? "playback" : "capture", line.overflow ? "overflow" : line.text);
    }
    free(pcm->bus);
    free(pcm);
}

int main(int argc, char **argv) {
    size_t rows = sizeof(categories) / sizeof(categories[0]);
    for (size_t i = 0; i < rows; i++)
        printf("table %s %s %s %s\n", categories[i].name, categories[i].category,
               categories[i].bus ? categories[i].bus : "-", categories[i].mode ? categories[i].mode : "-");
    int number = 0;
    print_case(number++, "name \"probe\"");
    for (size_t i = 0; i < rows; i++) {
        char configuration[256];
        snprintf(configuration, sizeof(configuration),
                 "category \"%s\" bus \"\" options \"\" transient \"\" name \"probe\" session \"\" socket \"\"",
                 categories[i].name);
        print_case(number++, configuration);
    }
    for (int a = 1; a < argc; a++) print_case(number++, argv[a]);
    return 0;
}
