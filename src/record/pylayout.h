/* Where CPython keeps what the Python frames of a thread are read from, per minor
 * version, as offsets into its own structures (its Include/ and Include/internal/
 * headers; tests/python/layout_check.c compares every value with the headers of
 * each CPython installed). For 3.13 the offsets CPython publishes for debuggers
 * (_Py_DebugOffsets, at the start of _PyRuntime) replace the ones they cover at
 * run time. CPython keeps these layouts within a minor version (debuggers such as
 * py-spy use one table per minor version too). Included by pyread.c only, and by
 * the layout check, which must see the same table. */
#ifndef CF_RECORD_PYLAYOUT_H
#define CF_RECORD_PYLAYOUT_H

#include <stdint.h>

enum cf_py_lines {
    CF_PY_LINES_310, /* co_linetable: (bytes, line delta) pairs, PEP 626 */
    CF_PY_LINES_311, /* co_linetable: the location table of PEP 657 */
};

struct cf_py_layout {
    uint32_t version; /* PY_VERSION_HEX of the minor version, 0x030a0000 ... */
    uint8_t lines;    /* enum cf_py_lines */
    /* 3.10: frames are PyFrameObjects and f_lasti counts code units; from 3.11
     * they are _PyInterpreterFrames and hold a pointer into co_code_adaptive. */
    uint8_t frame_objects;
    /* The innermost frame: *(tstate + ts_frame), then, where cframe >= 0 (3.11,
     * 3.12: tstate->cframe->current_frame), *(that + cframe). */
    uint16_t ts_frame;
    int16_t cframe;
    /* A frame. instr: f_lasti (3.10, an int), prev_instr (3.11, 3.12) or
     * instr_ptr (3.13). is_entry: 3.11 only (-1 elsewhere). */
    uint16_t fr_code, fr_back, fr_instr, fr_owner;
    int16_t fr_is_entry;
    int8_t owned_by_generator, owned_by_cstack; /* -1: no such owner */
    /* A code object. qualname: 0 before 3.11 (co_name is used). */
    uint16_t co_filename, co_name, co_qualname, co_firstlineno, co_linetable;
    uint16_t co_code_adaptive, co_firsttraceable; /* 3.11+ */
    /* Objects: every PyObject's type, a bytes object's size and data, a str's
     * length and state bits, where a compact ASCII str's characters start
     * (sizeof(PyASCIIObject)) and where other compact strs' start
     * (sizeof(PyCompactUnicodeObject)). */
    uint16_t ob_type, bytes_size, bytes_data;
    uint16_t str_length, str_state, str_ascii_data, str_compact_data;
};

/* x86-64 and aarch64 Linux, release builds (no Py_DEBUG, Py_TRACE_REFS). */
static const struct cf_py_layout cf_py_layouts[] = {
    {.version = 0x030a0000,
     .lines = CF_PY_LINES_310,
     .frame_objects = 1,
     .ts_frame = 24,
     .cframe = -1,
     .fr_code = 32,
     .fr_back = 24,
     .fr_instr = 96,
     .fr_owner = 0,
     .fr_is_entry = -1,
     .owned_by_generator = -1,
     .owned_by_cstack = -1,
     .co_filename = 104,
     .co_name = 112,
     .co_qualname = 0,
     .co_firstlineno = 40,
     .co_linetable = 120,
     .co_code_adaptive = 0,
     .co_firsttraceable = 0,
     .ob_type = 8,
     .bytes_size = 16,
     .bytes_data = 32,
     .str_length = 16,
     .str_state = 32,
     .str_ascii_data = 48,
     .str_compact_data = 72},
    {.version = 0x030b0000,
     .lines = CF_PY_LINES_311,
     .frame_objects = 0,
     .ts_frame = 56,
     .cframe = 8,
     .fr_code = 32,
     .fr_back = 48,
     .fr_instr = 56,
     .fr_owner = 69,
     .fr_is_entry = 68,
     .owned_by_generator = 1,
     .owned_by_cstack = -1,
     .co_filename = 112,
     .co_name = 120,
     .co_qualname = 128,
     .co_firstlineno = 72,
     .co_linetable = 136,
     .co_code_adaptive = 184,
     .co_firsttraceable = 168,
     .ob_type = 8,
     .bytes_size = 16,
     .bytes_data = 32,
     .str_length = 16,
     .str_state = 32,
     .str_ascii_data = 48,
     .str_compact_data = 72},
    {.version = 0x030c0000,
     .lines = CF_PY_LINES_311,
     .frame_objects = 0,
     .ts_frame = 56,
     .cframe = 0,
     .fr_code = 0,
     .fr_back = 8,
     .fr_instr = 56,
     .fr_owner = 70,
     .fr_is_entry = -1,
     .owned_by_generator = 1,
     .owned_by_cstack = 3,
     .co_filename = 112,
     .co_name = 120,
     .co_qualname = 128,
     .co_firstlineno = 68,
     .co_linetable = 136,
     .co_code_adaptive = 192,
     .co_firsttraceable = 176,
     .ob_type = 8,
     .bytes_size = 16,
     .bytes_data = 32,
     .str_length = 16,
     .str_state = 32,
     .str_ascii_data = 40,
     .str_compact_data = 56},
    {.version = 0x030d0000,
     .lines = CF_PY_LINES_311,
     .frame_objects = 0,
     .ts_frame = 72,
     .cframe = -1,
     .fr_code = 0,
     .fr_back = 8,
     .fr_instr = 56,
     .fr_owner = 70,
     .fr_is_entry = -1,
     .owned_by_generator = 1,
     .owned_by_cstack = 3,
     .co_filename = 112,
     .co_name = 120,
     .co_qualname = 128,
     .co_firstlineno = 68,
     .co_linetable = 136,
     .co_code_adaptive = 200,
     .co_firsttraceable = 184,
     .ob_type = 8,
     .bytes_size = 16,
     .bytes_data = 32,
     .str_length = 16,
     .str_state = 32,
     .str_ascii_data = 40,
     .str_compact_data = 56},
};

#endif
