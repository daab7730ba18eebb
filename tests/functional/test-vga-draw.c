/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The firmware's mode=draw against isa-vga: a screendump of a paused guest
 * is byte-exact against the picture computed here for the frame number
 * read from it (the pattern of tests/guest/draw.c), at 32, 24, 16 and
 * 8 bpp; a guest paused while drawing shows its current frame up to some
 * pixel and its previous frame after it, nothing else; after a live
 * migration of a drawing guest the destination's screendump equals the
 * source's last frame.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include "libvmtest.h"
#include "migtest.h"

#define BASE_ARGS "-M microvm -enable-kvm -cpu host -nodefaults -no-user-config " \
                  "-serial stdio "
#define COUNTER_BITS 32

typedef struct Picture {
    int w, h;
    guchar *rgb;        /* w * h * 3 */
    char *data;
} Picture;

static void picture_load(Picture *p, const char *file)
{
    gsize len;
    int off = 0;

    g_assert_true(g_file_get_contents(file, &p->data, &len, NULL));
    g_assert_cmpint(sscanf(p->data, "P6\n%d %d\n255\n%n", &p->w, &p->h, &off), ==, 2);
    g_assert_cmpint(off, >, 0);
    g_assert_cmpuint(len, ==, (gsize)off + (gsize)p->w * p->h * 3);
    p->rgb = (guchar *)p->data + off;
}

static void screendump(VM *vm, const char *name, Picture *p)
{
    g_autofree char *file = g_strdup_printf("%s/%s.ppm", vmtest_tmpdir(), name);

    g_unlink(file);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'screendump', 'arguments': "
                              "{'filename': '%s'}}", file));
    picture_load(p, file);
}

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
        screendump(vm, "exact", &p);
        g_assert_cmpint(p.w, ==, c->w);
        g_assert_cmpint(p.h, ==, c->h);
        g_assert_cmpuint(picture_counter(&p), ==, 2);
        assert_frame(&p, c->bpp, 2);
        g_free(p.data);
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
    screendump(vm, "moving-a", &a);
    assert_torn_frame(&a, 32);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
    /* The first may have been out before the stop. */
    vm_wait_line(vm, "STAT", 60);
    vm_wait_line(vm, "STAT", 60);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    screendump(vm, "moving-b", &b);
    assert_torn_frame(&b, 32);
    g_assert_cmpuint(picture_counter(&b), >, picture_counter(&a));
    g_free(a.data);
    g_free(b.data);
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
    screendump(vm, "fast", &p);
    g_test_message("frame %" PRIu64 ", %zu pixels of it drawn", picture_counter(&p),
                   assert_torn_frame(&p, 32));
    g_free(p.data);
    vm_kill(vm);
}

/*
 * A live migration of a guest drawing at 30 fps with the display on: the
 * destination, kept paused, shows exactly what the (stopped) source shows
 * at switchover, a consistent frame; once it runs, it draws on.
 */
static void test_migrate_drawing(void)
{
    const char *append = "mode=draw report_ms=500";
    g_autofree char *uri = NULL;
    Picture s = { 0 }, d = { 0 }, later = { 0 };
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra("64M", append, "-device isa-vga");
    uri = migtest_uri("unix");
    dst = migtest_start_dest_extra("64M", append, true, uri, "-device isa-vga");
    migtest_slow_then_fast(src, uri, false);
    json_node_unref(migtest_wait_completed(src));
    migtest_wait_incoming_done(dst);
    screendump(src, "mig-src", &s);
    screendump(dst, "mig-dst", &d);
    g_assert_cmpint(s.w, ==, d.w);
    g_assert_cmpint(s.h, ==, d.h);
    g_assert_true(memcmp(s.rgb, d.rgb, (size_t)s.w * s.h * 3) == 0);
    assert_torn_frame(&d, 32);
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    vm_wait_line(dst, "STAT", 60);
    vm_wait_line(dst, "STAT", 60);
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'stop'}"));
    screendump(dst, "mig-later", &later);
    assert_torn_frame(&later, 32);
    g_assert_cmpuint(picture_counter(&later), >, picture_counter(&s));
    g_free(s.data);
    g_free(d.data);
    g_free(later.data);
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
    g_test_add_func("/vga-draw/migrate-drawing", test_migrate_drawing);
    return g_test_run();
}
