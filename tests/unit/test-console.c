/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The console's refresh (ui/console.c) as a dirty-log client of the fake
 * kernel (kvm-dirty-fake.c), beside a migration client that syncs and
 * clears at random, in get-log, clear-log and dirty-ring modes: after
 * every refresh made with no write racing it, the surface is exactly a
 * full conversion of VRAM. Guest writes also race the ioctls (the fake's
 * race), so writes land between a clear and the read that follows it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/kvm.h"
#include "system/kvm-dirty-client.h"
#include "system/memory.h"
#include "system/runstate.h"
#include "migration/misc.h"
#include "monitor/hmp.h"
#include "qapi/qapi-commands.h"
#include "ui/console.h"
#include "kvm-dirty-fake.h"

#define VRAM_SLOT 2

KVMState *kvm_state;

/* What console.c needs from the rest of the VMM, reduced to nothing. */
bool migration_incoming_in_postcopy(void)
{
    return false;
}

VMChangeStateEntry *qemu_add_vm_change_state_handler(VMChangeStateHandler *cb, void *opaque)
{
    return NULL;
}

void qemu_del_vm_change_state_handler(VMChangeStateEntry *e)
{
}

const char *hmp_arg_str(const HMPArgs *a, const char *name)
{
    return NULL;
}

bool hmp_arg_has(const HMPArgs *a, const char *name)
{
    return false;
}

int64_t hmp_arg_int(const HMPArgs *a, const char *name, int64_t def)
{
    return def;
}

void hmp_handle_error(Monitor *mon, Error *err)
{
}

static GRand *content_rand;
static uint32_t palette[256];

/* Every guest write of a VRAM page changes a few of its bytes. */
static void vram_on_write(int slot, uint64_t page)
{
    RAMBlock *vram = k.blocks[1];

    if (slot != VRAM_SLOT) {
        return;
    }
    for (int i = 0; i < 4; i++) {
        uint32_t off = g_rand_int_range(content_rand, 0, TARGET_PAGE_SIZE);

        vram->host[page * TARGET_PAGE_SIZE + off] = g_rand_int(content_rand);
    }
}

/* Two modes the test switches between: lines straddling pages, and 8 bpp. */
static DisplayFramebuffer fb_modes[2];
static int fb_current;

static void fake_get_framebuffer(void *opaque, DisplayFramebuffer *fb)
{
    *fb = fb_modes[fb_current];
}

static const GraphicHwOps fake_ops = { .get_framebuffer = fake_get_framebuffer };

static void assert_surface_is_vram(QemuConsole *con)
{
    const DisplayFramebuffer *fb = &fb_modes[fb_current];
    pixman_image_t *want = pixman_image_create_bits(PIXMAN_x8r8g8b8, fb->width, fb->height,
                                                    NULL, 0);
    pixman_image_t *src = display_wrap_framebuffer(fb, k.blocks[1]->host);
    pixman_image_t *got = qemu_console_surface(con);
    size_t bytes = (size_t)pixman_image_get_stride(want) * fb->height;

    display_convert_lines(want, src, fb, k.blocks[1]->host, 0, fb->height);
    g_assert_nonnull(got);
    g_assert_cmpint(pixman_image_get_stride(got), ==, pixman_image_get_stride(want));
    if (memcmp(pixman_image_get_data(got), pixman_image_get_data(want), bytes)) {
        g_error("surface differs from VRAM (mode %d)", fb_current);
    }
    if (src) {
        pixman_image_unref(src);
    }
    pixman_image_unref(want);
}

static void test_refresh_beside_migration(gconstpointer opaque)
{
    FakeMode mode = GPOINTER_TO_INT(opaque);
    uint64_t vram_pages = slot_pages[VRAM_SLOT];
    g_autoptr(GRand) rand = g_rand_new_with_seed(0xd15e1a7);
    KVMDirtyClient *mig;
    QemuConsole *con;
    RAMBlock *vram;

    vm_new(mode);
    kvm_state = k.s;
    vram = k.blocks[1];
    vram->used_length = vram_pages * TARGET_PAGE_SIZE;
    vram->host = g_malloc0(vram->used_length);
    content_rand = g_rand_new_with_seed(7);
    fake_on_write = vram_on_write;
    for (int i = 0; i < 256; i++) {
        palette[i] = 0x010203 * i;
    }
    fb_modes[0] = (DisplayFramebuffer) { .enabled = true, .width = 150, .height = 655,
                                         .bpp = 32, .stride = 600, .generation = 1 };
    fb_modes[1] = (DisplayFramebuffer) { .enabled = true, .width = 3000, .height = 90,
                                         .bpp = 8, .stride = 4200, .start = 8192,
                                         .palette = palette, .generation = 2 };
    fb_current = 0;

    con = graphic_console_init("vga0", &fake_ops, NULL, vram);
    g_assert_true(display_init(true, &error_abort));
    mig = kvm_dirty_client_start(k.s, "migration", NULL, &error_abort);
    k.race = g_rand_new_with_seed(11);

    for (int i = 0; i < 4000; i++) {
        int action = g_rand_int_range(rand, 0, 10);

        if (action < 5) {
            guest_write(g_rand_int_range(rand, 0, 3) == 0 ? 0 : VRAM_SLOT,
                        g_rand_int_range(rand, 0, vram_pages), g_rand_int_range(rand, 0, NVCPUS));
        } else if (action == 5) {
            kvm_dirty_client_sync(mig, NULL, NULL);
        } else if (action == 6) {
            KVMSlot *slot = &k.s->slots[g_rand_int_range(rand, 0, NSLOTS)];
            uint64_t first = g_rand_int_range(rand, 0, slot->npages);

            kvm_dirty_client_clear(mig, slot, first,
                                   g_rand_int_range(rand, 1, slot->npages - first + 1));
        } else if (action == 7 && g_rand_int_range(rand, 0, 50) == 0) {
            fb_current ^= 1;
        } else {
            GRand *race = k.race;

            graphic_hw_update(con);             /* with writes racing its ioctls */
            k.race = NULL;
            graphic_hw_update(con);             /* none racing: it must catch up */
            assert_surface_is_vram(con);
            k.race = race;
        }
    }
    {
        /* The picture was mostly kept up to date line by line, not redrawn. */
        g_autofree XDisplayInfo *info = qmp_x_query_display(&error_abort);

        g_assert_true(info->dirty_client);
        g_assert_cmpuint(info->full_refreshes * 4, <, info->refreshes);
        g_assert_cmpuint(info->lines_converted * 4, <, info->refreshes * 655);
    }
    kvm_dirty_client_stop(mig);
    display_cleanup();
    fake_on_write = NULL;
    g_rand_free(content_rand);
    g_free(vram->host);
    vm_free();
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_data_func("/console/refresh-beside-migration/get-log",
                         GINT_TO_POINTER(MODE_GET), test_refresh_beside_migration);
    g_test_add_data_func("/console/refresh-beside-migration/clear-log",
                         GINT_TO_POINTER(MODE_CLEAR), test_refresh_beside_migration);
    g_test_add_data_func("/console/refresh-beside-migration/dirty-ring",
                         GINT_TO_POINTER(MODE_RING), test_refresh_beside_migration);
    return g_test_run();
}
