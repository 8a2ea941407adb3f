// The only C++ in hush: toml++ 3.3.0 (Debian's libtomlplusplus-dev, header-only) behind the C API of
// include/CTOMLShim.h. Every exception is caught here; nothing C++ reaches Swift.
//
// toml++'s internal checks (TOML_ASSERT, TOML_ASSERT_ASSUME) are not only about toml++'s own bookkeeping: in
// 3.3.0 some fail on malformed input. Built as Debian ships it (assert), these abort the process, measured with a
// debug build (no NDEBUG) of toml::parse on the inputs hush's old TOMLPrecheck stood in front of:
//   - a table header with no name after its bracket (`[  `, `[[ `, `[[[x]]]`, `[ = 1`, with or without a byte
//     order mark): "is_bare_key_character(*cp) || is_string_delimiter(*cp)" in parser::parse_key (parser.inl:3037);
//   - a `}` where an array expects a value (`i=[}`, `i=[1,}`, `i={a=[}]}`): "!is_value_terminator(*cp)" in
//     parser::parse_value (parser.inl:2549).
// 12 of those 13 inputs aborted (exit 134); all 7 of Fuzz/Regressions/fuzz-config and fuzz-state did.
// With NDEBUG it is worse, not better: TOML_ASSERT_ASSUME becomes __builtin_assume, so the same inputs are
// undefined behaviour in an optimised build. So this file keeps the checks in every build (NDEBUG is undefined
// below) and makes a failed check throw instead of abort: the parser's frames unwind (toml++ is RAII throughout
// and throws its own parse_error the same way), hush_toml_parse catches it and reports a syntax error at the
// character the parser was looking at (the parser's `cp`). Tests: TOMLShimTests, BadConfigTests,
// StateStoreTests, and Fuzz/Regressions replayed through fuzz-config.
//
// Limit: a check inside one of toml++'s noexcept functions (its UTF-8 byte stream and its look-back buffer:
// parser.inl lines 98, 567, 568, 1124) would still end the process through std::terminate, since nothing may
// leave a noexcept function. Those check toml++'s own counters, not the input's shape, and no input found by
// fuzzing has reached one.
#undef NDEBUG

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "CTOMLShim.h"

namespace hush_toml_shim {

/// Thrown by a failed toml++ check instead of abort().
struct check_failed {
    const char *expression;
    int source_line;  // in toml++'s parser.inl, for the message
    uint32_t line;
    uint32_t column;
};

template <typename P, typename = void>
struct has_position : std::false_type {};
template <typename P>
struct has_position<P, std::void_t<decltype(std::declval<const P &>().position.line)>> : std::true_type {};

/// Throws ``check_failed`` with where the parser was: `where` is whatever `cp` names where the check is, the
/// parser's current code point (a pointer with a position) inside the parser, else the placeholder below.
template <typename T>
[[noreturn]] void fail(const char *expression, int source_line, const T &where) {
    uint32_t line = 0;
    uint32_t column = 0;
    if constexpr (std::is_pointer_v<T>) {
        using Pointee = std::remove_cv_t<std::remove_pointer_t<T>>;
        if constexpr (has_position<Pointee>::value) {
            if (where != nullptr) {
                line = static_cast<uint32_t>(where->position.line);
                column = static_cast<uint32_t>(where->position.column);
            }
        }
    } else if constexpr (has_position<T>::value) {
        line = static_cast<uint32_t>(where.position.line);
        column = static_cast<uint32_t>(where.position.column);
    }
    throw check_failed{expression, source_line, line, column};
}

}  // namespace hush_toml_shim

/// What `cp` means where toml++ checks something outside its parser (which has a member `cp`, the code point it
/// is looking at): nothing, so the error has no position.
[[maybe_unused]] static constexpr std::nullptr_t cp = nullptr;

#define TOML_ASSERT(expr) \
    ((expr) ? static_cast<void>(0) : ::hush_toml_shim::fail(#expr, __LINE__, cp))
#define TOML_EXCEPTIONS 1
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

namespace {

/// Everything the C result points to.
struct Storage {
    std::vector<hush_toml_node> nodes;
    std::string strings;
    std::string error;
};

uint32_t clamp(toml::source_index value) {
    return value > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(value);
}

void append_text(Storage &storage, std::string_view text, size_t &offset, size_t &length) {
    offset = storage.strings.size();
    length = text.size();
    storage.strings.append(text);
}

/// Fills `storage.nodes[index]` from `node`, then its children in one contiguous block each.
/// Recursion depth is bounded by toml++'s own nesting limit (TOML_MAX_NESTED_VALUES, 256).
void fill(Storage &storage, size_t index, const toml::node &node) {
    hush_toml_node out{};
    out.line = clamp(node.source().begin.line);
    out.column = clamp(node.source().begin.column);
    out.key_offset = storage.nodes[index].key_offset;
    out.key_length = storage.nodes[index].key_length;
    // A table entry already holds its key's position; keep it (the line a person edits).
    if (storage.nodes[index].line != 0) {
        out.line = storage.nodes[index].line;
        out.column = storage.nodes[index].column;
    }
    switch (node.type()) {
    case toml::node_type::table: {
        const auto &table = *node.as_table();
        out.kind = HUSH_TOML_TABLE;
        out.first_child = storage.nodes.size();
        out.child_count = table.size();
        storage.nodes[index] = out;
        storage.nodes.resize(storage.nodes.size() + table.size());
        size_t child = out.first_child;
        for (const auto &[key, value] : table) {
            hush_toml_node &slot = storage.nodes[child];
            append_text(storage, key.str(), slot.key_offset, slot.key_length);
            slot.line = clamp(key.source().begin.line);
            slot.column = clamp(key.source().begin.column);
            fill(storage, child, value);
            child += 1;
        }
        return;
    }
    case toml::node_type::array: {
        const auto &array = *node.as_array();
        out.kind = HUSH_TOML_ARRAY;
        out.first_child = storage.nodes.size();
        out.child_count = array.size();
        storage.nodes[index] = out;
        storage.nodes.resize(storage.nodes.size() + array.size());
        size_t child = out.first_child;
        for (const auto &value : array) {
            fill(storage, child, value);
            child += 1;
        }
        return;
    }
    case toml::node_type::string:
        out.kind = HUSH_TOML_STRING;
        append_text(storage, node.as_string()->get(), out.text_offset, out.text_length);
        break;
    case toml::node_type::integer:
        out.kind = HUSH_TOML_INTEGER;
        out.integer = node.as_integer()->get();
        break;
    case toml::node_type::floating_point:
        out.kind = HUSH_TOML_FLOAT;
        out.floating = node.as_floating_point()->get();
        break;
    case toml::node_type::boolean:
        out.kind = HUSH_TOML_BOOLEAN;
        out.boolean = node.as_boolean()->get() ? 1 : 0;
        break;
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
    default: {
        out.kind = HUSH_TOML_DATE_TIME;
        std::ostringstream spelled;
        if (auto date = node.as_date()) {
            spelled << date->get();
        } else if (auto time = node.as_time()) {
            spelled << time->get();
        } else if (auto date_time = node.as_date_time()) {
            spelled << date_time->get();
        }
        append_text(storage, spelled.str(), out.text_offset, out.text_length);
        break;
    }
    }
    storage.nodes[index] = out;
}

void fail(hush_toml_result &result, Storage &storage, std::string description, uint32_t line, uint32_t column) {
    storage.error = std::move(description);
    storage.nodes.clear();
    result.ok = 0;
    result.error_line = line;
    result.error_column = column;
}

}  // namespace

extern "C" hush_toml_result hush_toml_parse(const char *text, size_t length) {
    hush_toml_result result{};
    static const char out_of_memory[] = "out of memory while parsing the TOML text";
    try {
        auto storage = std::make_unique<Storage>();
        try {
            toml::table document = toml::parse(std::string_view(length == 0 ? "" : text, length));
            storage->nodes.resize(1);
            fill(*storage, 0, document);
            result.ok = 1;
        } catch (const toml::parse_error &error) {
            fail(result, *storage, std::string(error.description()), clamp(error.source().begin.line),
                 clamp(error.source().begin.column));
        } catch (const hush_toml_shim::check_failed &check) {
            std::string description;
            if (std::strstr(check.expression, "is_bare_key_character") != nullptr) {
                description = "expected a key here (a name such as rate, or one in quotes), as in [output] or "
                              "rate = 48000";
            } else if (std::strstr(check.expression, "is_value_terminator") != nullptr) {
                description = "expected a value here (a number, \"text\", true, [array] or { table })";
            } else {
                description = std::string("the TOML parser's check '") + check.expression + "' (toml++ parser.inl:" +
                              std::to_string(check.source_line) + ") failed here; the text is malformed near this point";
            }
            fail(result, *storage, std::move(description), check.line, check.column);
        } catch (const std::bad_alloc &) {
            fail(result, *storage, out_of_memory, 0, 0);
        } catch (const std::exception &error) {
            fail(result, *storage, std::string("the TOML parser failed: ") + error.what(), 0, 0);
        } catch (...) {
            fail(result, *storage, "the TOML parser failed with an unknown C++ exception", 0, 0);
        }
        result.nodes = storage->nodes.data();
        result.node_count = storage->nodes.size();
        result.strings = storage->strings.data();
        result.strings_length = storage->strings.size();
        result.error_description = result.ok ? nullptr : storage->error.c_str();
        result.storage = storage.release();
    } catch (...) {
        // Only allocation can fail out here (the storage itself, or the error's text).
        result = hush_toml_result{};
        result.error_description = out_of_memory;
    }
    return result;
}

extern "C" void hush_toml_result_free(hush_toml_result *result) {
    if (result == nullptr) {
        return;
    }
    delete static_cast<Storage *>(result->storage);
    *result = hush_toml_result{};
}
