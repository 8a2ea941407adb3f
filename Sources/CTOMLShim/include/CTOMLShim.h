// A plain C view of toml++ (Debian's libtomlplusplus-dev, 3.3.0) for hushd's Swift code: parse a text into either
// an error with its line and column, or a flat array of nodes that Swift walks. Nothing C++ crosses this header.
#ifndef HUSH_CTOMLSHIM_H
#define HUSH_CTOMLSHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What a node holds.
typedef enum hush_toml_kind {
    HUSH_TOML_TABLE = 0,
    HUSH_TOML_ARRAY = 1,
    HUSH_TOML_STRING = 2,
    HUSH_TOML_INTEGER = 3,
    HUSH_TOML_FLOAT = 4,
    HUSH_TOML_BOOLEAN = 5,
    /// A date, a time or a date and time, as TOML spells it (`text`).
    HUSH_TOML_DATE_TIME = 6,
} hush_toml_kind;

/// One value of the parsed document. Strings are byte ranges in `hush_toml_result.strings` (UTF-8, not
/// NUL-terminated, may hold NUL bytes, which TOML allows in escapes).
typedef struct hush_toml_node {
    hush_toml_kind kind;
    /// Where it was written, 1-based: for a table's entry the position of its key (the line a person edits),
    /// for an array's element the element itself. 0 when toml++ knows no position.
    uint32_t line;
    uint32_t column;
    /// The entry's key when the parent is a table; length 0 in an array or for the root.
    size_t key_offset;
    size_t key_length;
    /// A string's text, or a date or time as TOML spells it.
    size_t text_offset;
    size_t text_length;
    int64_t integer;
    double floating;
    /// 0 or 1.
    uint8_t boolean;
    /// A table's entries or an array's elements: `nodes[first_child ..< first_child + child_count]`.
    size_t first_child;
    size_t child_count;
} hush_toml_node;

/// The outcome of one parse: `ok` with `nodes[0]` the document's root table, or not `ok` with an error.
typedef struct hush_toml_result {
    int ok;
    /// 1-based position of the error; 0 when none is known (the text ended, or memory ran out).
    uint32_t error_line;
    uint32_t error_column;
    /// What is wrong, NUL-terminated; NULL when `ok`.
    const char *error_description;
    const hush_toml_node *nodes;
    size_t node_count;
    const char *strings;
    size_t strings_length;
    /// The C++ storage behind the pointers above; released by hush_toml_result_free.
    void *storage;
} hush_toml_result;

/// Parses `length` bytes of `text` (need not be NUL-terminated). Never throws and never aborts on any input:
/// every C++ exception, and every internal check of toml++ that fails, becomes an error result.
hush_toml_result hush_toml_parse(const char *text, size_t length);

/// Releases what `result` points to; the pointers in it are invalid afterwards. Safe on any result once.
void hush_toml_result_free(hush_toml_result *result);

#ifdef __cplusplus
}
#endif

#endif
