/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading a mapped-ram file: checks, then pages eagerly or lazily (mapped-ram-in.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/thread.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "lazy-restore.h"
#include "mapped-ram.h"
#include "mapped-ram-in.h"
#include "options.h"
#include "trace.h"
#include <sys/stat.h>

#define MR_CHUNK_PAGES 512      /* a reader takes 2 MiB of a block at a time */

static int64_t mr_file_size(QEMUFile *f)
{
    struct stat st;

    if (qemu_file_fd(f) < 0 || fstat(qemu_file_fd(f), &st) < 0 || !S_ISREG(st.st_mode)) {
        return -1;
    }
    return st.st_size;
}

bool mapped_ram_in_check_file(QEMUFile *f, int64_t stream_start, Error **errp)
{
    int64_t size = mr_file_size(f);
    uint8_t trailer[MAPPED_RAM_TRAILER_SIZE];
    char hex[17];
    guint64 start;

    if (stream_start < 0 || size < 0) {
        error_setg(errp, "the stream is a mapped-ram migration, whose pages are at offsets of "
                   "a file: it must be read from a file: URI");
        return false;
    }
    if (size < stream_start + MAPPED_RAM_TRAILER_SIZE ||
        !qemu_pread_full(qemu_file_fd(f), trailer, sizeof(trailer), size - sizeof(trailer)) ||
        memcmp(trailer, MAPPED_RAM_TRAILER_MAGIC, 8)) {
        error_setg(errp, "the mapped-ram file is incomplete: its completion marker is missing "
                   "(the migration or snapshot that wrote it failed or did not finish)");
        return false;
    }
    memcpy(hex, trailer + 8, 16);
    hex[16] = '\0';
    if (!g_ascii_string_to_unsigned(hex, 16, 0, INT64_MAX, &start, NULL) ||
        start != (uint64_t)stream_start) {
        error_setg(errp, "the mapped-ram file's completion marker does not belong to the stream "
                   "at offset %" PRId64 " (it says '%s')", stream_start, hex);
        return false;
    }
    return true;
}

/* What the eager readers share: one block. */
typedef struct MrLoad {
    RAMBlock *rb;
    int fd;
    const unsigned long *present;
    uint64_t npages;
    uint64_t pages_offset;
    uint64_t next_chunk;        /* atomic: the next 2 MiB a reader takes */
    int err;                    /* atomic: the first read's errno */
    uint64_t err_page;
} MrLoad;

static void *mr_reader(void *opaque)
{
    MrLoad *l = opaque;
    uint64_t nchunks = DIV_ROUND_UP(l->npages, MR_CHUNK_PAGES);

    for (;;) {
        uint64_t c = __atomic_fetch_add(&l->next_chunk, 1, __ATOMIC_RELAXED);
        uint64_t end = MIN((c + 1) * MR_CHUNK_PAGES, l->npages);
        uint64_t p;

        if (c >= nchunks || __atomic_load_n(&l->err, __ATOMIC_RELAXED)) {
            return NULL;
        }
        /* Runs of present pages, straight into guest RAM; the others stay discarded (zero). */
        for (p = find_next_bit(l->present, end, c * MR_CHUNK_PAGES); p < end;
             p = find_next_bit(l->present, end, p)) {
            uint64_t q = find_next_zero_bit(l->present, end, p);

            if (!qemu_pread_full(l->fd, l->rb->host + (p << TARGET_PAGE_BITS),
                              (q - p) << TARGET_PAGE_BITS,
                              l->pages_offset + (p << TARGET_PAGE_BITS))) {
                int none = 0;

                l->err_page = p;
                __atomic_compare_exchange_n(&l->err, &none, errno, false, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST);
                return NULL;
            }
            bitmap_set_atomic(l->rb->vmm_written_bmap, p, q - p);
            p = q;
        }
    }
}

static bool mr_load_pages(MrLoad *l, Error **errp)
{
    int n = migrate_multifd() ? migrate_multifd_channels() : 1;
    QemuThread *th = g_new0(QemuThread, n);
    g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", l->fd);
    /*
     * O_DIRECT where the filesystem has it: pages go from the disk into
     * guest RAM once, not through the page cache (guest RAM and the file
     * are page aligned).
     */
    int dfd = open(self, O_RDONLY | O_CLOEXEC | O_DIRECT);
    int started = 0;

    if (dfd >= 0) {
        l->fd = dfd;
    }

    for (int i = 1; i < n; i++) {
        g_autofree char *name = g_strdup_printf("mig/mr-r%d", i);

        if (qemu_thread_create(&th[i], name, mr_reader, l) < 0) {
            break;              /* fewer readers, same result */
        }
        started++;
    }
    mr_reader(l);
    for (int i = 1; i <= started; i++) {
        qemu_thread_join(&th[i]);
    }
    g_free(th);
    if (dfd >= 0) {
        close(dfd);
    }
    if (l->err) {
        error_setg(errp, "reading page %" PRIu64 " of block %s from the mapped-ram file failed: "
                   "%s", l->err_page, l->rb->idstr, g_strerror(l->err));
        return false;
    }
    return true;
}

/* A bitmap word past the block's last page must be clear: set bits there name no page. */
static bool mr_check_bitmap(const unsigned long *present, uint64_t npages, const char *name,
                            Error **errp)
{
    uint64_t tail = npages % BITS_PER_LONG;

    if (tail && (present[npages / BITS_PER_LONG] & (~0UL << tail))) {
        error_setg(errp, "the mapped-ram bitmap of block %s has pages set past its end "
                   "(%" PRIu64 " pages): it does not match the block's size", name, npages);
        return false;
    }
    return true;
}

bool mapped_ram_in_block(QEMUFile *f, RAMBlock *rb, Error **errp)
{
    int64_t size = mr_file_size(f), pos = qemu_file_tell(f), t0 = get_clock_ns();
    uint64_t npages = rb->used_length >> TARGET_PAGE_BITS, next;
    uint8_t hdr[MAPPED_RAM_HDR_SIZE];
    unsigned long *present = NULL;
    MappedRamHeader h;
    bool lazy = migrate_lazy_restore();
    int ret;

    if (size < 0 || pos < 0) {
        error_setg(errp, "mapped-ram: the stream is not a seekable file");
        return false;
    }
    qemu_get_buffer(f, hdr, sizeof(hdr));
    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading the mapped-ram header of block %s failed: %s", rb->idstr,
                   qemu_file_error_msg(f));
        return false;
    }
    if (!mapped_ram_parse_header(hdr, rb->idstr, pos, rb->used_length, size, &h, &next, errp)) {
        return false;
    }
    present = bitmap_new(npages);
    if (!qemu_pread_full(qemu_file_fd(f), present, mapped_ram_bitmap_size(rb->used_length),
                      h.bitmap_offset)) {
        error_setg_errno(errp, errno, "reading the mapped-ram bitmap of block %s failed",
                         rb->idstr);
        goto fail;
    }
    if (!mr_check_bitmap(present, npages, rb->idstr, errp)) {
        goto fail;
    }
    /* A clear bit is a zero page: what machine init put there (the firmware) must go. */
    ret = ram_block_discard_range(rb, 0, rb->used_length);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "mapped-ram: discarding RAM block %s failed", rb->idstr);
        goto fail;
    }
    if (lazy) {
        if (!lazy_restore_add_block(rb, qemu_file_fd(f), present, h.pages_offset, errp)) {
            goto fail;
        }
        present = NULL;         /* the lazy restore owns it now */
    } else {
        MrLoad l = { .rb = rb, .fd = qemu_file_fd(f), .present = present, .npages = npages,
                     .pages_offset = h.pages_offset };

        if (!mr_load_pages(&l, errp)) {
            goto fail;
        }
    }
    g_free(present);
    trace_mapped_ram_load_block(rb->idstr, npages, lazy, (get_clock_ns() - t0) / 1000);
    if (!qemu_file_seek(f, next)) {
        error_setg(errp, "mapped-ram: %s", qemu_file_error_msg(f));
        return false;
    }
    return true;

fail:
    g_free(present);
    return false;
}
