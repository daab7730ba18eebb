/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading a mapped-ram file: checks, then pages eagerly or lazily (mapped-ram-in.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/worker-pool.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "lazy-restore.h"
#include "migration/transport/mapped-ram.h"
#include "mapped-ram-in.h"
#include "migration/transport/mapped-ram-integrity.h"
#include "migration/core/options.h"
#include "migration/trace.h"
#include <sys/stat.h>

#define MR_CHUNK_PAGES 512      /* a reader takes 2 MiB of a block at a time */
/*
 * MrLoad.err, not an errno: a region does not match the integrity record
 * (a real EBADMSG from pread, a filesystem's checksum error, is an I/O
 * error); or the checker thread could not be created.
 */
#define MR_ERR_MISMATCH (-1)
#define MR_ERR_NO_CHECKER (-2)

static int64_t mr_file_size(QEMUFile *f)
{
    struct stat st;

    if (qemu_file_fd(f) < 0 || fstat(qemu_file_fd(f), &st) < 0 || !S_ISREG(st.st_mode)) {
        return -1;
    }
    return st.st_size;
}

/* The footer's record length, against what this machine's RAM blocks could need. */
static bool mr_check_hex_len(uint64_t hex_len, Error **errp)
{
    GPtrArray *blocks = ram_blocks();
    g_autofree uint64_t *len = g_new(uint64_t, blocks->len);

    for (guint i = 0; i < blocks->len; i++) {
        len[i] = ((RAMBlock *)g_ptr_array_index(blocks, i))->used_length;
    }
    return mri_check_hex_len(hex_len, len, blocks->len, errp);
}

/*
 * The integrity record before the trailer at @end, if any (*@integ NULL
 * without one), its stream hash checked: before a byte of device state is
 * believed. False with @errp set.
 */
static bool mr_read_integrity(int fd, int64_t stream_start, int64_t end, bool has_record,
                              MappedRamIntegrity **integ, Error **errp)
{
    g_autoptr(MappedRamIntegrity) r = NULL;
    g_autofree char *hex = NULL;
    uint8_t footer[MRI_FOOTER_SIZE];
    uint64_t hex_len, hash;
    int ret;

    *integ = NULL;
    if (end >= stream_start + MRI_FOOTER_SIZE &&
        !qemu_pread_full(fd, footer, sizeof(footer), end - MRI_FOOTER_SIZE)) {
        /* An I/O error is not "no record": it says nothing about the file. */
        error_setg_errno(errp, errno, "reading the mapped-ram file's integrity footer failed");
        return false;
    }
    if (end < stream_start + MRI_FOOTER_SIZE ||
        !mri_parse_footer(footer, stream_start, end, &hex_len, errp)) {
        if (has_record) {
            error_setg(errp, "the mapped-ram file is corrupted: its trailer says an integrity "
                       "record precedes it, but there is no record's footer");
            return false;
        }
        if (migrate_mapped_ram_integrity()) {
            error_setg(errp, "the mapped-ram file has no integrity record, and "
                       "x-mapped-ram-integrity is on (it was written without it, or its record "
                       "was damaged)");
            return false;
        }
        return true;
    }
    if (!hex_len || !mr_check_hex_len(hex_len, errp)) {
        return false;
    }
    hex = g_try_malloc(hex_len);
    if (!hex) {
        error_setg(errp, "the mapped-ram file's integrity record (%" PRIu64 " bytes) does "
                   "not fit in memory", hex_len);
        return false;
    }
    if (!qemu_pread_full(fd, hex, hex_len, end - MRI_FOOTER_SIZE - hex_len)) {
        error_setg_errno(errp, errno, "reading the mapped-ram file's integrity record failed");
        return false;
    }
    r = mri_decode(hex, hex_len, end - MRI_FOOTER_SIZE - hex_len, errp);
    if (!r) {
        return false;
    }
    if (r->stream_start != (uint64_t)stream_start) {
        error_setg(errp, "the mapped-ram file's integrity record belongs to a stream at "
                   "0x%" PRIx64 ", not 0x%" PRIx64, r->stream_start, stream_start);
        return false;
    }
    ret = mri_stream_hash(r, fd, &hash);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "reading the mapped-ram stream to check it failed");
        return false;
    }
    if (hash != r->stream_hash) {
        error_setg(errp, "the mapped-ram file is corrupted: its device state, block list or "
                   "block headers do not match its integrity record");
        return false;
    }
    *integ = g_steal_pointer(&r);
    return true;
}

/*
 * Whether the file ends as a whole stream written by QEMU does: EOF
 * (0x00), then the vmdesc record (0x06, be32 length) whose JSON runs to the
 * last byte. QEMU (9.0 and later) writes no completion marker of ours, and
 * writes its device state and vmdesc after every page: a file that ends so
 * has all its pages. The JSON is at most MR_QEMU_VMDESC_MAX bytes here.
 */
#define MR_QEMU_VMDESC_MAX (1 * MiB)

static bool mr_ends_like_qemu(int fd, int64_t stream_start, int64_t size)
{
    int64_t tail = MIN(size - stream_start, MR_QEMU_VMDESC_MAX + 6);
    g_autofree uint8_t *buf = NULL;

    if (tail < 8) {
        return false;
    }
    buf = g_malloc(tail);
    if (!qemu_pread_full(fd, buf, tail, size - tail) || buf[tail - 1] != '}') {
        return false;
    }
    for (int64_t i = tail - 7; i >= 1; i--) {
        if (buf[i] == 0x06 && buf[i - 1] == 0x00 && buf[i + 5] == '{' &&
            ldl_be_p(buf + i + 1) == (uint64_t)(tail - i - 5)) {
            return true;
        }
    }
    return false;
}

bool mapped_ram_in_check_file(QEMUFile *f, int64_t stream_start, MappedRamIntegrity **integ,
                              int64_t *stream_end, Error **errp)
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
        (memcmp(trailer, MAPPED_RAM_TRAILER_MAGIC, 8) &&
         memcmp(trailer, MAPPED_RAM_TRAILER_MAGIC_RECORD, 8))) {
        if (mr_ends_like_qemu(qemu_file_fd(f), stream_start, size)) {
            /* A QEMU's file, whole: no marker, no integrity record to check against. */
            *integ = NULL;
            *stream_end = size;
            return true;
        }
        error_setg(errp, "the mapped-ram file is incomplete: its completion marker is missing "
                   "(the migration or snapshot that wrote it failed or did not finish)");
        return false;
    }
    memcpy(hex, trailer + 8, 16);
    hex[16] = '\0';
    if (!g_ascii_string_to_unsigned(hex, 16, 0, INT64_MAX, &start, NULL) ||
        start != (uint64_t)stream_start) {
        /* Escaped: a damaged marker may hold bytes a terminal does not show. */
        g_autofree char *shown = g_strescape(hex, NULL);

        error_setg(errp, "the mapped-ram file's completion marker does not belong to the stream "
                   "at offset %" PRId64 " (it says '%s', at offset %" PRId64 ")", stream_start,
                   shown, size - (int64_t)sizeof(trailer) + 8);
        return false;
    }
    /* MRAMDONE: a record is still read if there is one (files written before MRAMDONR). */
    if (!mr_read_integrity(qemu_file_fd(f), stream_start, size - MAPPED_RAM_TRAILER_SIZE,
                           !memcmp(trailer, MAPPED_RAM_TRAILER_MAGIC_RECORD, 8), integ,
                           errp)) {
        return false;
    }
    *stream_end = *integ ? (int64_t)(*integ)->stream_end : size - MAPPED_RAM_TRAILER_SIZE;
    return true;
}

/* What the eager readers share: one block. */
typedef struct MrLoad {
    RAMBlock *rb;
    int fd;
    const unsigned long *present;
    uint64_t npages;
    uint64_t pages_offset;
    uint32_t index;             /* the block's place in the block list */
    const uint64_t *region_hash;    /* the integrity record's, or NULL */
    uint64_t next_chunk;        /* atomic: the next 2 MiB a reader takes */
    int err;                    /* atomic: the first read's errno, or MR_ERR_* */
    uint64_t err_page;
    /*
     * With a record: the chunks read (set by the readers, in any order) and
     * the checker ("mig/mr-v") that follows them in order, so that hashing
     * overlaps the reads instead of adding to them. done_lock/done_cond
     * only wake it; the bits are atomic.
     */
    unsigned long *done;
    GMutex done_lock;
    GCond done_cond;
} MrLoad;

static void mr_load_wake(MrLoad *l)
{
    if (l->done) {
        g_mutex_lock(&l->done_lock);
        g_cond_broadcast(&l->done_cond);
        g_mutex_unlock(&l->done_lock);
    }
}

static void mr_load_fail(MrLoad *l, uint64_t page, int err)
{
    int none = 0;

    if (__atomic_compare_exchange_n(&l->err, &none, err, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
        l->err_page = page;
    }
    mr_load_wake(l);
}

/* The regions of chunk @c, read into guest RAM, against the integrity record. */
static bool mr_check_chunk(MrLoad *l, uint64_t c)
{
    uint64_t end = MIN((c + 1) * MR_CHUNK_PAGES, l->npages);

    for (uint64_t first = c * MR_CHUNK_PAGES; l->region_hash && first < end;
         first += MRI_REGION_PAGES) {
        uint64_t g = first / MRI_REGION_PAGES;

        if (!mri_check_region(l->index, g, l->present, l->npages,
                              l->rb->host + (first << TARGET_PAGE_BITS), l->region_hash[g])) {
            mr_load_fail(l, first, MR_ERR_MISMATCH);
            return false;
        }
    }
    return true;
}

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
                mr_load_fail(l, p, errno);
                return NULL;
            }
            bitmap_set_atomic(l->rb->vmm_written_bmap, p, q - p);
            p = q;
        }
        if (l->done) {
            /* A chunk is whole regions (2 MiB = 32 x 64 KiB): checked once all of it is read. */
            set_bit_atomic(c, l->done);
            mr_load_wake(l);
        }
    }
}

/* WorkerEachFn: reader @index ("mig/mr-r<index>", 0: the loading thread). */
static int mr_reader_each(void *opaque, int index, Error **errp)
{
    /* Failures go to l->err: the other readers and the checker poll it to stop early. */
    mr_reader(opaque);
    return 0;
}

/* mig/mr-v: every chunk in order, as soon as it is read; stops at the first failure. */
static int mr_checker(void *opaque, int index, void *job, Error **errp)
{
    MrLoad *l = opaque;
    uint64_t nchunks = DIV_ROUND_UP(l->npages, MR_CHUNK_PAGES);

    for (uint64_t c = 0; c < nchunks; c++) {
        g_mutex_lock(&l->done_lock);
        while (!test_bit_atomic(c, l->done) && !__atomic_load_n(&l->err, __ATOMIC_ACQUIRE)) {
            g_cond_wait(&l->done_cond, &l->done_lock);
        }
        g_mutex_unlock(&l->done_lock);
        if (__atomic_load_n(&l->err, __ATOMIC_ACQUIRE) || !mr_check_chunk(l, c)) {
            return 0;
        }
    }
    return 0;
}

/* The checker is a pool of one, so that its stop is the pool's: it runs its job, then ends. */
static const WorkerPoolOps mr_checker_ops = {
    .run = mr_checker,
};

static bool mr_load_pages(MrLoad *l, Error **errp)
{
    int n = migrate_multifd() ? migrate_multifd_channels() : 1;
    g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", l->fd);
    /*
     * O_DIRECT where the filesystem has it: pages go from the disk into
     * guest RAM once, not through the page cache (guest RAM and the file
     * are page aligned).
     */
    int dfd = open(self, O_RDONLY | O_CLOEXEC | O_DIRECT);
    WorkerPool *checker = NULL;

    if (dfd >= 0) {
        l->fd = dfd;
    }
    if (l->region_hash) {
        l->done = bitmap_new(DIV_ROUND_UP(l->npages, MR_CHUNK_PAGES));
        g_mutex_init(&l->done_lock);
        g_cond_init(&l->done_cond);
        checker = worker_pool_new("mig/mr-v", 1, &mr_checker_ops, l);
        if (worker_pool_start(checker, 0, NULL) < 0) {
            mr_load_fail(l, 0, MR_ERR_NO_CHECKER);
        } else {
            worker_pool_submit(checker, 0, l);
        }
    }
    /*
     * Reader 0 is this thread. A reader whose thread cannot be created
     * runs here too: the chunks go to whoever asks, so the result is the
     * same with fewer threads.
     */
    worker_pool_run_each("mig/mr-r%d", n, mr_reader_each, l, NULL);
    /* Every chunk is read or the load failed: either way the checker ends. */
    worker_pool_free(checker);
    if (l->done) {
        g_mutex_clear(&l->done_lock);
        g_cond_clear(&l->done_cond);
        g_free(l->done);
    }
    if (dfd >= 0) {
        close(dfd);
    }
    if (l->err == MR_ERR_NO_CHECKER) {
        error_setg(errp, "mapped-ram: cannot create thread mig/mr-v to check block %s "
                   "against the integrity record", l->rb->idstr);
        return false;
    }
    if (l->err == MR_ERR_MISMATCH) {
        error_setg(errp, "the mapped-ram file is corrupted: pages %" PRIu64 "-%" PRIu64
                   " of block %s do not match its integrity record", l->err_page,
                   MIN(l->err_page + MRI_REGION_PAGES, l->npages) - 1, l->rb->idstr);
        return false;
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

/* The stream's next block must be the record's next, with the same header. */
static const MriBlock *mr_integrity_block(MappedRamIntegrity *integ, RAMBlock *rb,
                                          const MappedRamHeader *h, uint32_t *index,
                                          Error **errp)
{
    const MriBlock *b;

    if (integ->next_block >= integ->nblocks) {
        error_setg(errp, "the mapped-ram file is corrupted: block %s is not in its integrity "
                   "record (%u blocks)", rb->idstr, integ->nblocks);
        return NULL;
    }
    *index = integ->next_block++;
    b = &integ->blocks[*index];
    if (strcmp(b->name, rb->idstr) || b->used_length != rb->used_length ||
        b->bitmap_offset != h->bitmap_offset || b->pages_offset != h->pages_offset) {
        error_setg(errp, "the mapped-ram file is corrupted: block %s (bitmap at 0x%" PRIx64
                   ", pages at 0x%" PRIx64 ") is not its integrity record's block %u, %s "
                   "(0x%" PRIx64 ", 0x%" PRIx64 ")", rb->idstr, h->bitmap_offset,
                   h->pages_offset, *index, b->name, b->bitmap_offset, b->pages_offset);
        return NULL;
    }
    return b;
}

bool mapped_ram_in_block(QEMUFile *f, RAMBlock *rb, void *opaque, Error **errp)
{
    MappedRamIntegrity *integ = opaque;
    const MriBlock *ib = NULL;
    uint32_t index = 0;
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
    if (integ) {
        ib = mr_integrity_block(integ, rb, &h, &index, errp);
        if (!ib) {
            return false;
        }
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
        if (!lazy_restore_add_block(rb, qemu_file_fd(f), present, h.pages_offset, index,
                                    ib ? ib->region_hash : NULL, errp)) {
            goto fail;
        }
        present = NULL;         /* the lazy restore owns it now */
    } else {
        MrLoad l = { .rb = rb, .fd = qemu_file_fd(f), .present = present, .npages = npages,
                     .pages_offset = h.pages_offset, .index = index,
                     .region_hash = ib ? ib->region_hash : NULL };

        if (!mr_load_pages(&l, errp)) {
            goto fail;
        }
    }
    g_free(present);
    trace_mapped_ram_load_block(rb->idstr, npages, lazy, (get_clock_ns() - t0) / 1000);
    if (integ && h.bitmap_offset > (uint64_t)pos + MAPPED_RAM_HDR_SIZE) {
        /*
         * The stream hash covers the bytes up to the bitmap; the loader
         * hashes what it consumes (loadvm.c, stream_consumed): consume
         * them too, or the two never agree.
         */
        qemu_file_skip(f, h.bitmap_offset - pos - MAPPED_RAM_HDR_SIZE);
    }
    if (!qemu_file_seek(f, next)) {
        error_setg(errp, "mapped-ram: %s", qemu_file_error_msg(f));
        return false;
    }
    return true;

fail:
    g_free(present);
    return false;
}
