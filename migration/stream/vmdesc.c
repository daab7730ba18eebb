/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vmdesc writer: JSON appended to one GString as the calls come.
 *
 * The invariant: the text written so far is a prefix of a valid JSON
 * document, and the stack says what may come next. Each open container is
 * one frame; frame 0 is the document itself, which takes one value.
 *  - A comma goes before an item exactly when its frame already holds one
 *    (FRAME_HAS_ITEM): in an array before the value, in an object before
 *    the member name (its value then follows the colon, with no comma).
 *  - In an object a value is accepted only right after a name
 *    (FRAME_NAMED), and a name or the closing brace only when no name
 *    waits for its value: otherwise `"a":}` or `"a":"b":1` could be
 *    written, and the destination's analyzers would reject the vmdesc.
 *  - An end pops only a frame of its own kind, and the document is handed
 *    out only when frame 0 holds its value and nothing else is open.
 * Each rule is an assert: breaking one is a bug in the caller's sequence,
 * the same on every run, and tests/unit/test-vmdesc.c walks the grammar.
 */
#include "qemu/osdep.h"
#include "migration/vmdesc.h"

enum {
    FRAME_ROOT = 0,
    FRAME_OBJECT = 1,
    FRAME_ARRAY = 2,
    FRAME_KIND = 3,             /* mask of the kinds above */
    FRAME_HAS_ITEM = 4,         /* an item was written: the next one needs a comma */
    FRAME_NAMED = 8,            /* object: a member name waits for its value */
};

/* Enough for every vmdesc of ours without growing (a microvm nests ~5 deep). */
#define VMDESC_STACK_INIT 16
/*
 * A 1-vCPU microvm's vmdesc is ~21 KiB (16 of them the cpu section): one
 * allocation, no copy while the guest is stopped. Each further vCPU adds
 * ~16 KiB, and the GString doubles past this.
 */
#define VMDESC_TEXT_INIT (32 * 1024)

struct VMDescWriter {
    GString *text;              /* the document so far */
    uint8_t *stack;             /* frames; stack[0] is the document */
    size_t depth;               /* index of the innermost open frame */
    size_t cap;                 /* frames allocated in @stack */
};

VMDescWriter *vmdesc_new(void)
{
    VMDescWriter *w = g_new0(VMDescWriter, 1);

    w->text = g_string_sized_new(VMDESC_TEXT_INIT);
    w->cap = VMDESC_STACK_INIT;
    w->stack = g_new0(uint8_t, w->cap);
    w->stack[0] = FRAME_ROOT;
    return w;
}

void vmdesc_free(VMDescWriter *w)
{
    if (!w) {
        return;
    }
    g_string_free(w->text, TRUE);
    g_free(w->stack);
    g_free(w);
}

/* Called before every value: the comma if one is due, and the frame's bookkeeping. */
static void vmdesc_value_prefix(VMDescWriter *w)
{
    uint8_t *f = &w->stack[w->depth];

    switch (*f & FRAME_KIND) {
    case FRAME_ROOT:
        assert(!(*f & FRAME_HAS_ITEM));     /* a document holds one value */
        break;
    case FRAME_ARRAY:
        if (*f & FRAME_HAS_ITEM) {
            g_string_append_c(w->text, ',');
        }
        break;
    case FRAME_OBJECT:
        assert(*f & FRAME_NAMED);           /* an object's value needs its name first */
        *f &= ~FRAME_NAMED;
        break;
    }
    *f |= FRAME_HAS_ITEM;
}

/*
 * Which bytes need escaping: 0 for none, the letter of a short escape, or
 * 'u' for \u00xx. As json-glib's generator, plus 0x1f (see vmdesc.h).
 */
static const char vmdesc_escape[256] = {
    [0x00 ... 0x07] = 'u',
    ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', [0x0b] = 'u', ['\f'] = 'f', ['\r'] = 'r',
    [0x0e ... 0x1f] = 'u',
    ['"'] = '"', ['\\'] = '\\',
    [0x7f] = 'u',
};

static void vmdesc_append_quoted(GString *text, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *run = p;

    g_string_append_c(text, '"');
    for (; *p; p++) {
        char e = vmdesc_escape[*p];

        if (!e) {
            continue;
        }
        /* Bytes that need nothing go in as one run. */
        g_string_append_len(text, (const char *)run, p - run);
        run = p + 1;
        if (e == 'u') {
            char u[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };

            g_string_append_len(text, u, sizeof(u));
        } else {
            char two[2] = { '\\', e };

            g_string_append_len(text, two, sizeof(two));
        }
    }
    g_string_append_len(text, (const char *)run, p - run);
    g_string_append_c(text, '"');
}

static void vmdesc_push(VMDescWriter *w, uint8_t kind)
{
    if (w->depth + 1 == w->cap) {
        w->cap *= 2;
        w->stack = g_renew(uint8_t, w->stack, w->cap);
    }
    w->stack[++w->depth] = kind;
}

/* Closes the innermost frame, which must be of @kind with no name waiting. */
static void vmdesc_pop(VMDescWriter *w, uint8_t kind, char close)
{
    uint8_t f = w->stack[w->depth];

    assert(w->depth > 0 && (f & FRAME_KIND) == kind);
    assert(!(f & FRAME_NAMED));             /* `"a":}` is not JSON */
    g_string_append_c(w->text, close);
    w->depth--;
}

void vmdesc_begin_object(VMDescWriter *w)
{
    vmdesc_value_prefix(w);
    g_string_append_c(w->text, '{');
    vmdesc_push(w, FRAME_OBJECT);
}

void vmdesc_end_object(VMDescWriter *w)
{
    vmdesc_pop(w, FRAME_OBJECT, '}');
}

void vmdesc_begin_array(VMDescWriter *w)
{
    vmdesc_value_prefix(w);
    g_string_append_c(w->text, '[');
    vmdesc_push(w, FRAME_ARRAY);
}

void vmdesc_end_array(VMDescWriter *w)
{
    vmdesc_pop(w, FRAME_ARRAY, ']');
}

void vmdesc_set_member_name(VMDescWriter *w, const char *name)
{
    uint8_t *f = &w->stack[w->depth];

    assert(name);
    assert((*f & FRAME_KIND) == FRAME_OBJECT && !(*f & FRAME_NAMED));
    if (*f & FRAME_HAS_ITEM) {
        g_string_append_c(w->text, ',');
    }
    vmdesc_append_quoted(w->text, name);
    g_string_append_c(w->text, ':');
    *f |= FRAME_NAMED;
}

void vmdesc_add_string_value(VMDescWriter *w, const char *value)
{
    assert(value);
    vmdesc_value_prefix(w);
    vmdesc_append_quoted(w->text, value);
}

void vmdesc_add_int_value(VMDescWriter *w, int64_t value)
{
    /* Digits from the end; the magnitude as unsigned so INT64_MIN negates. */
    char buf[21];
    size_t i = sizeof(buf);
    uint64_t u = value < 0 ? -(uint64_t)value : (uint64_t)value;

    do {
        buf[--i] = '0' + u % 10;
        u /= 10;
    } while (u);
    if (value < 0) {
        buf[--i] = '-';
    }
    vmdesc_value_prefix(w);
    g_string_append_len(w->text, buf + i, sizeof(buf) - i);
}

const char *vmdesc_get_data(VMDescWriter *w, size_t *len)
{
    assert(w->depth == 0 && (w->stack[0] & FRAME_HAS_ITEM));
    *len = w->text->len;
    return w->text->str;
}
