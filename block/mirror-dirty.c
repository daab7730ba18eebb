/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mirror's dirty bitmap (block/mirror-int.h): what the guest wrote
 * (the write hook), what the disk holds at the start (the scan), and the
 * runs the copies take. The rules that make it lose nothing are at the top
 * of mirror.c; the ones kept here are 1 to 3.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "qemu/bitmap.h"
#include "mirror-int.h"
#include "block-int.h"

void mirror_mark_dirty_locked(MirrorState *s, uint64_t offset, uint64_t bytes)
{
    uint64_t first, last, before = s->dirty_count;

    if (!bytes || offset >= s->len) {
        return;
    }
    bytes = MIN(bytes, s->len - offset);
    first = offset >> s->gran_bits;
    last = (offset + bytes - 1) >> s->gran_bits;
    for (uint64_t b = first; b <= last; b++) {
        /* One word at a time when a write spans many chunks. */
        if (b % BITS_PER_LONG == 0 && last - b + 1 >= BITS_PER_LONG) {
            unsigned long old = s->dirty[BIT_WORD(b)];

            s->dirty_count += BITS_PER_LONG - __builtin_popcountl(old);
            s->dirty[BIT_WORD(b)] = ~0UL;
            b += BITS_PER_LONG - 1;
        } else if (!test_and_set_bit(b, s->dirty)) {
            s->dirty_count++;
        }
    }
    if (s->dirty_count != before) {
        g_cond_broadcast(&s->work);
    }
}

void mirror_mark_dirty(MirrorState *s, uint64_t offset, uint64_t bytes)
{
    tsan_g_mutex_lock(&s->lock);
    mirror_mark_dirty_locked(s, offset, bytes);
    tsan_g_mutex_unlock(&s->lock);
}

/* The in-flight op that holds chunk @b, or NULL (lock). */
static MirrorOp *op_holding_locked(MirrorState *s, uint64_t b)
{
    for (unsigned i = 0; i <= s->nworkers; i++) {
        MirrorOp *op = &s->ops[i];

        if (op->end && (op->start >> s->gran_bits) <= b &&
            b <= ((op->end - 1) >> s->gran_bits)) {
            return op;
        }
    }
    return NULL;
}

/* The first chunk after @b that an in-flight op holds, or @limit (lock). */
static uint64_t next_held_locked(MirrorState *s, uint64_t b, uint64_t limit)
{
    for (unsigned i = 0; i <= s->nworkers; i++) {
        uint64_t first = s->ops[i].start >> s->gran_bits;

        if (s->ops[i].end && first > b && first < limit) {
            limit = first;
        }
    }
    return limit;
}

/*
 * The next run of dirty chunks from the cursor (wrapping), at most
 * s->op_max bytes, that no copy in flight holds: its bits cleared (rule 2:
 * before the read) and it registered in ops[@slot] (rule 3: before the
 * read too). Two copies of one chunk are never in flight at once: the
 * later one's data could land first and the older one's overwrite it.
 */
bool mirror_take_run_locked(MirrorState *s, unsigned slot, uint64_t *offset, uint64_t *bytes)
{
    uint64_t max_bits = s->op_max >> s->gran_bits;
    uint64_t start = s->cursor, pos = start, b, end;
    bool wrapped = false;
    MirrorOp *held;

    if (!s->dirty_count) {
        return false;
    }
    for (;;) {
        b = find_next_bit(s->dirty, s->nbits, pos);
        if (wrapped && b >= start) {
            return false;               /* every dirty chunk is being copied */
        }
        if (b >= s->nbits) {
            if (wrapped) {
                return false;
            }
            wrapped = true;
            pos = 0;
            continue;
        }
        held = op_holding_locked(s, b);
        if (!held) {
            break;
        }
        pos = ((held->end - 1) >> s->gran_bits) + 1;
    }
    end = next_held_locked(s, b, MIN(s->nbits, b + max_bits));
    end = find_next_zero_bit(s->dirty, end, b);
    bitmap_clear(s->dirty, b, end - b);
    s->dirty_count -= end - b;
    s->cursor = end;
    *offset = b << s->gran_bits;
    *bytes = MIN(end << s->gran_bits, s->len) - *offset;
    s->ops[slot] = (MirrorOp){ .start = *offset, .end = *offset + *bytes };
    s->in_flight++;
    return true;
}

void mirror_op_end(MirrorState *s, unsigned slot)
{
    tsan_g_mutex_lock(&s->lock);
    s->ops[slot] = (MirrorOp){ 0 };
    s->in_flight--;
    g_cond_broadcast(&s->op_done);
    g_cond_broadcast(&s->work);         /* a chunk it held may be dirty again */
    tsan_g_mutex_unlock(&s->lock);
}

uint64_t mirror_dirty_bytes(MirrorState *s)
{
    uint64_t n;

    tsan_g_mutex_lock(&s->lock);
    n = s->dirty_count << s->gran_bits;
    tsan_g_mutex_unlock(&s->lock);
    return MIN(n, s->len);
}

static bool overlaps_op_locked(MirrorState *s, uint64_t offset, uint64_t bytes)
{
    for (unsigned i = 0; i <= s->nworkers; i++) {
        if (s->ops[i].end && offset < s->ops[i].end && s->ops[i].start < offset + bytes) {
            return true;
        }
    }
    return false;
}

/* ---- The guest's writes (their threads, the backend's hook lock held for reading) ---- */

void mirror_write_hook(void *opaque, BlkHookOp op, uint64_t offset, uint64_t bytes,
                       const struct iovec *iov, int niov, int ret)
{
    MirrorState *s = opaque;
    int r;

    tsan_g_mutex_lock(&s->lock);
    if (s->stopped) {
        tsan_g_mutex_unlock(&s->lock);
        return;
    }
    if (s->o.copy_mode != MIRROR_COPY_MODE_WRITE_BLOCKING || ret < 0 ||
        op == BLK_HOOK_DISCARD) {
        /* A failed write may have changed the source partly: copy it again too. */
        mirror_mark_dirty_locked(s, offset, bytes);
        tsan_g_mutex_unlock(&s->lock);
        return;
    }
    /* Rule 3: no copy that may have read the old bytes is in flight. */
    while (overlaps_op_locked(s, offset, bytes)) {
        tsan_g_cond_wait(&s->op_done, &s->lock);
    }
    tsan_g_mutex_unlock(&s->lock);
    r = op == BLK_HOOK_WRITE ? bdrv_pwritev(s->target, offset, bytes, iov, niov, 0)
                             : bdrv_pwrite_zeroes(s->target, offset, bytes, 0);
    if (r < 0) {
        /* The background copy meets the target's error and applies the policy. */
        mirror_mark_dirty(s, offset, bytes);
    }
}

/* ---- The initial bitmap ---- */

/*
 * Whether [@offset, +*pnum) of @bs's chain must be copied: it reads as
 * data in some layer (@top_only: @bs's own layer decides it, with data,
 * or with zeroes that hide a backing image). A range that reads as zeroes
 * with sync=full is left out: the target reads zeroes there (a new image;
 * see docs/devel/mirror.md).
 */
static int range_needs_copy(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                            bool top_only, uint64_t *pnum)
{
    unsigned st;
    int r = bdrv_block_status(bs, offset, bytes, pnum, &st);

    if (r < 0) {
        return r;
    }
    if (st & BDRV_BLOCK_ALLOCATED) {
        return (st & BDRV_BLOCK_ZERO) ? top_only && bs->backing : 1;
    }
    if (top_only || !bs->backing) {
        return 0;
    }
    if (offset >= (uint64_t)MAX(bdrv_getlength(bs->backing), 0)) {
        return 0;                       /* past a shorter backing image: zeroes */
    }
    *pnum = MIN(*pnum, (uint64_t)bdrv_getlength(bs->backing) - offset);
    return range_needs_copy(bs->backing, offset, *pnum, false, pnum);
}

int mirror_scan(MirrorState *s, Error **errp)
{
    bool top_only = s->o.sync == MIRROR_SYNC_MODE_TOP;
    uint64_t offset = 0, pnum;

    if (s->o.sync == MIRROR_SYNC_MODE_NONE) {
        return 0;
    }
    while (offset < s->len) {
        int r = range_needs_copy(s->source, offset, s->len - offset, top_only, &pnum);

        if (r < 0) {
            error_setg_errno(errp, -r, "Could not read the allocation of '%s'",
                             s->source->node_name);
            return r;
        }
        if (job_is_force_cancelled(s->job)) {
            return -ECANCELED;
        }
        if (r) {
            mirror_mark_dirty(s, offset, pnum);
        }
        offset += MAX(pnum, 1);
    }
    return 0;
}
