/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mode=blkhostile: a virtio-blk driver that sends what no driver should,
 * one case at a time on a freshly set up device, and checks how the
 * device answers:
 *   - requests that are well formed but name sectors outside the disk,
 *     lengths that are not whole sectors, unknown types: the request
 *     completes with VIRTIO_BLK_S_IOERR or _UNSUPP and the device works on;
 *   - chains that are no request at all (a header the device would have
 *     to write, no status byte, buffers outside RAM, a looping or endless
 *     chain, a huge length): the device sets DEVICE_NEEDS_RESET.
 * Then a last case proves the device works again after a reset. One line
 * per case, "CASE name=N result=R expect=E ok|FAIL", then
 * "DONE blkhostile cases=N failed=M"; the exit code is 0 only if none
 * failed. The host, for its part, must print one warning (the first
 * break) and write nothing outside the image.
 */
#include "workload.h"
#include "virtio.h"
#include "vblk.h"

#define WAIT_MS                 2000
#define FAR_BEYOND_RAM          (1ULL << 40)
#define FREE_DESC               200     /* descriptors above the request slots' */
/* Longer than the longest chain a device takes (VIRTQUEUE_MAX_SIZE, 1024, ours and QEMU's). */
#define LONG_CHAIN              1100
#define F_INDIRECT              (1ULL << 28)

enum expect { E_OK, E_IOERR, E_UNSUPP, E_BROKEN };

static const char *const expect_names[] = {
    [E_OK] = "ok", [E_IOERR] = "ioerr", [E_UNSUPP] = "unsupp", [E_BROKEN] = "needs-reset",
};

/*
 * An indirect table longer than any chain a device takes, in the data
 * buffers of the slots from LONG_SLOT on (contiguous, unused here).
 */
#define LONG_SLOT               8

struct bcase {
    const char *name;
    enum expect expect;
    void (*plant)(void);
};

static void hdr_set(uint32_t type, uint64_t sector)
{
    uint32_t *h = vblk_hdr(0);

    h[0] = type;
    h[1] = 0;
    *(uint64_t *)(h + 2) = sector;
}

/* Header (out), optional data, status (in): descriptors FREE_DESC on. */
static void chain3(uint16_t hdr_flags, uint64_t data_addr, uint32_t data_len, uint16_t data_flags,
                   bool status)
{
    struct vq_desc *d = vblk_desc_table();
    uint16_t i = FREE_DESC;

    d[i] = (struct vq_desc) { (uint64_t)vblk_hdr(0), 16, hdr_flags, (uint16_t)(i + 1) };
    d[i + 1] = (struct vq_desc) { data_addr, data_len, data_flags, (uint16_t)(i + 2) };
    if (status) {
        d[i + 1].flags |= VRING_DESC_F_NEXT;
        d[i + 2] = (struct vq_desc) { (uint64_t)vblk_status_byte(0), 1, VRING_DESC_F_WRITE, 0 };
    }
    *vblk_status_byte(0) = 0xff;
    vblk_offer(i);
}

static void plant_read_beyond_end(void)
{
    vblk_submit(0, VBLK_T_IN, g_vblk.capacity, VBLK_SECTOR);
}

static void plant_write_beyond_end(void)
{
    memset(vblk_buf(0), 0xee, 2 * VBLK_SECTOR);
    vblk_submit(0, VBLK_T_OUT, g_vblk.capacity - 1, 2 * VBLK_SECTOR);
}

static void plant_sector_huge(void)
{
    memset(vblk_buf(0), 0xee, VBLK_SECTOR);
    vblk_submit(0, VBLK_T_OUT, (1ULL << 63) - 1, VBLK_SECTOR);
}

static void plant_len_not_sector(void)
{
    vblk_submit(0, VBLK_T_OUT, 0, 100);
}

static void plant_type_unknown(void)
{
    vblk_submit(0, 99, 0, VBLK_SECTOR);
}

/* Two 16-byte segments: more than max_discard_seg (1). */
static void plant_discard_two(void)
{
    uint64_t *seg = (uint64_t *)vblk_buf(0);

    seg[0] = 0;
    seg[1] = 1;
    seg[2] = 8;
    seg[3] = 1;
    vblk_submit(0, VBLK_T_DISCARD, 0, 32);
}

static void plant_zeroes_beyond_end(void)
{
    uint64_t *seg = (uint64_t *)vblk_buf(0);

    seg[0] = g_vblk.capacity - 1;
    seg[1] = 8;                 /* num_sectors 8, flags 0 */
    vblk_submit(0, VBLK_T_WRITE_ZEROES, 0, 16);
}

static void plant_header_write_only(void)
{
    hdr_set(VBLK_T_IN, 0);
    chain3(VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, (uint64_t)vblk_buf(0), VBLK_SECTOR,
           VRING_DESC_F_WRITE, true);
}

static void plant_no_status(void)
{
    hdr_set(VBLK_T_OUT, 0);
    chain3(VRING_DESC_F_NEXT, (uint64_t)vblk_buf(0), VBLK_SECTOR, 0, false);
}

static void plant_data_outside_ram(void)
{
    hdr_set(VBLK_T_IN, 0);
    chain3(VRING_DESC_F_NEXT, FAR_BEYOND_RAM, VBLK_SECTOR, VRING_DESC_F_WRITE, true);
}

static void plant_huge_length(void)
{
    hdr_set(VBLK_T_IN, 0);
    chain3(VRING_DESC_F_NEXT, (uint64_t)vblk_buf(0), 0xfffffe00u, VRING_DESC_F_WRITE, true);
}

static void plant_desc_loop(void)
{
    struct vq_desc *d = vblk_desc_table();

    hdr_set(VBLK_T_IN, 0);
    chain3(VRING_DESC_F_NEXT, (uint64_t)vblk_buf(0), VBLK_SECTOR, VRING_DESC_F_WRITE, true);
    d[FREE_DESC + 1].next = FREE_DESC;      /* data -> header -> data -> ... */
}

static void plant_next_out_of_range(void)
{
    struct vq_desc *d = vblk_desc_table();

    hdr_set(VBLK_T_IN, 0);
    chain3(VRING_DESC_F_NEXT, (uint64_t)vblk_buf(0), VBLK_SECTOR, VRING_DESC_F_WRITE, true);
    d[FREE_DESC].next = 0xffff;
}

static void plant_chain_too_long(void)
{
    struct vq_desc *d = vblk_desc_table();
    struct vq_desc *long_table = (struct vq_desc *)vblk_buf(LONG_SLOT);

    hdr_set(VBLK_T_OUT, 0);
    long_table[0] = (struct vq_desc) { (uint64_t)vblk_hdr(0), 16, VRING_DESC_F_NEXT, 1 };
    for (uint16_t i = 1; i < LONG_CHAIN; i++) {
        long_table[i] = (struct vq_desc) { (uint64_t)vblk_buf(0), 8, VRING_DESC_F_NEXT,
                                           (uint16_t)(i + 1) };
    }
    long_table[LONG_CHAIN - 1] = (struct vq_desc) { (uint64_t)vblk_status_byte(0), 1,
                                                    VRING_DESC_F_WRITE, 0 };
    d[FREE_DESC] = (struct vq_desc) { (uint64_t)long_table, LONG_CHAIN * sizeof(*long_table),
                                      VRING_DESC_F_INDIRECT, 0 };
    vblk_offer(FREE_DESC);
}

static void plant_recover(void)
{
    vblk_submit(0, VBLK_T_IN, 0, VBLK_SECTOR);
}

static const struct bcase cases[] = {
    { "read-beyond-end", E_IOERR, plant_read_beyond_end },
    { "write-beyond-end", E_IOERR, plant_write_beyond_end },
    { "sector-huge", E_IOERR, plant_sector_huge },
    { "len-not-sector", E_IOERR, plant_len_not_sector },
    { "type-unknown", E_UNSUPP, plant_type_unknown },
    { "discard-two-segments", E_UNSUPP, plant_discard_two },
    { "zeroes-beyond-end", E_IOERR, plant_zeroes_beyond_end },
    { "header-write-only", E_BROKEN, plant_header_write_only },
    { "no-status", E_BROKEN, plant_no_status },
    { "data-outside-ram", E_BROKEN, plant_data_outside_ram },
    { "huge-length", E_BROKEN, plant_huge_length },
    { "desc-loop", E_BROKEN, plant_desc_loop },
    { "next-out-of-range", E_BROKEN, plant_next_out_of_range },
    { "chain-too-long", E_BROKEN, plant_chain_too_long },
    { "recover", E_OK, plant_recover },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* What the device did: a completion's status, or NEEDS_RESET; -1 if nothing in time. */
static int outcome(void)
{
    uint64_t end = rdtsc() + ms_to_tsc(WAIT_MS);

    while (rdtsc() < end) {
        uint16_t head;
        uint32_t len;
        uint8_t status;

        if (vblk_device_status() & STATUS_NEEDS_RESET) {
            return E_BROKEN;
        }
        if (vblk_poll(&head, &len, &status)) {
            /* A hostile chain's head is not a slot's: its status byte is slot 0's. */
            status = *vblk_status_byte(0);
            return status == VBLK_S_OK ? E_OK : status == VBLK_S_IOERR ? E_IOERR
                   : status == VBLK_S_UNSUPP ? E_UNSUPP : -1;
        }
        asm volatile("pause");
    }
    return -1;
}

_Static_assert(LONG_CHAIN * sizeof(struct vq_desc) <= (VBLK_MAX_SLOTS - LONG_SLOT) *
               VBLK_SLOT_BYTES, "the long chain's table fits the slots' buffers");

_Noreturn void blk_hostile_main(struct wstat *s)
{
    unsigned failed = 0;
    struct line l = { 0 };

    for (unsigned i = 0; i < NCASES; i++) {
        enum vnet_error err = vblk_setup(F_INDIRECT);
        int got;

        if (err != VNET_OK) {
            ln_tag(&l, "FAIL", s->cpu);
            ln_str(&l, "blk-setup error=");
            ln_str(&l, vnet_error_names[err]);
            ln_emit(&l);
            wl_exit(s->cpu, EXIT_SETUP);
        }
        if (i == 0) {
            blk_print_device();
            ln_str(&l, "READY mode=blkhostile cases=");
            ln_u64(&l, NCASES);
            ln_str(&l, " capacity=");
            ln_u64(&l, g_vblk.capacity);
            ln_emit(&l);
        }
        cases[i].plant();
        vblk_kick();
        got = outcome();
        /* An answered request must leave the device working. */
        if (got != E_BROKEN && got >= 0 && (vblk_device_status() & STATUS_NEEDS_RESET)) {
            got = E_BROKEN;
        }
        ln_str(&l, "CASE name=");
        ln_str(&l, cases[i].name);
        ln_str(&l, " result=");
        ln_str(&l, got < 0 ? "timeout" : expect_names[got]);
        ln_str(&l, " expect=");
        ln_str(&l, expect_names[cases[i].expect]);
        ln_str(&l, got == (int)cases[i].expect ? " ok" : " FAIL");
        ln_emit(&l);
        failed += got != (int)cases[i].expect;
    }
    ln_str(&l, "DONE blkhostile cases=");
    ln_u64(&l, NCASES);
    ln_str(&l, " failed=");
    ln_u64(&l, failed);
    ln_emit(&l);
    wl_exit(s->cpu, failed ? EXIT_VERIFY : EXIT_OK);
}
