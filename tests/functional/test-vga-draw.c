/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The firmware's mode=draw against isa-vga: a screendump of a paused guest
 * is byte-exact against the picture computed here for the frame number
 * read from it (the pattern of tests/guest/draw.c), at 32, 24, 16 and
 * 8 bpp; a guest paused while drawing shows its current frame up to some
 * pixel and its previous frame after it, nothing else; after a live
 * migration of a drawing guest (at 30 fps, as fast as it can, and a few
 * lines at a time) VRAM is byte-identical on both ends at switchover, and
 * each end's display shows exactly its VRAM: neither dirty-log client
 * (display, migration) lost a page to the other's clearing.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include "libvmtest.h"
#include "migtest.h"
#include "picture.h"

#define BASE_ARGS "-M microvm -enable-kvm -cpu host -nodefaults -no-user-config " \
                  "-serial stdio "
#define COUNTER_BITS 32
#define LFB_ADDR 0xe0000000ULL
#define VRAM_BYTES (8ULL << 20)         /* isa-vga's default vgamem_mb, as QEMU's */

/* The frame number in the first 32 pixels of line 0 (white: bit set). */
static uint64_t picture_counter(const Picture *p)
{
    uint64_t n = 0;

    for (int i = 0; i < COUNTER_BITS; i++) {
        n |= (uint64_t)(p->rgb[i * 3] > 127) << i;
    }
    return n;
}

static guchar widen6(unsigned c6)
{
    return (guchar)(c6 << 2 | c6 >> 4);
}

/* What the display shows for colour (r, g, b) stored at @bpp. */
static void shown(unsigned bpp, unsigned r, unsigned g, unsigned b, guchar out[3])
{
    unsigned i;

    switch (bpp) {
    case 16:
        r >>= 3, g >>= 2, b >>= 3;
        out[0] = (guchar)(r << 3 | r >> 2);
        out[1] = (guchar)(g << 2 | g >> 4);
        out[2] = (guchar)(b << 3 | b >> 2);
        break;
    case 8:
        /* The 3-3-2 index and the 6-bit palette entry the firmware gave it. */
        i = (r & 0xe0) | (g >> 3 & 0x1c) | b >> 6;
        out[0] = widen6((i & 0xe0) >> 2);
        out[1] = widen6((i & 0x1c) << 1);
        out[2] = widen6((i & 0x03) << 4);
        break;
    default:
        out[0] = (guchar)r, out[1] = (guchar)g, out[2] = (guchar)b;
    }
}

static void expected_pixel(unsigned bpp, uint64_t n, unsigned x, unsigned y, guchar out[3])
{
    if (y == 0 && x < COUNTER_BITS) {
        unsigned c = (n >> x) & 1 ? 255 : 0;

        shown(bpp, c, c, c, out);
        return;
    }
    shown(bpp, (x + 4 * n) & 255, (y + 2 * n) & 255, (x + y + n) & 255, out);
}

/* Line @y of @p is frame @n's (the first wrong pixel in *bad_x, else -1). */
static bool line_is_frame(const Picture *p, unsigned bpp, uint64_t n, int y, int *bad_x)
{
    for (int x = 0; x < p->w; x++) {
        guchar e[3];

        expected_pixel(bpp, n, x, y, e);
        if (memcmp(p->rgb + ((size_t)y * p->w + x) * 3, e, 3)) {
            *bad_x = x;
            return false;
        }
    }
    *bad_x = -1;
    return true;
}

static void assert_frame(const Picture *p, unsigned bpp, uint64_t n)
{
    for (int y = 0; y < p->h; y++) {
        int x;

        if (!line_is_frame(p, bpp, n, y, &x)) {
            const guchar *got = p->rgb + ((size_t)y * p->w + x) * 3;
            guchar e[3];

            expected_pixel(bpp, n, x, y, e);
            g_error("bpp %u frame %" PRIu64 ": pixel (%d, %d) is %u,%u,%u, expected %u,%u,%u",
                    bpp, n, x, y, got[0], got[1], got[2], e[0], e[1], e[2]);
        }
    }
}

static bool pixel_is_frame(const Picture *p, unsigned bpp, uint64_t n, size_t i)
{
    guchar e[3];

    expected_pixel(bpp, n, i % p->w, i / p->w, e);
    return !memcmp(p->rgb + i * 3, e, 3);
}

/*
 * A guest paused mid-frame (32 bpp: one store per pixel): in drawing order,
 * pixels 0..k are frame n (the counter's, drawn first), the rest frame
 * n - 1; returns k + 1, the pixels of frame n.
 */
static size_t assert_torn_frame(const Picture *p, unsigned bpp)
{
    uint64_t n = picture_counter(p);
    size_t total = (size_t)p->w * p->h, i = 0;

    while (i < total && pixel_is_frame(p, bpp, n, i)) {
        i++;
    }
    g_assert_cmpuint(i, >=, COUNTER_BITS);
    for (size_t k = i; k < total; k++) {
        if (n == 0 || !pixel_is_frame(p, bpp, n - 1, k)) {
            g_error("frame %" PRIu64 " up to pixel (%zu, %zu), then (%zu, %zu) is neither it "
                    "nor the one before", n, (i - 1) % p->w, (i - 1) / p->w, k % p->w, k / p->w);
        }
    }
    return i;
}

typedef struct DrawCase {
    unsigned w, h, bpp;
} DrawCase;

static void test_exact_frames(void)
{
    /* 318 * 3 bytes: 24 bpp lines that are not 4-byte aligned. */
    static const DrawCase cases[] = {
        { 640, 480, 32 }, { 318, 200, 24 }, { 400, 300, 16 }, { 320, 240, 8 },
    };

    if (!vmtest_require_kvm()) {
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const DrawCase *c = &cases[i];
        const char *ready;
        Picture p = { 0 };
        VM *vm;

        vm = vm_spawn("draw", true, BASE_ARGS "-m 64M -kernel %s -device isa-vga -append "
                      "'mode=draw width=%u height=%u bpp=%u rate=0 frames=3'",
                      vmtest_firmware(), c->w, c->h, c->bpp);
        ready = vm_wait_line(vm, "READY", 120);
        g_assert_cmpint(line_get_int(ready, "width"), ==, c->w);
        g_assert_cmpint(line_get_int(ready, "bpp"), ==, c->bpp);
        vm_wait_line(vm, "DRAWN frames=3", 60);
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
        picture_screendump(vm, "exact", &p);
        g_assert_cmpint(p.w, ==, c->w);
        g_assert_cmpint(p.h, ==, c->h);
        g_assert_cmpuint(picture_counter(&p), ==, 2);
        assert_frame(&p, c->bpp, 2);
        picture_free(&p);
        vm_kill(vm);
    }
}

static void test_no_display(void)
{
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("nodisplay", false, BASE_ARGS "-m 64M -kernel %s -append 'mode=draw'",
                  vmtest_firmware());
    vm_wait_line(vm, "FAIL no-display vbe_id=", 120);
    vm_kill(vm);
}

/*
 * Paced to 30 fps: never much faster (a catch-up after a stall may show a
 * few frames more in a period; unpaced it draws ~1000), and not asserted
 * slower (a busy host makes it so, which says nothing of the pacing); a
 * paused screendump is frame n over frame n - 1.
 */
static void test_moving(void)
{
    Picture a = { 0 }, b = { 0 };
    const char *stat;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("moving", true, BASE_ARGS "-m 64M -kernel %s -device isa-vga -append "
                  "'mode=draw report_ms=500'", vmtest_firmware());
    vm_wait_line(vm, "READY mode=draw width=640 height=480 bpp=32 rate=30", 120);
    vm_wait_line(vm, "STAT", 60);
    stat = vm_wait_line(vm, "STAT", 60);
    g_assert_cmpfloat(line_get_double(stat, "fps"), >, 0);
    g_assert_cmpfloat(line_get_double(stat, "fps"), <, 60);   /* unpaced: ~1000 */
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    picture_screendump(vm, "moving-a", &a);
    assert_torn_frame(&a, 32);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
    /* The first may have been out before the stop. */
    vm_wait_line(vm, "STAT", 60);
    vm_wait_line(vm, "STAT", 60);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    picture_screendump(vm, "moving-b", &b);
    assert_torn_frame(&b, 32);
    g_assert_cmpuint(picture_counter(&b), >, picture_counter(&a));
    picture_free(&a);
    picture_free(&b);
    vm_kill(vm);
}

/* Drawing as fast as it can, the guest is paused mid-frame nearly always. */
static void test_paused_mid_frame(void)
{
    Picture p = { 0 };
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("fast", true, BASE_ARGS "-m 64M -kernel %s -device isa-vga -append "
                  "'mode=draw rate=0 report_ms=300'", vmtest_firmware());
    vm_wait_line(vm, "READY", 120);
    vm_wait_line(vm, "STAT", 60);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    picture_screendump(vm, "fast", &p);
    g_test_message("frame %" PRIu64 ", %zu pixels of it drawn", picture_counter(&p),
                   assert_torn_frame(&p, 32));
    picture_free(&p);
    vm_kill(vm);
}

/*
 * The display's picture of the 32 bpp mode is VRAM as it is now, line for
 * line (x8r8g8b8 stored b, g, r, x): the display lost no dirty page.
 */
static void assert_picture_is_vram(VM *vm, const Picture *p, const char *what)
{
    g_autofree char *file = g_strdup_printf("%s/%s-vram.bin", vmtest_tmpdir(), vm->name);
    g_autofree char *vram = NULL;
    size_t size = (size_t)p->w * p->h * 4, stale = 0;
    gsize len;
    int first = -1;

    json_node_unref(vm_qmp_ok(vm, "{'execute': 'pmemsave', 'arguments': {'val': %llu, "
                              "'size': %zu, 'filename': '%s'}}", LFB_ADDR, size, file));
    g_assert_true(g_file_get_contents(file, &vram, &len, NULL));
    g_assert_cmpuint(len, ==, size);
    for (int y = 0; y < p->h; y++) {
        const guchar *v = (const guchar *)vram + (size_t)y * p->w * 4;
        const guchar *q = p->rgb + (size_t)y * p->w * 3;
        bool same = true;

        for (int x = 0; x < p->w && same; x++, v += 4, q += 3) {
            same = q[0] == v[2] && q[1] == v[1] && q[2] == v[0];
        }
        if (!same) {
            first = first < 0 ? y : first;
            stale++;
        }
    }
    if (stale) {
        g_test_message("%s: %zu lines differ from VRAM, the first %d", what, stale, first);
    }
    g_assert_cmpuint(stale, ==, 0);
    g_unlink(file);
}

static int64_t display_refreshes(VM *vm)
{
    JsonNode *r = vm_qmp_ok(vm, "{'execute': 'x-query-display'}");
    int64_t n = json_get_int(r, "refreshes");

    json_node_unref(r);
    return n;
}

/*
 * Both ends of a migration that completed, the source stopped and the
 * destination not started: VRAM byte-identical (the migration lost no
 * page), each display showing its VRAM (neither display lost one), and
 * the same picture on both.
 */
static void assert_switchover_vram(VM *src, VM *dst, Picture *s, Picture *d)
{
    migtest_assert_range_identical(src, dst, "vram", LFB_ADDR, VRAM_BYTES);
    picture_screendump(src, "mig-src", s);
    picture_screendump(dst, "mig-dst", d);
    assert_picture_is_vram(src, s, "source");
    assert_picture_is_vram(dst, d, "destination");
    g_assert_cmpint(s->w, ==, d->w);
    g_assert_cmpint(s->h, ==, d->h);
    g_assert_true(memcmp(s->rgb, d->rgb, (size_t)s->w * s->h * 3) == 0);
}

/* A drawing source with isa-vga, its paused destination on a unix socket (returned). */
static char *start_drawing_pair(const char *append, VM **src, VM **dst)
{
    char *uri;

    *src = migtest_start_source_extra("64M", append, "-device isa-vga");
    uri = migtest_uri("unix");
    *dst = migtest_start_dest_extra("64M", append, true, uri, "-device isa-vga");
    vm_wait_line(*src, "STAT", 60);
    return uri;
}

/*
 * A live migration of a drawing guest with the display on (at 30 fps, and
 * as fast as it draws: every VRAM page of the mode dirty at every sync of
 * either client): at switchover the two ends agree; the destination's
 * picture is a consistent frame; once it runs, it draws on.
 */
static void test_migrate_drawing(gconstpointer data)
{
    const char *append = data;
    g_autofree char *uri = NULL;
    Picture s = { 0 }, d = { 0 }, later = { 0 };
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    uri = start_drawing_pair(append, &src, &dst);
    migtest_slow_then_fast(src, uri, false);
    json_node_unref(migtest_wait_completed(src));
    migtest_wait_incoming_done(dst);
    assert_switchover_vram(src, dst, &s, &d);
    assert_torn_frame(&d, 32);
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    vm_wait_line(dst, "STAT", 60);
    vm_wait_line(dst, "STAT", 60);
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'stop'}"));
    picture_screendump(dst, "mig-later", &later);
    assert_torn_frame(&later, 32);
    g_assert_cmpuint(picture_counter(&later), >, picture_counter(&s));
    picture_free(&s);
    picture_free(&d);
    picture_free(&later);
    vm_kill(dst);
    vm_kill(src);
}

static void assert_migration_active(VM *src)
{
    JsonNode *r = vm_qmp_ok(src, "{'execute': 'query-migrate'}");

    g_assert_cmpstr(json_get_str(r, "status"), ==, "active");
    json_node_unref(r);
}

/*
 * The display and the migration tracking VRAM together, where a lost
 * dirty bit would show: the guest redraws two lines a frame at 400 fps
 * (lines=2), so a page is written in one burst every ~0.6 s, and the
 * migration, held under the dirty rate (512 KB/s), syncs and clears the
 * same slot all along; at switchover both ends are compared as above (a
 * page lost in the last ~0.6 s would show as a stale line). Our cont is
 * refused while a migration runs, so the source cannot be looked at
 * paused mid-migration.
 */
static void test_migrate_sparse(void)
{
    const char *append = "mode=draw rate=400 lines=2 report_ms=500";
    g_autofree char *uri = NULL;
    Picture s = { 0 }, d = { 0 };
    int64_t refreshes;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    uri = start_drawing_pair(append, &src, &dst);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 524288, 'downtime-limit': 1}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    migtest_wait_ram_progress(src, "ram.transferred", 2 << 20);
    refreshes = display_refreshes(src);
    for (gint64 end = g_get_monotonic_time() + 3 * G_USEC_PER_SEC;
         g_get_monotonic_time() < end;) {
        vm_pump(src, 100);
    }
    assert_migration_active(src);
    /* The display synced VRAM on its own all along, not only for the screendumps. */
    g_assert_cmpint(display_refreshes(src), >, refreshes + 10);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 4294967296, 'downtime-limit': 30000}}"));
    json_node_unref(migtest_wait_completed(src));
    migtest_wait_incoming_done(dst);
    assert_switchover_vram(src, dst, &s, &d);
    picture_free(&s);
    picture_free(&d);
    vm_kill(dst);
    vm_kill(src);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vga-draw/exact-frames", test_exact_frames);
    g_test_add_func("/vga-draw/no-display", test_no_display);
    g_test_add_func("/vga-draw/moving", test_moving);
    g_test_add_func("/vga-draw/paused-mid-frame", test_paused_mid_frame);
    g_test_add_data_func("/vga-draw/migrate-drawing", "mode=draw report_ms=500",
                         test_migrate_drawing);
    g_test_add_data_func("/vga-draw/migrate-heavy", "mode=draw rate=0 report_ms=500",
                         test_migrate_drawing);
    g_test_add_func("/vga-draw/migrate-sparse", test_migrate_sparse);
    return g_test_run();
}
