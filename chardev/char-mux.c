/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The multiplexer (-serial mon:stdio, -chardev ...,mux=on): several
 * frontends (the UART, a monitor) share one backend, as in QEMU.
 *
 * Output from every frontend goes to the backend, whichever has the
 * focus; input goes to the frontend with the focus only. Ctrl-A starts
 * QEMU's escapes: C-a c moves the focus to the next frontend, C-a x
 * quits, C-a h prints the list, C-a t toggles timestamps on output
 * lines, C-a C-a sends one C-a; C-a s (commit a -snapshot, which we do
 * not have) and C-a b (a break, which our UART does not model) do
 * nothing.
 *
 * The mux always reads its backend, so that C-a x still works when the
 * frontend with the focus takes nothing (a guest that never reads its
 * UART): what a frontend cannot take yet waits in its own queue, up to
 * MUX_PENDING_MAX bytes (more is dropped, as a full UART drops), and goes
 * to it in order when it asks for input again, focused or not (the bytes
 * were typed to it). A frontend never gets more than its can_read said.
 *
 * The focus starts on the first frontend attached (the UART, attached
 * with the machine before the monitors). A frontend is told OPENED the
 * first time it gets the focus with the backend connected (so the
 * monitor's banner comes when the user switches to it, as in QEMU 7.2),
 * and MUX_OUT / MUX_IN when the focus leaves it / comes back.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "system/runstate.h"
#include "char-internal.h"

#define MUX_MAX_FE 4
#define MUX_ESCAPE 0x01         /* Ctrl-A */
#define MUX_PENDING_MAX 4096

/* Every field: BQL (main loop). */
struct MuxState {
    CharFrontend fes[MUX_MAX_FE];
    bool opened[MUX_MAX_FE];    /* fes[i] was told OPENED since the backend connected */
    GByteArray *pending[MUX_MAX_FE];    /* input typed to fes[i] it could not take yet */
    int nfes;
    int focus;                  /* the frontend that gets input; -1 before any */
    bool be_open;               /* the backend is connected */
    bool escape;                /* the last input byte was C-a */
    bool timestamps;            /* C-a t: "[hh:mm:ss.mmm] " before each output line */
    int64_t ts_start;           /* monotonic ms of the first stamp; -1 before it */
    bool line_start;            /* the next output byte begins a line */
};

static int mux_write(Chardev *chr, const void *buf, size_t len);
static void mux_add_frontend(Chardev *chr, const CharFrontend *fe);
static void mux_accept_input(Chardev *chr);
static bool mux_full(Chardev *chr);

/* The mux writes and reads through chr->inner, its backend ("LABEL-base"). */
static const ChardevOps mux_ops = {
    .kind = CHR_MUX,
    .write = mux_write,
    .add_frontend = mux_add_frontend,
    .accept_input = mux_accept_input,
    .busy = mux_full,
};

static bool mux_full(Chardev *chr)
{
    return chr->mux->nfes == MUX_MAX_FE;
}

static void mux_fe_event(MuxState *m, int i, ChardevEvent ev)
{
    if (m->fes[i].event) {
        m->fes[i].event(m->fes[i].opaque, ev);
    }
}

/* The focus is (back) on its frontend: OPENED the first time, MUX_IN after. */
static void mux_focus_in(MuxState *m)
{
    if (m->focus < 0 || !m->be_open) {
        return;
    }
    if (!m->opened[m->focus]) {
        m->opened[m->focus] = true;
        mux_fe_event(m, m->focus, CHR_EVENT_OPENED);
    } else {
        mux_fe_event(m, m->focus, CHR_EVENT_MUX_IN);
    }
}

static void mux_write_stamped(Chardev *chr, const uint8_t *buf, size_t len)
{
    MuxState *m = chr->mux;
    size_t from = 0;

    for (size_t i = 0; i < len; i++) {
        if (m->timestamps && m->line_start) {
            int64_t now = g_get_monotonic_time() / 1000;
            g_autofree char *ts = NULL;

            if (m->ts_start < 0) {
                m->ts_start = now;
            }
            now -= m->ts_start;
            ts = g_strdup_printf("[%02d:%02d:%02d.%03d] ", (int)(now / 3600000),
                                 (int)(now / 60000 % 60), (int)(now / 1000 % 60),
                                 (int)(now % 1000));
            qemu_chr_write_all(chr->inner, buf + from, i - from);
            qemu_chr_write_all(chr->inner, ts, strlen(ts));
            from = i;
        }
        m->line_start = buf[i] == '\n';
    }
    qemu_chr_write_all(chr->inner, buf + from, len - from);
}

static int mux_write(Chardev *chr, const void *buf, size_t len)
{
    mux_write_stamped(chr, buf, len);
    return len;
}

static void mux_print(Chardev *chr, const char *s)
{
    mux_write_stamped(chr, (const uint8_t *)s, strlen(s));
}

static void mux_switch_focus(MuxState *m)
{
    if (m->focus < 0) {
        return;
    }
    if (m->opened[m->focus]) {
        mux_fe_event(m, m->focus, CHR_EVENT_MUX_OUT);
    }
    m->focus = (m->focus + 1) % m->nfes;
    mux_focus_in(m);
}

/* The byte after a C-a. Returns whether it is to be delivered as input. */
static bool mux_escape(Chardev *chr, uint8_t ch)
{
    MuxState *m = chr->mux;

    switch (ch) {
    case MUX_ESCAPE:
        return true;
    case 'h':
    case '?':
        mux_print(chr, "\n\r"
                  "C-a h    print this help\n\r"
                  "C-a x    exit emulator\n\r"
                  "C-a s    save disk data back to file (if -snapshot)\n\r"
                  "C-a t    toggle console timestamps\n\r"
                  "C-a b    send break (magic sysrq)\n\r"
                  "C-a c    switch between console and monitor\n\r"
                  "C-a C-a  sends C-a\n\r");
        return false;
    case 'x':
        mux_print(chr, "QEMU: Terminated\n\r");
        qemu_system_shutdown_request(SHUTDOWN_CAUSE_HOST_QMP_QUIT);
        return false;
    case 'c':
        mux_switch_focus(m);
        return false;
    case 't':
        m->timestamps = !m->timestamps;
        m->ts_start = -1;
        return false;
    default:
        /* C-a s, C-a b and anything else: nothing to do here. */
        return false;
    }
}

/* Hands fes[i] what it can take of its queue, in order. */
static void mux_flush(MuxState *m, int i)
{
    CharFrontend *fe = &m->fes[i];
    GByteArray *q = m->pending[i];

    while (q->len) {
        size_t cap = fe->can_read ? fe->can_read(fe->opaque) : q->len;
        size_t n = MIN(q->len, cap);
        g_autofree uint8_t *chunk = NULL;

        if (!n) {
            return;
        }
        /* Out of the queue first: the frontend may ask for more input from inside read. */
        chunk = g_memdup2(q->data, n);
        g_byte_array_remove_range(q, 0, n);
        if (fe->read) {
            fe->read(fe->opaque, chunk, n);
        }
    }
}

/* Input typed while fes[focus] had the focus: to it now, or to its queue. */
static void mux_deliver(MuxState *m, const uint8_t *buf, size_t len)
{
    GByteArray *q;

    if (m->focus < 0 || !len) {
        return;
    }
    q = m->pending[m->focus];
    g_byte_array_append(q, buf, MIN(len, MUX_PENDING_MAX - MIN(q->len, MUX_PENDING_MAX)));
    mux_flush(m, m->focus);
}

/* A frontend asks for input again: each gets what waits for it. */
static void mux_accept_input(Chardev *chr)
{
    MuxState *m = chr->mux;

    for (int i = 0; i < m->nfes; i++) {
        mux_flush(m, i);
    }
}

static size_t mux_be_can_read(void *opaque)
{
    /* Always: the escapes must get through whatever the frontends take. */
    return 4096;
}

static void mux_be_read(void *opaque, const uint8_t *buf, size_t len)
{
    Chardev *chr = opaque;
    MuxState *m = chr->mux;
    size_t from = 0;

    for (size_t i = 0; i <= len; i++) {
        if (i < len && !m->escape && buf[i] != MUX_ESCAPE) {
            continue;
        }
        /* Hand over the plain run before this byte (or before the end). */
        mux_deliver(m, buf + from, i - from);
        if (i == len) {
            break;
        }
        if (!m->escape) {
            m->escape = true;
        } else {
            m->escape = false;
            /* (mux_escape may move the focus: C-a C-a goes to the new one.) */
            if (mux_escape(chr, buf[i])) {
                mux_deliver(m, &buf[i], 1);
            }
        }
        from = i + 1;
    }
}

static void mux_be_event(void *opaque, ChardevEvent ev)
{
    Chardev *chr = opaque;
    MuxState *m = chr->mux;

    switch (ev) {
    case CHR_EVENT_OPENED:
        m->be_open = chr->connected = true;
        mux_focus_in(m);
        break;
    case CHR_EVENT_CLOSED:
        m->be_open = chr->connected = false;
        for (int i = 0; i < m->nfes; i++) {
            if (m->opened[i]) {
                m->opened[i] = false;
                mux_fe_event(m, i, CHR_EVENT_CLOSED);
            }
        }
        break;
    default:
        break;
    }
}

static void mux_attached_bh(void *opaque)
{
    MuxState *m = ((Chardev *)opaque)->mux;

    /* The backend's OPENED may have come first and told the focus already. */
    if (!m->opened[m->focus]) {
        mux_focus_in(m);
    }
}

static void mux_add_frontend(Chardev *chr, const CharFrontend *fe)
{
    MuxState *m = chr->mux;

    g_assert(m->nfes < MUX_MAX_FE);
    m->pending[m->nfes] = g_byte_array_new();
    m->fes[m->nfes++] = *fe;
    chr->has_fe = true;
    if (m->focus < 0) {
        m->focus = 0;
        /* As for other chardevs: OPENED comes from the main loop, not from here. */
        qemu_bh_schedule_oneshot(mux_attached_bh, chr);
    }
}

Chardev *chr_mux_new(const char *label, Chardev *be, Error **errp)
{
    CharFrontend fe = {
        .can_read = mux_be_can_read,
        .read = mux_be_read,
        .event = mux_be_event,
    };
    Chardev *chr;

    if (qemu_chr_fe_busy(be)) {
        error_setg(errp, "chardev '%s' is already in use", qemu_chr_label(be));
        return NULL;
    }
    chr = chr_alloc(label, &mux_ops);
    chr->inner = be;
    chr->mux = g_new0(MuxState, 1);
    chr->mux->focus = -1;
    chr->mux->ts_start = -1;
    chr->mux->line_start = true;
    fe.opaque = chr;
    qemu_chr_fe_set_handlers(be, &fe);
    /* Escapes and the monitor's line editing need every key as typed. */
    qemu_chr_set_raw(be);
    return chr;
}
