/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Consoles: the surface of each graphic device, its refresh, and the
 * screendump command.
 *
 * A refresh asks the device for its framebuffer; if the mode, palette or
 * anything else outside VRAM changed (the device's generation), or this is
 * the first pass, it redraws every line. Otherwise it syncs the display's
 * dirty-log client (KVM's bits for the VRAM slots only), and for each run
 * of lines that touch a written page it re-arms those pages in KVM, then
 * converts the lines: a write after the clear is in the next sync, one
 * before it is in what the conversion reads (kvm-dirty-client.h).
 *
 * The client exists only while the 30 Hz refresh runs (any -display but
 * none). Without it, screendump converts every line each time: a
 * screendump is rare, and a client would make KVM track VRAM writes for
 * nobody in between.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "monitor/hmp.h"
#include "migration/misc.h"
#include "qemu/bitmap.h"
#include "system/kvm.h"
#include "system/kvm-dirty-client.h"
#include "system/memory.h"
#include "system/runstate.h"
#include "trace/trace.h"
#include "ui/console.h"
#include "screendump-file.h"

#define DISPLAY_REFRESH_MS 33   /* 30 Hz */
#define DISPLAY_PLACEHOLDER_WIDTH 640
#define DISPLAY_PLACEHOLDER_HEIGHT 480

struct QemuConsole {
    char *device_id;            /* -device ...,id=; NULL if none; immutable */
    const GraphicHwOps *ops;    /* immutable */
    void *opaque;
    RAMBlock *vram;             /* immutable */
    /* Everything below: main thread, BQL. */
    DisplayFramebuffer fb;      /* what surface/src were made for */
    /*
     * x8r8g8b8, fb.width x fb.height; a black 640x480 placeholder while
     * the device shows nothing; NULL only if pixman could not allocate it.
     */
    pixman_image_t *surface;
    pixman_image_t *src;        /* pixman's view of the framebuffer in VRAM, or NULL */
    bool redraw;                /* the next refresh converts every line */
    KVMDirtyClient *client;     /* NULL unless the timer refreshes */
    /*
     * Set: KVM reported the VRAM page written (this client's sync) and the
     * refresh has not yet converted the lines over it. One bit per VRAM
     * page; allocated with the client, cleared by the refresh per run of
     * lines it converts.
     */
    unsigned long *dirty;
    guint timer;
    VMChangeStateEntry *run_handler;
    XDisplayInfo stats;         /* x-query-display; BQL */
};

static GPtrArray *consoles;     /* QemuConsole *, registration order; BQL */

QemuConsole *graphic_console_init(const char *id, const GraphicHwOps *ops, void *opaque,
                                  RAMBlock *vram)
{
    QemuConsole *con = g_new0(QemuConsole, 1);

    con->device_id = g_strdup(id);
    con->ops = ops;
    con->opaque = opaque;
    con->vram = vram;
    con->redraw = true;
    if (!consoles) {
        consoles = g_ptr_array_new();
    }
    g_ptr_array_add(consoles, con);
    return con;
}

pixman_image_t *qemu_console_surface(QemuConsole *con)
{
    return con->surface;
}

static bool console_fb_same_mode(const DisplayFramebuffer *a, const DisplayFramebuffer *b)
{
    return a->enabled == b->enabled && a->width == b->width && a->height == b->height &&
           a->bpp == b->bpp && a->stride == b->stride && a->start == b->start &&
           a->generation == b->generation;
}

/* Makes surface and src fit @fb (a new mode): both are made once per mode. */
static void console_resize(QemuConsole *con, const DisplayFramebuffer *fb)
{
    g_clear_pointer(&con->surface, pixman_image_unref);
    g_clear_pointer(&con->src, pixman_image_unref);
    con->fb = *fb;
    if (!fb->enabled) {
        /*
         * QEMU shows a guest that set no mode as a 640x480 placeholder
         * (with a line of text we do not draw): a screendump then works.
         */
        con->surface = pixman_image_create_bits(PIXMAN_x8r8g8b8, DISPLAY_PLACEHOLDER_WIDTH,
                                                DISPLAY_PLACEHOLDER_HEIGHT, NULL, 0);
        con->stats.surface_allocations++;
        return;
    }
    con->surface = pixman_image_create_bits(PIXMAN_x8r8g8b8, fb->width, fb->height, NULL, 0);
    con->stats.surface_allocations++;
    con->src = display_wrap_framebuffer(fb, con->vram->host);
}

/* KVMDirtyTakeFn: the client's new bits for @slot, ORed into con->dirty. */
static void console_take_dirty(void *opaque, KVMSlot *slot, const unsigned long *bits)
{
    QemuConsole *con = opaque;
    uint64_t base = slot->ram_offset >> TARGET_PAGE_BITS;

    if (base % BITS_PER_LONG == 0) {
        unsigned long *d = con->dirty + base / BITS_PER_LONG;

        bitmap_or(d, d, bits, slot->npages);
        return;
    }
    for (unsigned long i = find_first_bit(bits, slot->npages); i < slot->npages;
         i = find_next_bit(bits, slot->npages, i + 1)) {
        set_bit(base + i, con->dirty);
    }
}

/* Re-arms KVM's tracking of VRAM pages [first, last] in every slot that maps them. */
static void console_rearm_pages(QemuConsole *con, uint64_t first, uint64_t last)
{
    for (int i = 0; i < kvm_state->nr_slots; i++) {
        KVMSlot *slot = &kvm_state->slots[i];
        uint64_t base = slot->ram_offset >> TARGET_PAGE_BITS;
        uint64_t lo, hi;

        if (slot->rb != con->vram || !kvm_dirty_client_tracks(con->client, slot)) {
            continue;
        }
        lo = MAX(first, base);
        hi = MIN(last + 1, base + slot->npages);
        if (lo < hi) {
            /* A failed clear keeps the bits in KVM's: the next sync hands them over again. */
            kvm_dirty_client_clear(con->client, slot, lo - base, hi - lo);
        }
    }
}

/*
 * The display's dirty-log sync: the client's new bits into con->dirty, then
 * one re-arm of all the pages KVM reported, before any of them is drawn (a
 * write after the re-arm shows at the next sync). One KVM_CLEAR_DIRTY_LOG a
 * refresh, not one per run of lines, and the counterpart of QEMU's
 * memory_region_snapshot_and_clear_dirty: noinline so that
 * scripts/syncprobe.py can time it as one function. < 0: bits may be lost.
 */
static __attribute__((noinline)) int console_sync_dirty(QemuConsole *con)
{
    uint64_t npages = con->vram->used_length >> TARGET_PAGE_BITS;
    uint64_t first;
    int ret = kvm_dirty_client_sync(con->client, console_take_dirty, con);

    if (ret < 0) {
        return ret;
    }
    /* Only the bits read since the last clear are re-armed: the range may be generous. */
    first = find_first_bit(con->dirty, npages);
    if (first < npages) {
        console_rearm_pages(con, first, npages - 1);
    }
    return 0;
}

static void console_line_pages(const QemuConsole *con, uint32_t y, uint64_t *first,
                               uint64_t *last)
{
    const DisplayFramebuffer *fb = &con->fb;
    uint64_t b0 = fb->start + (uint64_t)y * fb->stride;
    uint64_t b1 = b0 + (uint64_t)fb->width * (fb->bpp == 15 ? 2 : fb->bpp / 8);

    *first = b0 >> TARGET_PAGE_BITS;
    *last = (b1 - 1) >> TARGET_PAGE_BITS;
}

/* Converts the runs of lines over written pages; returns how many lines. */
static uint32_t console_convert_dirty_lines(QemuConsole *con)
{
    uint32_t converted = 0;
    uint32_t y = 0;

    while (y < con->fb.height) {
        uint64_t first, last, run_first, run_last;
        uint32_t y0;

        console_line_pages(con, y, &first, &last);
        if (find_next_bit(con->dirty, last + 1, first) > last) {
            y++;
            continue;
        }
        /* Lines that touch one written page are all in one run. */
        y0 = y;
        run_first = first;
        run_last = last;
        for (y++; y < con->fb.height; y++) {
            console_line_pages(con, y, &first, &last);
            if (find_next_bit(con->dirty, last + 1, first) > last) {
                break;
            }
            run_last = last;
        }
        bitmap_clear(con->dirty, run_first, run_last - run_first + 1);
        display_convert_lines(con->surface, con->src, &con->fb, con->vram->host, y0, y);
        converted += y - y0;
    }
    return converted;
}

void graphic_hw_update(QemuConsole *con)
{
    DisplayFramebuffer fb;
    int64_t t0 = get_clock_ns(), sync_ns = 0;
    uint64_t npages = con->vram->used_length >> TARGET_PAGE_BITS;
    uint32_t lines;
    bool full;

    /*
     * A VRAM page still on the source would stall the main loop on its
     * userfault; postcopy ends in a running VM, and then all is redrawn.
     */
    if (migration_incoming_in_postcopy()) {
        con->redraw = true;
        return;
    }
    con->ops->get_framebuffer(con->opaque, &fb);
    if (!con->surface || !console_fb_same_mode(&fb, &con->fb)) {
        console_resize(con, &fb);
        con->redraw = true;
    }
    con->fb.palette = fb.palette;
    if (con->client && console_sync_dirty(con) < 0) {
        con->redraw = true;     /* bits may be lost: only a full pass is right */
    }
    sync_ns = get_clock_ns() - t0;
    con->stats.refreshes++;
    con->stats.sync_time_us_total += sync_ns / 1000;
    con->stats.sync_time_us_max = MAX(con->stats.sync_time_us_max, (uint64_t)sync_ns / 1000);
    if (!con->surface || !con->fb.enabled) {
        TRACE_EVENT(display_refresh, "sync_us=%" PRId64 " total_us=%" PRId64 " lines=0 full=0",
                    sync_ns / 1000, sync_ns / 1000);
        return;
    }
    full = con->redraw || !con->client;
    if (full) {
        if (con->client) {
            /* The sync re-armed what KVM reported; after a failed one KVM reports it again. */
            bitmap_zero(con->dirty, npages);
        }
        display_convert_lines(con->surface, con->src, &con->fb, con->vram->host, 0,
                              con->fb.height);
        lines = con->fb.height;
        con->redraw = false;
    } else {
        lines = console_convert_dirty_lines(con);
    }
    con->stats.full_refreshes += full;
    con->stats.lines_converted += lines;
    TRACE_EVENT(display_refresh, "sync_us=%" PRId64 " total_us=%" PRId64 " lines=%u full=%d",
                sync_ns / 1000, (get_clock_ns() - t0) / 1000, lines, full);
}

static gboolean console_refresh_timer(gpointer opaque)
{
    graphic_hw_update(opaque);
    return G_SOURCE_CONTINUE;
}

/*
 * VRAM the VMM filled (an incoming migration, postcopy's late pages) is
 * in no KVM log: redraw all whenever the VM starts running.
 */
static void console_vm_state_change(void *opaque, bool running, RunState state)
{
    QemuConsole *con = opaque;

    if (running) {
        con->redraw = true;
    }
}

bool display_init(bool refresh, Error **errp)
{
    for (guint i = 0; consoles && i < consoles->len; i++) {
        QemuConsole *con = g_ptr_array_index(consoles, i);

        con->run_handler = qemu_add_vm_change_state_handler(console_vm_state_change, con);
        if (!refresh) {
            continue;
        }
        con->client = kvm_dirty_client_start(kvm_state, "display", con->vram, errp);
        if (!con->client) {
            return false;
        }
        con->dirty = bitmap_new(con->vram->used_length >> TARGET_PAGE_BITS);
        con->redraw = true;     /* the client's first pass draws all */
        con->timer = g_timeout_add(DISPLAY_REFRESH_MS, console_refresh_timer, con);
    }
    return true;
}

void display_cleanup(void)
{
    for (guint i = 0; consoles && i < consoles->len; i++) {
        QemuConsole *con = g_ptr_array_index(consoles, i);

        if (con->timer) {
            g_source_remove(con->timer);
        }
        if (con->run_handler) {
            qemu_del_vm_change_state_handler(con->run_handler);
        }
        kvm_dirty_client_stop(con->client);
        g_free(con->dirty);
        g_clear_pointer(&con->surface, pixman_image_unref);
        g_clear_pointer(&con->src, pixman_image_unref);
        g_free(con->device_id);
        g_free(con);
    }
    g_clear_pointer(&consoles, g_ptr_array_unref);
}

static QemuConsole *console_lookup(const char *device, bool has_head, int64_t head,
                                   Error **errp)
{
    if (!device) {
        if (has_head) {
            error_setg(errp, "'head' must be specified together with 'device'");
            return NULL;
        }
        if (!consoles || !consoles->len) {
            error_setg(errp, "There is no console to take a screendump from");
            return NULL;
        }
        return g_ptr_array_index(consoles, 0);
    }
    for (guint i = 0; consoles && i < consoles->len; i++) {
        QemuConsole *con = g_ptr_array_index(consoles, i);

        if (con->device_id && !strcmp(con->device_id, device)) {
            if (has_head && head != 0) {
                error_setg(errp, "Device %s (head %" PRId64 ") is not bound to a QemuConsole",
                           device, head);
                return NULL;
            }
            return con;
        }
    }
    error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND, "Device '%s' not found", device);
    return NULL;
}

bool qmp_screendump(const char *filename, const char *device, bool has_head, int64_t head,
                    bool has_format, ImageFormat format, Error **errp)
{
    QemuConsole *con = console_lookup(device, has_head, head, errp);
    pixman_image_t *image;
    ScreendumpFile file;

    if (!con) {
        return false;
    }
    graphic_hw_update(con);
    image = qemu_console_surface(con);
    if (!image) {
        error_setg(errp, "no surface");
        return false;
    }
    if (!screendump_file_open(&file, filename, errp)) {
        return false;
    }
    if (!display_ppm_save(file.fd, image, errp)) {
        screendump_file_abort(&file);
        return false;
    }
    return screendump_file_commit(&file, errp);
}

void hmp_screendump(Monitor *mon, const HMPArgs *args)
{
    const char *device = hmp_arg_str(args, "device");
    bool has_head = hmp_arg_has(args, "head");
    Error *err = NULL;

    qmp_screendump(hmp_arg_str(args, "filename"), device, has_head,
                   hmp_arg_int(args, "head", 0), false, IMAGE_FORMAT_PPM, &err);
    hmp_handle_error(mon, err);
}

XDisplayInfo *qmp_x_query_display(Error **errp)
{
    QemuConsole *con = console_lookup(NULL, false, 0, errp);
    XDisplayInfo *info;

    if (!con) {
        return NULL;
    }
    info = g_memdup2(&con->stats, sizeof(con->stats));
    info->dirty_client = con->client != NULL;
    return info;
}
