/* The offsets of src/record/pylayout.h against the headers of the CPython this is
 * compiled with (layout.sh compiles it for each CPython installed): prints every
 * field that differs and exits 1, or 0 when all agree. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#endif

#include "record/pylayout.h"

static int failures;

static void same(const char *what, long have, long want)
{
    if (have == want) return;
    printf("%s: pylayout.h has %ld, CPython %s's headers say %ld\n", what, have, PY_VERSION, want);
    failures++;
}

#define SAME(field, want) same(#field, (long)l->field, (long)(want))

static void check_frames(const struct cf_py_layout *l)
{
#if PY_VERSION_HEX < 0x030b0000
    SAME(ts_frame, offsetof(PyThreadState, frame));
    SAME(cframe, -1);
    SAME(fr_back, offsetof(PyFrameObject, f_back));
    SAME(fr_code, offsetof(PyFrameObject, f_code));
    SAME(fr_instr, offsetof(PyFrameObject, f_lasti));
    SAME(frame_objects, 1);
    SAME(lines, CF_PY_LINES_310);
#else
#if PY_VERSION_HEX < 0x030d0000
    SAME(ts_frame, offsetof(PyThreadState, cframe));
    SAME(cframe, offsetof(_PyCFrame, current_frame));
    SAME(fr_code, offsetof(_PyInterpreterFrame, f_code));
    SAME(fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
#else
    SAME(ts_frame, offsetof(PyThreadState, current_frame));
    SAME(cframe, -1);
    SAME(fr_code, offsetof(_PyInterpreterFrame, f_executable));
    SAME(fr_instr, offsetof(_PyInterpreterFrame, instr_ptr));
#endif
    SAME(fr_back, offsetof(_PyInterpreterFrame, previous));
    SAME(fr_owner, offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030c0000
    SAME(fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
    SAME(owned_by_cstack, -1);
#else
    SAME(fr_is_entry, -1);
    SAME(owned_by_cstack, FRAME_OWNED_BY_CSTACK);
#endif
    SAME(owned_by_generator, FRAME_OWNED_BY_GENERATOR);
    SAME(frame_objects, 0);
    SAME(lines, CF_PY_LINES_311);
    SAME(co_qualname, offsetof(PyCodeObject, co_qualname));
    SAME(co_code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
    SAME(co_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable));
#endif
}

/* pyread.c decodes a str's state as a 32-bit word: kind in bits 2-4, compact
 * in bit 5, ascii in bit 6. */
static void check_state_bits(void)
{
    PyASCIIObject o;
    memset(&o, 0, sizeof o);
    o.state.kind = PyUnicode_2BYTE_KIND;
    o.state.compact = 1;
    o.state.ascii = 1;
    uint32_t word;
    memcpy(&word, (const char *)&o + offsetof(PyASCIIObject, state), sizeof word);
    same("str state kind bits", (long)((word >> 2) & 7), PyUnicode_2BYTE_KIND);
    same("str state compact bit", (long)((word >> 5) & 1), 1);
    same("str state ascii bit", (long)((word >> 6) & 1), 1);
}

int main(void)
{
    check_state_bits();
    const struct cf_py_layout *l = NULL;
    for (size_t i = 0; i < sizeof cf_py_layouts / sizeof cf_py_layouts[0]; i++)
        if (cf_py_layouts[i].version == (PY_VERSION_HEX & 0xffff0000)) l = &cf_py_layouts[i];
    if (l == NULL) {
        printf("pylayout.h has no layout for CPython %s\n", PY_VERSION);
        return 1;
    }
    check_frames(l);
    SAME(co_filename, offsetof(PyCodeObject, co_filename));
    SAME(co_name, offsetof(PyCodeObject, co_name));
    SAME(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
    SAME(co_linetable, offsetof(PyCodeObject, co_linetable));
    SAME(ob_type, offsetof(PyObject, ob_type));
    SAME(bytes_size, offsetof(PyVarObject, ob_size));
    SAME(bytes_data, offsetof(PyBytesObject, ob_sval));
    SAME(str_length, offsetof(PyASCIIObject, length));
    SAME(str_state, offsetof(PyASCIIObject, state));
    SAME(str_ascii_data, sizeof(PyASCIIObject));
    SAME(str_compact_data, sizeof(PyCompactUnicodeObject));
    if (failures == 0) printf("CPython %s: every offset agrees\n", PY_VERSION);
    return failures ? 1 : 0;
}
