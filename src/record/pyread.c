/* A thread's own Python frames read from memory: no GIL, no call into the
 * interpreter, no lock, no allocation. The allocating thread is the one whose
 * frames are read, and it is inside a C call made by its innermost Python frame:
 * until that call returns, the thread itself is the only one that could push or
 * pop its frames, so the chain is still. What other threads may do meanwhile,
 * and why it does not matter, is in docs/python-frames.md; every pointer is
 * still checked for plausibility and every object for its type before it is
 * followed, and every walk and scan is bounded, so that a layout that does not
 * match gives no frames rather than a fault. Offsets come from pylayout.h, and
 * for 3.13 from the interpreter's own _Py_DebugOffsets. */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "base/real.h"
#include "record/internal.h"
#include "record/pylayout.h"

#define LINETABLE_MAX (1u << 24) /* bytes of a line table scanned at most */
#define STR_MAX       (1u << 20) /* characters of a str looked at */

static struct cf_py_layout L;
static uintptr_t code_type, str_type, bytes_type, frame_type;

/* A user-space address of an object or a frame: 8-aligned, not in the first
 * page, below the 47-bit user half. Garbage usually fails this. */
static inline bool plausible(uintptr_t p)
{
    return p >= 4096 && p < (1ull << 47) && (p & 7) == 0;
}

static inline uintptr_t load_ptr(uintptr_t base, uint32_t off)
{
    return *(const volatile uintptr_t *)(base + off);
}

static inline int32_t load_i32(uintptr_t base, uint32_t off)
{
    return *(const volatile int32_t *)(base + off);
}

static inline bool has_type(uintptr_t obj, uintptr_t type)
{
    return plausible(obj) && load_ptr(obj, L.ob_type) == type;
}

/* ---- 3.13: the offsets the interpreter publishes ---- */

/* _Py_DebugOffsets as 3.13 lays it out (Include/internal/pycore_runtime.h), up to
 * the last part used; every field is a uint64_t. */
struct debug_offsets_313 {
    char cookie[8];
    uint64_t version, free_threaded;
    uint64_t runtime_state[3];
    uint64_t interpreter_state[13];
    struct {
        uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
            datastack_chunk, status;
    } thread_state;
    struct {
        uint64_t size, previous, executable, instr_ptr, localsplus, owner;
    } frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
            localspluskinds, co_code_adaptive;
    } code;
    struct {
        uint64_t size, ob_type;
    } pyobject;
    uint64_t type_object[4], tuple_object[3], list_object[3], dict_object[3], float_object[2],
        long_object[3];
    struct {
        uint64_t size, ob_size, ob_sval;
    } bytes;
    struct {
        uint64_t size, state, length, asciiobject_size;
    } str;
};

static bool fits(uint64_t off, uint64_t size)
{
    return off < size && off < UINT16_MAX;
}

/* The 3.13 table with what _Py_DebugOffsets says, when it is there and sane.
 * False for a free-threaded build, whose objects are laid out otherwise. */
static bool apply_debug_offsets(void)
{
    const struct debug_offsets_313 *d = cf_real_dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (d == NULL || memcmp(d->cookie, "xdebugpy", 8) != 0 ||
        (d->version & 0xffff0000u) != 0x030d0000u)
        return true;
    if (d->free_threaded) return false;
    if (!fits(d->thread_state.current_frame, d->thread_state.size) ||
        !fits(d->frame.previous, d->frame.size) || !fits(d->frame.executable, d->frame.size) ||
        !fits(d->frame.instr_ptr, d->frame.size) || !fits(d->frame.owner, d->frame.size) ||
        !fits(d->code.filename, d->code.size) || !fits(d->code.qualname, d->code.size) ||
        !fits(d->code.linetable, d->code.size) || !fits(d->code.firstlineno, d->code.size) ||
        !fits(d->code.co_code_adaptive, d->code.size + 1) ||
        !fits(d->pyobject.ob_type, d->pyobject.size) || !fits(d->bytes.ob_sval, d->bytes.size) ||
        !fits(d->str.state, d->str.asciiobject_size))
        return true;
    L.ts_frame = (uint16_t)d->thread_state.current_frame;
    L.fr_back = (uint16_t)d->frame.previous;
    L.fr_code = (uint16_t)d->frame.executable;
    L.fr_instr = (uint16_t)d->frame.instr_ptr;
    L.fr_owner = (uint16_t)d->frame.owner;
    L.co_filename = (uint16_t)d->code.filename;
    L.co_name = (uint16_t)d->code.name;
    L.co_qualname = (uint16_t)d->code.qualname;
    L.co_linetable = (uint16_t)d->code.linetable;
    L.co_firstlineno = (uint16_t)d->code.firstlineno;
    L.co_code_adaptive = (uint16_t)d->code.co_code_adaptive;
    L.ob_type = (uint16_t)d->pyobject.ob_type;
    L.bytes_size = (uint16_t)d->bytes.ob_size;
    L.bytes_data = (uint16_t)d->bytes.ob_sval;
    L.str_length = (uint16_t)d->str.length;
    L.str_state = (uint16_t)d->str.state;
    L.str_ascii_data = (uint16_t)d->str.asciiobject_size;
    return true;
}

static uintptr_t type_address(const char *name)
{
    return (uintptr_t)cf_real_dlsym(RTLD_DEFAULT, name);
}

bool cf_pyread_setup(unsigned long version)
{
    const struct cf_py_layout *found = NULL;
    for (size_t i = 0; i < sizeof cf_py_layouts / sizeof cf_py_layouts[0]; i++)
        if (cf_py_layouts[i].version == (version & 0xffff0000ul)) found = &cf_py_layouts[i];
    if (found == NULL) return false;
    L = *found;
    if (L.version == 0x030d0000 && !apply_debug_offsets()) return false;
    code_type = type_address("PyCode_Type");
    str_type = type_address("PyUnicode_Type");
    bytes_type = type_address("PyBytes_Type");
    frame_type = type_address("PyFrame_Type");
    return code_type && str_type && bytes_type && frame_type;
}

/* ---- the walk ---- */

/* The innermost frame of a thread state: 0 for none, 1 for an implausible one. */
static uintptr_t first_frame(uintptr_t tstate)
{
    if (!plausible(tstate)) return 1;
    uintptr_t f = load_ptr(tstate, L.ts_frame);
    if (L.cframe >= 0 && f != 0) {
        if (!plausible(f)) return 1;
        f = load_ptr(f, (uint32_t)L.cframe);
    }
    return f;
}

/* The instruction a frame is at, in bytes into its code; -1 before the first. */
static int32_t instr_offset(uintptr_t f, uintptr_t code)
{
    if (L.frame_objects) {
        int32_t lasti = load_i32(f, L.fr_instr); /* in code units */
        return lasti < 0 || lasti > (INT32_MAX >> 1) ? -1 : lasti * 2;
    }
    intptr_t off = (intptr_t)(load_ptr(f, L.fr_instr) - (code + L.co_code_adaptive));
    return off < 0 || off > INT32_MAX ? -1 : (int32_t)off;
}

/* From 3.11, a frame pushed whose prologue has not run yet, as CPython's own
 * _PyFrame_IsIncomplete: its caller is the frame to show (3.13 pushes such a
 * frame around __init__). */
static bool incomplete(uint8_t owner, uintptr_t code, int32_t offset)
{
    if (L.frame_objects || (int8_t)owner == L.owned_by_generator) return false;
    return offset < 0 || offset / 2 < load_i32(code, L.co_firsttraceable);
}

/* One Python frame into *out; false when f is not a plausible one. *skip: a
 * frame that is not shown (a C call's entry frame, an incomplete one). *entry:
 * the frames of one C call of the eval loop end here (up to 3.10 each runs one;
 * in 3.11 the first of them says so; from 3.12 a frame of its own, owned by the
 * C stack, comes before them). */
static bool read_frame(uintptr_t f, struct cf_py_raw *out, bool *skip, bool *entry)
{
    uint8_t owner = L.frame_objects ? 0 : *(const volatile uint8_t *)(f + L.fr_owner);
    bool cstack = L.owned_by_cstack >= 0 && (int8_t)owner == L.owned_by_cstack;
    *entry = L.frame_objects || cstack ||
             (L.fr_is_entry >= 0 && *(const volatile uint8_t *)(f + (uint32_t)L.fr_is_entry));
    *skip = cstack;
    if (cstack) return true;
    uintptr_t code = load_ptr(f, L.fr_code);
    if (!has_type(code, code_type)) return false;
    int32_t offset = instr_offset(f, code);
    *skip = incomplete(owner, code, offset);
    *out = (struct cf_py_raw){
        .code = code,
        .filename = load_ptr(code, L.co_filename),
        .name = load_ptr(code, L.co_qualname ? L.co_qualname : L.co_name),
        .linetable = load_ptr(code, L.co_linetable),
        .firstlineno = load_i32(code, L.co_firstlineno),
        .offset = offset,
    };
    return true;
}

int cf_pyread_walk(uintptr_t tstate, struct cf_py_raw *out, uint32_t max)
{
    uintptr_t f = first_frame(tstate);
    uint32_t n = 0, steps = 0, step_max = 4 * max + 64; /* skipped frames, cycles */
    while (f != 0 && n < max && steps++ < step_max) {
        if (!plausible(f) || (L.frame_objects && load_ptr(f, L.ob_type) != frame_type)) return -1;
        bool skip, entry;
        if (!read_frame(f, &out[n], &skip, &entry)) return -1;
        if (!skip)
            out[n++].ends_entry = entry;
        else if (entry && n > 0)
            out[n - 1].ends_entry = true;
        f = load_ptr(f, L.fr_back);
    }
    return (int)n;
}

/* ---- names ---- */

/* The UTF-8 of code point c into out[0..4); its length. */
static uint32_t utf8_put(uint32_t c, char *out)
{
    if (c < 0x80) return out[0] = (char)c, 1;
    if (c < 0x800) return out[0] = (char)(0xC0 | c >> 6), out[1] = (char)(0x80 | (c & 63)), 2;
    if (c < 0x10000) {
        if (c >= 0xD800 && c < 0xE000) c = 0xFFFD; /* a lone surrogate */
        out[0] = (char)(0xE0 | c >> 12);
        out[1] = (char)(0x80 | ((c >> 6) & 63));
        out[2] = (char)(0x80 | (c & 63));
        return 3;
    }
    if (c > 0x10FFFF) c = 0xFFFD;
    out[0] = (char)(0xF0 | c >> 18);
    out[1] = (char)(0x80 | ((c >> 12) & 63));
    out[2] = (char)(0x80 | ((c >> 6) & 63));
    out[3] = (char)(0x80 | (c & 63));
    return 4;
}

/* A compact str as UTF-8 into out (cap > 4, '\0'-terminated): its start, or its
 * end when keep_end and it does not fit. Its length, or -1 when s is not a
 * compact str. The characters of a compact str follow its header. */
static int read_str(uintptr_t s, char *out, uint32_t cap, bool keep_end)
{
    if (!has_type(s, str_type)) return -1;
    int64_t len = *(const volatile int64_t *)(s + L.str_length);
    uint32_t state = *(const volatile uint32_t *)(s + L.str_state);
    uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (len < 0 || len > STR_MAX || !compact || (kind != 1 && kind != 2 && kind != 4)) return -1;
    uintptr_t data = s + (ascii ? L.str_ascii_data : L.str_compact_data);
    /* The last characters of a long name: at most cap-1 bytes, 4 per character. */
    int64_t room = ((int64_t)cap - 4) / (ascii ? 1 : 4);
    int64_t first = keep_end && len > room ? len - room : 0;
    uint32_t n = 0;
    for (int64_t i = first; i < len && n + 4 < cap; i++) {
        uint32_t c = kind == 1   ? ((const volatile uint8_t *)data)[i]
                     : kind == 2 ? ((const volatile uint16_t *)data)[i]
                                 : ((const volatile uint32_t *)data)[i];
        n += utf8_put(c, out + n);
    }
    out[n] = '\0';
    return (int)n;
}

uint32_t cf_pyread_names(const struct cf_py_raw *f, char *text, uint32_t file_cap,
                         uint32_t func_cap, uint32_t *file_len)
{
    int n = read_str(f->filename, text, file_cap, true);
    if (n < 0) return 0;
    int m = read_str(f->name, text + n + 1, func_cap, false);
    if (m < 0) return 0;
    *file_len = (uint32_t)n;
    return (uint32_t)(n + m + 2);
}

/* ---- lines ---- */

/* 3.10 (PEP 626): pairs of (bytes of code, signed line delta; -128: no line), as
 * CPython's PyCode_Addr2Line reads them. */
static int line_310(const volatile uint8_t *t, uint32_t len, int line, int32_t addr)
{
    int32_t start = -1, end = 0;
    int ar_line = -1;
    uint32_t i = 0;
    while (end <= addr) {
        do { /* ranges of no bytes are skipped */
            if (i + 2 > len) return -1;
            start = end;
            end += t[i];
            int8_t d = (int8_t)t[i + 1];
            i += 2;
            ar_line = d == -128 ? -1 : (line += d);
        } while (start == end);
    }
    return ar_line;
}

/* A varint of the location table at t[*i]: 6 bits a byte, bit 6 continues. */
static uint32_t varint_311(const volatile uint8_t *t, uint32_t len, uint32_t i)
{
    uint32_t b = i < len ? t[i++] : 0, val = b & 63, shift = 0;
    while ((b & 64) && i < len && shift < 26) {
        b = t[i++];
        shift += 6;
        val |= (b & 63) << shift;
    }
    return val;
}

/* The line delta of the entry at t[i] (its first byte has bit 7 set; bits 3-6
 * are its kind: 15 none, 13 and 14 a signed varint, 10-12 one line plus 0-2). */
static int line_delta_311(const volatile uint8_t *t, uint32_t len, uint32_t i)
{
    uint32_t code = (t[i] >> 3) & 15, v;
    switch (code) {
    case 13:
    case 14:
        v = varint_311(t, len, i + 1);
        return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
    case 10:
    case 11:
    case 12:
        return (int)code - 10;
    default:
        return 0;
    }
}

/* 3.11+ (PEP 657): entries of 1-8 code units each, as PyCode_Addr2Line. */
static int line_311(const volatile uint8_t *t, uint32_t len, int line, int32_t addr)
{
    int32_t end = 0;
    int ar_line = -1;
    uint32_t i = 0;
    while (end <= addr) {
        if (i >= len || !(t[i] & 128)) return -1;
        line += line_delta_311(t, len, i);
        ar_line = (t[i] >> 3) == 0x1f ? -1 : line;
        end += ((t[i] & 7) + 1) * 2;
        do
            i++;
        while (i < len && !(t[i] & 128));
    }
    return ar_line;
}

uint32_t cf_pyread_line(const struct cf_py_raw *f)
{
    if (f->offset < 0) return f->firstlineno > 0 ? (uint32_t)f->firstlineno : 0;
    if (!has_type(f->linetable, bytes_type)) return 0;
    int64_t len = *(const volatile int64_t *)(f->linetable + L.bytes_size);
    if (len < 0 || len > LINETABLE_MAX) return 0;
    const volatile uint8_t *t = (const volatile uint8_t *)(f->linetable + L.bytes_data);
    int line = L.lines == CF_PY_LINES_310 ? line_310(t, (uint32_t)len, f->firstlineno, f->offset)
                                          : line_311(t, (uint32_t)len, f->firstlineno, f->offset);
    return line > 0 ? (uint32_t)line : 0;
}
