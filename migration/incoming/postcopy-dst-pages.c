/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The postcopy destination's page side: the row of the fault server
 * "mig/pc-fault" (uffd-server.h), which turns missing-page faults into
 * requests; atomic placement of runs of pages (mig/dst and the preempt
 * channel's "mig/pc-preempt"); and the request latency (fault read to
 * page placed). No thread here takes the BQL: a BQL holder may wait on a
 * page only these threads bring in.
 */
#include "qemu/osdep.h"
#include "qemu/tsan.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "postcopy-blocktime.h"
#include "postcopy-dst-int.h"
#include "postcopy-rp-dst.h"
#include "migration/transport/ram-codec.h"
#include "migration/trace.h"

PostcopyDstBlock *postcopy_dst_block(PostcopyDst *pd, RAMBlock *rb)
{
    for (int i = 0; i < pd->nblocks; i++) {
        if (pd->blocks[i].rb == rb) {
            return &pd->blocks[i];
        }
    }
    return NULL;
}

/* ---- placement and the fault thread ---- */

static void postcopy_dst_request_done(PostcopyDst *pd, void *host)
{
    gpointer t0;

    tsan_g_mutex_lock(&pd->lat_lock);
    if (g_hash_table_steal_extended(pd->pending, host, NULL, &t0)) {
        latency_hist_record_ns(&pd->lat, get_clock_ns() - GPOINTER_TO_SIZE(t0));
    }
    tsan_g_mutex_unlock(&pd->lat_lock);
}

/*
 * RAMPageReader.place (mig/dst and mig/pc-preempt): @n pages from @first
 * in as few calls as the kernel allows. A page already there (asked for
 * twice, or on both channels) stays as it is.
 */
bool postcopy_dst_place(void *opaque, RAMBlock *rb, uint64_t first, unsigned n,
                        const uint8_t *data, Error **errp)
{
    PostcopyDst *pd = opaque;
    PostcopyDstBlock *b = postcopy_dst_block(pd, rb);
    uint8_t *host = rb->host + (first << TARGET_PAGE_BITS);
    int ret;

    assert(b && first + n <= rb->used_length >> TARGET_PAGE_BITS);
    ret = uffd_place_pages(pd->uffd, host, data, n, TARGET_PAGE_SIZE);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "postcopy: placing %u pages at 0x%" PRIx64 " of %s failed",
                         n, first << TARGET_PAGE_BITS, rb->idstr);
        return false;
    }
    bitmap_set_atomic(b->received, first, n);
    bitmap_set_atomic(rb->vmm_written_bmap, first, n);
    __atomic_fetch_add(&pd->pages_placed, ret, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n; i++) {
        if (test_bit_atomic(first + i, b->requested)) {
            postcopy_dst_request_done(pd, host + i * TARGET_PAGE_SIZE);
        }
        if (postcopy_blocktime_on()) {
            postcopy_blocktime_placed((uintptr_t)host + i * TARGET_PAGE_SIZE);
        }
    }
    return true;
}

/* Pages the source sent on the preempt channel, until it closes or is shut down. */
static void *postcopy_dst_preempt_thread(void *opaque)
{
    PostcopyDst *pd = opaque;
    RAMPageReader r = { .place = postcopy_dst_place, .place_opaque = pd };
    Error *err = NULL;

    /* The stream checked the block list; this channel carries pages only. */
    r.have_sizes = true;
    while (ram_load_records(&r, pd->preempt, &err) == 0) {
        /* EOS: the channel's opening record, or a pause in it. */
    }
    trace_postcopy_preempt_end(error_get_pretty(err));
    error_free(err);
    ram_reader_reset(&r);
    return NULL;
}

/* preempt_lock held: starts the preempt thread once both the channel and ADVISE are there. */
void postcopy_dst_maybe_start_preempt(PostcopyDst *pd)
{
    int ret;

    if (!pd->preempt || pd->preempt_running || postcopy_dst_phase(pd) < PC_DST_ADVISED) {
        return;
    }
    ret = qemu_thread_create(&pd->preempt_thread, "mig/pc-preempt", postcopy_dst_preempt_thread,
                             pd);
    if (ret < 0) {
        /* The pages it would bring still come on the stream, later. */
        error_report("postcopy: cannot create the preempt channel thread: %s", g_strerror(-ret));
        return;
    }
    pd->preempt_running = true;
}

/* preempt_lock held: end the thread and close its channel. */
static void postcopy_dst_stop_preempt_locked(PostcopyDst *pd)
{
    if (pd->preempt) {
        qemu_file_shutdown(pd->preempt);
    }
    if (pd->preempt_running) {
        qemu_thread_join(&pd->preempt_thread);
        pd->preempt_running = false;
    }
    if (pd->preempt) {
        qemu_fclose(pd->preempt);
        pd->preempt = NULL;
    }
}

void postcopy_dst_preempt_attach(PostcopyDst *pd, QEMUFile *f)
{
    tsan_g_mutex_lock(&pd->preempt_lock);
    /* A recovery's new channel replaces the broken one. */
    postcopy_dst_stop_preempt_locked(pd);
    pd->preempt = f;
    postcopy_dst_maybe_start_preempt(pd);
    tsan_g_mutex_unlock(&pd->preempt_lock);
}

void postcopy_dst_stop_preempt(PostcopyDst *pd)
{
    tsan_g_mutex_lock(&pd->preempt_lock);
    postcopy_dst_stop_preempt_locked(pd);
    tsan_g_mutex_unlock(&pd->preempt_lock);
}

/*
 * mig/pc-fault, the row's fault hook: one missing-page fault becomes a
 * request to the source (DEFERRED: the placement, in mig/dst or
 * mig/pc-preempt, wakes the vCPU and records the request's latency).
 */
static UffdFaultOutcome postcopy_dst_fault(void *opaque, const UffdFault *f)
{
    PostcopyDst *pd = opaque;
    uint64_t page_addr = f->addr & ~(uint64_t)(TARGET_PAGE_SIZE - 1);

    /* A write-protect fault is not ours: nothing here protects pages. */
    if (f->flags & UFFD_PAGEFAULT_FLAG_WP) {
        return UFFD_FAULT_IGNORED;
    }
    for (int i = 0; i < pd->nblocks; i++) {
        PostcopyDstBlock *b = &pd->blocks[i];
        uint64_t host = (uintptr_t)b->rb->host;
        uint64_t page;

        if (page_addr < host || page_addr - host >= b->rb->used_length) {
            continue;
        }
        page = (page_addr - host) >> TARGET_PAGE_BITS;
        if (f->tid && postcopy_blocktime_on()) {
            postcopy_blocktime_fault(f->tid, page_addr, f->t_read);
            /* Placed before the fault was read: that placement could not end the wait. */
            if (test_bit_atomic(page, b->received)) {
                postcopy_blocktime_placed(page_addr);
            }
        }
        /* Placed meanwhile (the placement woke the thread), or already asked for. */
        if (test_bit_atomic(page, b->received) || test_and_set_bit_atomic(page, b->requested)) {
            return UFFD_FAULT_IGNORED;
        }
        tsan_g_mutex_lock(&pd->lat_lock);
        g_hash_table_insert(pd->pending, (gpointer)(uintptr_t)page_addr,
                            GSIZE_TO_POINTER((gsize)f->t_read));
        tsan_g_mutex_unlock(&pd->lat_lock);
        rp_dst_request_page(b->rb, page << TARGET_PAGE_BITS);
        return UFFD_FAULT_DEFERRED;
    }
    /* Only registered ranges fault here: nothing else can reach this. */
    error_report("postcopy: a fault at 0x%" PRIx64 " outside guest RAM", f->addr);
    return UFFD_FAULT_FAILED;
}

const UffdServerOps postcopy_dst_fault_ops = {
    .what = "postcopy",
    .fault = postcopy_dst_fault,
};

/* mig/dst: ask again for every page a vCPU still waits on; the source forgot them. */
void postcopy_dst_rerequest(PostcopyDst *pd)
{
    g_autoptr(GList) keys = NULL;

    tsan_g_mutex_lock(&pd->lat_lock);
    keys = g_hash_table_get_keys(pd->pending);
    tsan_g_mutex_unlock(&pd->lat_lock);
    for (GList *l = keys; l; l = l->next) {
        uint64_t addr = (uintptr_t)l->data;

        for (int i = 0; i < pd->nblocks; i++) {
            uint64_t host = (uintptr_t)pd->blocks[i].rb->host;

            if (addr >= host && addr - host < pd->blocks[i].rb->used_length) {
                rp_dst_request_page(pd->blocks[i].rb, addr - host);
                break;
            }
        }
    }
}
