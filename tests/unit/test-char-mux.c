/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mux (chardev/char-mux.c) against a fake backend: random input with
 * Ctrl-A escapes, cut into random chunks, to two frontends that take a
 * random number of bytes at a time, sometimes none (a guest that does not
 * read its UART). Always:
 *   - a frontend never gets more than its last can_read allowed;
 *   - each frontend's events are OPENED, then MUX_OUT and MUX_IN in turn,
 *     and never do two frontends have the focus;
 *   - the mux always takes its backend's input, so C-a c and C-a x work
 *     even when the frontend with the focus takes nothing;
 * and after every round, once the frontends take input again:
 *   - what each frontend received is what a byte-at-a-time model of the
 *     escapes gives for the input so far (the bytes typed while it had the
 *     focus), however the input was cut (an escape split across two reads
 *     still works);
 *   - C-a x asked for a shutdown, once per C-a x.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "system/runstate.h"
#include "../../chardev/char-internal.h"

#define NFE 2

typedef struct FakeFe {
    int index;
    bool focus;                 /* told OPENED or MUX_IN, and no MUX_OUT since */
    bool opened;
    size_t cap;                 /* what the last can_read allowed, not yet used */
    GByteArray *got;
} FakeFe;

static FakeFe fes[NFE];
static int shutdowns;
static bool draining;           /* the frontends take input (never 0) */

/* The stub the mux's C-a x calls. */
void qemu_system_shutdown_request(ShutdownCause cause)
{
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_HOST_QMP_QUIT);
    shutdowns++;
}

static size_t fe_can_read(void *opaque)
{
    FakeFe *fe = opaque;

    fe->cap = (!draining && g_test_rand_int_range(0, 4) == 0) ? 0
            : g_test_rand_int_range(1, 17);
    return fe->cap;
}

static void fe_read(void *opaque, const uint8_t *buf, size_t len)
{
    FakeFe *fe = opaque;

    g_assert_cmpuint(len, >, 0);
    g_assert_cmpuint(len, <=, fe->cap);
    fe->cap = 0;
    g_byte_array_append(fe->got, buf, len);
}

static void fe_event(void *opaque, ChardevEvent ev)
{
    FakeFe *fe = opaque;

    switch (ev) {
    case CHR_EVENT_OPENED:
        g_assert_false(fe->opened);
        fe->opened = fe->focus = true;
        break;
    case CHR_EVENT_MUX_IN:
        g_assert_true(fe->opened);
        g_assert_false(fe->focus);
        fe->focus = true;
        break;
    case CHR_EVENT_MUX_OUT:
        g_assert_true(fe->focus);
        fe->focus = false;
        break;
    default:
        g_assert_not_reached();
    }
    /* Never two frontends with the focus. */
    g_assert_false(fes[0].focus && fes[1].focus);
}

/* The escapes one byte at a time: what each frontend must have got. */
typedef struct Model {
    bool escape;
    int focus;
    GByteArray *want[NFE];
    int shutdowns;
} Model;

static void model_feed(Model *m, uint8_t b)
{
    if (m->escape) {
        m->escape = false;
        if (b == 0x01) {
            g_byte_array_append(m->want[m->focus], &b, 1);
        } else if (b == 'c') {
            m->focus = (m->focus + 1) % NFE;
        } else if (b == 'x') {
            m->shutdowns++;
        }
        return;
    }
    if (b == 0x01) {
        m->escape = true;
        return;
    }
    g_byte_array_append(m->want[m->focus], &b, 1);
}

static void run_pending(void)
{
    while (g_main_context_iteration(NULL, FALSE)) {
    }
}

static void test_mux_random(void)
{
    static const uint8_t alphabet[] = { 0x01, 0x01, 0x01, 'c', 'c', 'x', 't', 'h', 's', 'b',
                                        'a', 'z', '\n', 0x00, 0xff };
    Chardev *be, *mux;
    Model m = { 0 };

    be = qemu_chr_new("be", "null", &error_abort);
    mux = chr_mux_new("mux", be, &error_abort);
    for (int i = 0; i < NFE; i++) {
        CharFrontend fe = {
            .can_read = fe_can_read, .read = fe_read, .event = fe_event, .opaque = &fes[i],
        };

        fes[i] = (FakeFe) { .index = i, .got = g_byte_array_new() };
        m.want[i] = g_byte_array_new();
        g_assert_false(qemu_chr_fe_busy(mux));
        qemu_chr_fe_set_handlers(mux, &fe);
    }
    run_pending();
    /* The null backend never connects: nobody is told anything yet. */
    g_assert_false(fes[0].opened || fes[1].opened);
    be->fe.event(be->fe.opaque, CHR_EVENT_OPENED);
    run_pending();
    g_assert_true(fes[0].focus);
    g_assert_false(fes[1].opened);

    for (int round = 0; round < 2000; round++) {
        uint8_t buf[32];
        size_t len = g_test_rand_int_range(1, sizeof(buf) + 1);
        size_t want;

        for (size_t i = 0; i < len; i++) {
            buf[i] = g_test_rand_bit() ? alphabet[g_test_rand_int_range(0, sizeof(alphabet))]
                                       : g_test_rand_int_range(0x20, 0x7f);
            model_feed(&m, buf[i]);
        }
        /* The backend never hands over more than the mux said it can take. */
        draining = false;
        for (size_t off = 0; off < len; off += want) {
            size_t cap = be->fe.can_read(be->fe.opaque);

            g_assert_cmpuint(cap, >, 0);
            want = MIN(len - off, cap);
            be->fe.read(be->fe.opaque, buf + off, want);
        }
        run_pending();
        /* As the UART does once the guest read its FIFO. */
        draining = true;
        qemu_chr_fe_accept_input(mux);
        for (int i = 0; i < NFE; i++) {
            g_assert_cmpuint(fes[i].got->len, ==, m.want[i]->len);
            g_assert_cmpmem(fes[i].got->data, fes[i].got->len, m.want[i]->data,
                            m.want[i]->len);
        }
        g_assert_true(fes[m.focus].focus);
        g_assert_cmpint(shutdowns, ==, m.shutdowns);
    }
    /* Both frontends got input, so the test exercised the switch. */
    g_assert_cmpuint(fes[0].got->len, >, 0);
    g_assert_cmpuint(fes[1].got->len, >, 0);
    for (int i = 0; i < NFE; i++) {
        g_byte_array_unref(fes[i].got);
        g_byte_array_unref(m.want[i]);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qemu_main_loop_init();
    g_test_add_func("/char-mux/random", test_mux_random);
    return g_test_run();
}
