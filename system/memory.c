/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RAMBlocks and the guest-physical RAM map. Blocks and mappings are created
 * during machine init and never change afterwards, so lookups take no lock.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/memory.h"
#include "qemu/cpr-fd.h"
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static GPtrArray *blocks;
static GArray *ranges;           /* GuestRAMRange, sorted by gpa */
static int vmm_dirty_logging;     /* atomic */

GPtrArray *ram_blocks(void)
{
    if (!blocks) {
        blocks = g_ptr_array_new();
    }
    return blocks;
}

bool guest_ram_reads_may_wait(void)
{
    GPtrArray *rbs = ram_blocks();

    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        if (__atomic_load_n(&rb->uffd_missing, __ATOMIC_ACQUIRE)) {
            return true;
        }
    }
    return false;
}

static int ram_lost;              /* atomic: guest_ram_set_lost() was called */
static int ram_lost_fd = -1;      /* atomic: created once, by whoever asks first */

int guest_ram_lost_fd(void)
{
    int fd = __atomic_load_n(&ram_lost_fd, __ATOMIC_ACQUIRE);
    int expected = -1;

    if (fd >= 0) {
        return fd;
    }
    fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (!__atomic_compare_exchange_n(&ram_lost_fd, &expected, fd, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        close(fd);              /* another thread's won */
        return expected;
    }
    /* Lost before anyone asked for the fd: it must say so too. */
    if (__atomic_load_n(&ram_lost, __ATOMIC_SEQ_CST)) {
        guest_ram_set_lost();
    }
    return fd;
}

void guest_ram_set_lost(void)
{
    uint64_t one = 1;
    int fd;

    __atomic_store_n(&ram_lost, 1, __ATOMIC_SEQ_CST);
    fd = guest_ram_lost_fd();
    /* A counter of 1 (or more) stays readable; only an overflow could fail, never reached. */
    if (fd >= 0) {
        (void)!write(fd, &one, sizeof(one));
    }
}

bool guest_ram_lost(void)
{
    return __atomic_load_n(&ram_lost, __ATOMIC_SEQ_CST);
}

int ram_block_discard_range(RAMBlock *rb, uint64_t offset, uint64_t len)
{
    assert(QEMU_IS_ALIGNED(offset | len, TARGET_PAGE_SIZE) && offset <= rb->used_length &&
           len <= rb->used_length - offset);
    if (!len) {
        return 0;
    }
    /* Shared or file memory keeps its data in the file: punch it out there too. */
    if (rb->fd >= 0 &&
        fallocate(rb->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, len) < 0) {
        return -errno;
    }
    if (madvise(rb->host + offset, len, MADV_DONTNEED) < 0) {
        return -errno;
    }
    bitmap_clear_atomic(rb->vmm_written_bmap, offset >> TARGET_PAGE_BITS,
                        len >> TARGET_PAGE_BITS);
    return 0;
}

/*
 * Drops every range of @iov (inside @rb, checked by the caller) with one
 * process_madvise: the kernel flushes the TLB once for all of them, where
 * a madvise per range pays for a flush (IPIs, under nested virtualization
 * dear) each time. Kernels without MADV_DONTNEED there get a loop.
 */
static int ram_block_dontneed_many(struct iovec *iov, size_t n)
{
    static int pidfd = -2;
    size_t done = 0;

    if (pidfd == -2) {
        pidfd = syscall(SYS_pidfd_open, getpid(), 0);
    }
    while (pidfd >= 0 && done < n) {
        size_t batch = MIN(n - done, (size_t)IOV_MAX);
        ssize_t r = syscall(SYS_process_madvise, pidfd, iov + done, batch, MADV_DONTNEED, 0);
        uint64_t want = 0;

        for (size_t i = done; i < done + batch; i++) {
            want += iov[i].iov_len;
        }
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 || (uint64_t)r != want) {
            break;      /* not supported (or partial): the loop below does the rest */
        }
        done += batch;
    }
    for (; done < n; done++) {
        if (madvise(iov[done].iov_base, iov[done].iov_len, MADV_DONTNEED) < 0) {
            return -errno;
        }
    }
    return 0;
}

int ram_block_discard_ranges(RAMBlock *rb, const uint64_t *offset, const uint64_t *len,
                             size_t n)
{
    g_autofree struct iovec *iov = g_new(struct iovec, n);
    int ret;

    for (size_t i = 0; i < n; i++) {
        assert(QEMU_IS_ALIGNED(offset[i] | len[i], TARGET_PAGE_SIZE) &&
               offset[i] <= rb->used_length && len[i] <= rb->used_length - offset[i]);
        if (rb->fd >= 0 && len[i] &&
            fallocate(rb->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset[i], len[i]) < 0) {
            return -errno;
        }
        iov[i] = (struct iovec) { .iov_base = rb->host + offset[i], .iov_len = len[i] };
    }
    ret = ram_block_dontneed_many(iov, n);
    if (ret < 0) {
        return ret;
    }
    for (size_t i = 0; i < n; i++) {
        bitmap_clear_atomic(rb->vmm_written_bmap, offset[i] >> TARGET_PAGE_BITS,
                            len[i] >> TARGET_PAGE_BITS);
    }
    return 0;
}

RAMBlock *ram_block_find(const char *idstr)
{
    GPtrArray *b = ram_blocks();

    for (guint i = 0; i < b->len; i++) {
        RAMBlock *rb = g_ptr_array_index(b, i);
        if (!strcmp(rb->idstr, idstr)) {
            return rb;
        }
    }
    return NULL;
}

uint64_t ram_blocks_total_bytes(void)
{
    GPtrArray *b = ram_blocks();
    uint64_t total = 0;

    for (guint i = 0; i < b->len; i++) {
        total += ((RAMBlock *)g_ptr_array_index(b, i))->used_length;
    }
    return total;
}

static int ram_backend_open_fd(const RAMBackendOpts *opts, Error **errp)
{
    int fd;

    if (opts->kind == RAM_BACKEND_MEMFD) {
        fd = syscall(SYS_memfd_create, opts->id, MFD_CLOEXEC);
        if (fd < 0) {
            error_setg_errno(errp, errno, "failed to create memfd");
            return -1;
        }
    } else {
        struct stat st;
        struct statfs sfs;
        const char *path = opts->mem_path;

        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            g_autofree char *tmpl = g_strdup_printf("%s/qemu_back_mem.%s.XXXXXX", path, opts->id);
            fd = mkstemp(tmpl);
            if (fd >= 0) {
                unlink(tmpl);
            }
        } else {
            fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        }
        if (fd < 0) {
            error_setg_errno(errp, errno, "can't open backing store %s for guest RAM", path);
            return -1;
        }
        /*
         * Like hugetlb=on: KVM slots, dirty tracking and the snapshot's
         * write protection all work in 4 KiB pages here.
         */
        if (fstatfs(fd, &sfs) == 0 && sfs.f_type == HUGETLBFS_MAGIC) {
            error_setg(errp, "mem-path %s is on hugetlbfs: hugetlb memory is not supported",
                       path);
            close(fd);
            return -1;
        }
    }
    if (ftruncate(fd, opts->size) < 0) {
        error_setg_errno(errp, errno, "failed to resize memory backend '%s' to %" PRIu64 " bytes",
                         opts->id, opts->size);
        close(fd);
        return -1;
    }
    return fd;
}

static bool ram_block_prealloc(RAMBlock *rb, Error **errp)
{
    if (madvise(rb->host, rb->used_length, MADV_POPULATE_WRITE) == 0) {
        return true;
    }
    if (errno != EINVAL) {
        error_setg_errno(errp, errno, "preallocating memory for '%s' failed", rb->idstr);
        return false;
    }
    /* Kernel without MADV_POPULATE_WRITE: touch one byte per page. */
    for (uint64_t off = 0; off < rb->used_length; off += TARGET_PAGE_SIZE) {
        volatile uint8_t *p = rb->host + off;
        *p = *p;
    }
    return true;
}

/* Into ram_blocks() after every block at least as large (see memory.h for why). */
static void ram_block_insert(RAMBlock *rb)
{
    GPtrArray *b = ram_blocks();
    guint i = 0;

    while (i < b->len && ((RAMBlock *)g_ptr_array_index(b, i))->capacity >= rb->capacity) {
        i++;
    }
    g_ptr_array_insert(b, i, rb);
}

/*
 * -machine aux-ram-share: read by ram_block_create, set once by machine
 * configuration (main thread, before any block): a property of the machine
 * that every device's RAM follows, which no device is handed.
 */
static bool aux_ram_share;

void ram_set_aux_share(bool on)
{
    aux_ram_share = on;
}

/*
 * A live update's block: the old process's memory, which must be the size
 * this one expects (another -m, another vgamem_mb) or be refused before
 * anything maps it.
 */
static bool ram_block_adopt_fd(RAMBlock *rb, const RAMBackendOpts *opts, int fd, Error **errp)
{
    struct stat st;

    if (fstat(fd, &st) < 0) {
        error_setg_errno(errp, errno, "cpr: the fd of RAM block '%s'", opts->id);
        close(fd);
        return false;
    }
    if ((uint64_t)st.st_size != opts->size) {
        error_setg(errp, "cpr: RAM block '%s' is %" PRIu64 " bytes in the old process, but "
                   "%" PRIu64 " here", opts->id, (uint64_t)st.st_size, opts->size);
        close(fd);
        return false;
    }
    rb->fd = fd;
    rb->preserved = true;
    return true;
}

RAMBlock *ram_block_create(const RAMBackendOpts *in, Error **errp)
{
    g_autofree RAMBlock *rb = g_new0(RAMBlock, 1);
    RAMBackendOpts o = *in, *opts = &o;
    int flags = MAP_NORESERVE;
    int cpr_fd;
    void *host;

    if (!opts->size || opts->size % TARGET_PAGE_SIZE) {
        error_setg(errp, "memory size of '%s' must be a non-zero multiple of %llu",
                   opts->id, (unsigned long long)TARGET_PAGE_SIZE);
        return NULL;
    }
    if (strlen(opts->id) >= sizeof(rb->idstr)) {
        error_setg(errp, "RAM block name '%s' is too long", opts->id);
        return NULL;
    }
    if (ram_block_find(opts->id)) {
        error_setg(errp, "RAM block '%s' already exists", opts->id);
        return NULL;
    }
    if (opts->aux && aux_ram_share) {
        o.kind = RAM_BACKEND_MEMFD;
        o.share = true;
    }
    rb->fd = -1;
    cpr_fd = cpr_fd_take(opts->id);
    if (cpr_fd >= 0) {
        if (!ram_block_adopt_fd(rb, opts, cpr_fd, errp)) {
            return NULL;
        }
        /* It was shared memory there (ram_block_fd_shared), so it is here. */
        o.share = true;
        o.prealloc = false;     /* what the guest has is there; holes stay holes */
    } else if (opts->kind != RAM_BACKEND_ANON) {
        rb->fd = ram_backend_open_fd(opts, errp);
        if (rb->fd < 0) {
            return NULL;
        }
    }
    rb->shared = opts->share || opts->kind == RAM_BACKEND_MEMFD;
    flags |= rb->shared ? MAP_SHARED : MAP_PRIVATE;
    if (rb->fd < 0) {
        flags |= MAP_ANONYMOUS;
    }
    host = mmap(NULL, opts->size, PROT_READ | PROT_WRITE, flags, rb->fd, 0);
    if (host == MAP_FAILED) {
        error_setg_errno(errp, errno, "cannot set up guest memory '%s'", opts->id);
        if (rb->fd >= 0) {
            close(rb->fd);
        }
        return NULL;
    }
    g_strlcpy(rb->idstr, opts->id, sizeof(rb->idstr));
    rb->host = host;
    rb->used_length = opts->size;
    rb->kind = opts->kind;
    /* Guests write RAM sequentially in big runs; THP cuts shadow-paging faults. */
    madvise(host, opts->size, MADV_HUGEPAGE);
    madvise(host, opts->size, MADV_DONTDUMP);
    if (opts->prealloc && !ram_block_prealloc(rb, errp)) {
        munmap(host, opts->size);
        if (rb->fd >= 0) {
            close(rb->fd);
        }
        return NULL;
    }
    rb->vmm_dirty_bmap = bitmap_new(rb->used_length >> TARGET_PAGE_BITS);
    rb->vmm_written_bmap = bitmap_new(rb->used_length >> TARGET_PAGE_BITS);
    /* A file, or the old process's memory, may hold data: no page is known to be zero. */
    if (opts->kind == RAM_BACKEND_FILE || rb->preserved) {
        bitmap_fill(rb->vmm_written_bmap, rb->used_length >> TARGET_PAGE_BITS);
    }
    rb->capacity = MAX(opts->capacity, opts->size);
    ram_block_insert(rb);
    return g_steal_pointer(&rb);
}

void ram_block_destroy(RAMBlock *rb)
{
    g_ptr_array_remove(ram_blocks(), rb);
    munmap(rb->host, rb->used_length);
    if (rb->fd >= 0) {
        close(rb->fd);
    }
    g_free(rb->vmm_dirty_bmap);
    g_free(rb->vmm_written_bmap);
    g_free(rb);
}

static gint range_cmp(gconstpointer a, gconstpointer b)
{
    const GuestRAMRange *ra = a, *rb = b;

    return ra->gpa < rb->gpa ? -1 : ra->gpa > rb->gpa;
}

bool guest_ram_map(RAMBlock *rb, uint64_t offset, hwaddr gpa, uint64_t size, Error **errp)
{
    GuestRAMRange r = { .gpa = gpa, .size = size, .rb = rb, .offset = offset };

    if (!ranges) {
        ranges = g_array_new(FALSE, FALSE, sizeof(GuestRAMRange));
    }
    if (offset > rb->used_length || size > rb->used_length - offset || !size ||
        gpa % TARGET_PAGE_SIZE || size % TARGET_PAGE_SIZE || gpa + size < gpa) {
        error_setg(errp, "invalid mapping of '%s' at 0x%" HWADDR_PRIx, rb->idstr, gpa);
        return false;
    }
    for (guint i = 0; i < ranges->len; i++) {
        GuestRAMRange *o = &g_array_index(ranges, GuestRAMRange, i);
        if (gpa < o->gpa + o->size && o->gpa < gpa + size) {
            error_setg(errp, "RAM at 0x%" HWADDR_PRIx " overlaps existing RAM", gpa);
            return false;
        }
    }
    g_array_append_val(ranges, r);
    g_array_sort(ranges, range_cmp);
    return true;
}

const GuestRAMRange *guest_ram_ranges(size_t *count)
{
    *count = ranges ? ranges->len : 0;
    return ranges ? (const GuestRAMRange *)ranges->data : NULL;
}

const GuestRAMRange *guest_ram_lookup(hwaddr gpa)
{
    size_t n;
    const GuestRAMRange *r = guest_ram_ranges(&n);
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (gpa < r[mid].gpa) {
            hi = mid;
        } else if (gpa - r[mid].gpa >= r[mid].size) {
            lo = mid + 1;
        } else {
            return &r[mid];
        }
    }
    return NULL;
}

void *guest_phys_to_host(hwaddr gpa, uint64_t len)
{
    const GuestRAMRange *r = guest_ram_lookup(gpa);

    if (!r || len > r->size - (gpa - r->gpa)) {
        return NULL;
    }
    return r->rb->host + r->offset + (gpa - r->gpa);
}

bool guest_phys_rw(hwaddr gpa, void *buf, uint64_t len, bool is_write)
{
    uint64_t done;

    /* Check the whole span first so a failed access copies nothing. */
    for (done = 0; done < len;) {
        const GuestRAMRange *r = guest_ram_lookup(gpa + done);
        if (!r || gpa + done < gpa) {
            return false;
        }
        done += MIN(len - done, r->size - (gpa + done - r->gpa));
    }
    for (done = 0; done < len;) {
        const GuestRAMRange *r = guest_ram_lookup(gpa + done);
        uint64_t in = gpa + done - r->gpa;
        uint64_t n = MIN(len - done, r->size - in);
        uint8_t *host = r->rb->host + r->offset + in;

        if (is_write) {
            memcpy(host, (uint8_t *)buf + done, n);
            ram_block_mark_dirty(r->rb, r->offset + in, n);
            bitmap_set(r->rb->vmm_written_bmap, (r->offset + in) >> TARGET_PAGE_BITS,
                       ((r->offset + in + n - 1) >> TARGET_PAGE_BITS) -
                       ((r->offset + in) >> TARGET_PAGE_BITS) + 1);
        } else {
            memcpy((uint8_t *)buf + done, host, n);
        }
        done += n;
    }
    return true;
}

void ram_vmm_dirty_log_start(void)
{
    __atomic_store_n(&vmm_dirty_logging, 1, __ATOMIC_SEQ_CST);
}

void ram_vmm_dirty_log_stop(void)
{
    __atomic_store_n(&vmm_dirty_logging, 0, __ATOMIC_SEQ_CST);
}

void ram_block_mark_dirty(RAMBlock *rb, uint64_t offset, uint64_t len)
{
    uint64_t first, last;

    if (!len || !__atomic_load_n(&vmm_dirty_logging, __ATOMIC_ACQUIRE)) {
        return;
    }
    first = offset >> TARGET_PAGE_BITS;
    last = (offset + len - 1) >> TARGET_PAGE_BITS;
    bitmap_set_atomic(rb->vmm_dirty_bmap, first, last - first + 1);
}
