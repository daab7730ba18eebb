/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Who logs and who tracks. KVM_MEM_LOG_DIRTY_PAGES is per slot and
 * reference-counted (bitmap clients hold a reference on each slot they
 * track, the dirty ring's counters on every slot); the clients of the dirty
 * log (include/system/kvm-dirty-client.h) each keep, per slot they track,
 * a bitmap of the bits handed to them and not taken yet.
 *
 * The invariant. For every client C, every slot S it tracks and every
 * page P of S: a guest write to P made after C started, and after C last
 * read P, is at every moment in at least one of
 *
 *   (a) C's untaken bitmap for S (below: handed over, not taken);
 *   (b) what C took and has not read yet (the client's own bitmap);
 *   (c) KVM: P's bit in KVM's log (get-log, clear-log: the next GET
 *       returns it), or (dirty ring) an entry for P not harvested yet, or
 *       P's bit in S's harvest_bmap.
 *
 * where "C reads P" means: C reads the page's contents after a clear by C
 * that covered P (or, in modes without clears, after the take).
 *
 * How each step keeps it:
 *
 * - A sync by client A, slot S: the mode moves KVM's bits into
 *   slot->dirty_bmap (get-log: the GET clears and re-protects them in
 *   KVM; ring: the harvest re-protected them, harvest_bmap is emptied), so
 *   under the same lock they are ORed into the untaken bitmap of every
 *   other client tracking S, and handed to A's take(): (c) -> (a) or (b).
 *   clear-log's GET changes nothing in KVM. Bits one sync read and nobody
 *   cleared are read again by the next GET: a second client's sync cannot
 *   lose them.
 *
 * - A clear by client A of [first, first+n) of S (clear-log): KVM resets
 *   and re-protects only the bits of slot->dirty_bmap in the range, i.e.
 *   bits some GET read and nobody re-armed since. For another client B, a
 *   write to such a page P after B last read P is, after the clear, in no
 *   part of KVM; the danger:
 *
 *       B takes P (a sync)   B reads P   guest writes P   A clears P   B never sees it
 *
 *   so before the ioctl the same bits are ORed into the untaken bitmap of
 *   every other client tracking S (the re-mark rule): B sees P once more.
 *   Spurious at worst, and bounded: once per clear of another client, and
 *   only for bits a GET read since the last clear. For A itself the bits
 *   are in (a) or (b): every GET since A's first sync of S handed them to
 *   A, which is why a client may clear a slot only once its own sync read
 *   it, and a client reads what it took only after a clear covering it.
 *   A clear KVM refused re-armed nothing; the range's bits are handed to
 *   A too, so a page A reads anyway (the migration sends it) comes back.
 *
 * - A client starting: its untaken bitmaps are empty. A write after its
 *   start lands in KVM (a protected page gets its bit or ring entry; an
 *   unprotected one already has one, which the next read hands to every
 *   client tracking the slot by then, the new one included). What came
 *   before the start is the client's business: its first pass treats every
 *   page as dirty (the migration sends all, a display draws all).
 *
 * - A deferred client arming a slot: the same as a start, for that slot
 *   alone, at the arm. Before it, the client's syncs skip the slot, and the
 *   client reads no page of it (its rule): "after C started" above reads
 *   "after C armed S" for such a client. Bits handed to it before the arm
 *   are spurious at worst.
 *
 * - A client stopping: the others' bitmaps are untouched and the slots it
 *   shared keep logging.
 *
 * Locks, outermost first: log_lock (references, slot flags, starting and
 * stopping clients), clients_lock (every client's untaken bitmaps, each
 * slot's dirty_bmap, the GET and CLEAR ioctls), then kvm-dirty-ring.c's
 * ring lock. Clients start under the BQL (the migration's in its setup on
 * mig/src, calc-dirty-rate's in the command) and stop on the main thread
 * (the migration's cleanup) or the dirtyrate thread; log_lock orders them
 * whatever the thread. Syncs run on mig/src (migration), the main loop (a
 * display) and the dirtyrate thread; the rings are also harvested by vCPU
 * threads, kvm-reaper and dirtylimit, which take only the ring lock.
 * clients_lock is taken per slot, so a display's sync waits for one slot
 * of the migration's at most.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "kvm-dirty-log.h"
#include "kvm-dirty-ring.h"

static GMutex log_lock;
static int log_slots;           /* log_lock: slots with log_refs > 0 */
static GMutex clients_lock;

/* ---- Slot logging, reference-counted per slot ---- */

static bool kvm_slot_log_ref_locked(KVMState *s, KVMSlot *slot, Error **errp)
{
    bool ring = kvm_dirty_ring_enabled(s);
    int ret;

    if (slot->log_refs++) {
        return true;
    }
    /* Count bitmaps before the first entry of a logging slot can be harvested. */
    if (ring && !log_slots) {
        kvm_dirty_ring_log_start(s);
    }
    ret = kvm_slot_set_flags(s, slot, slot->flags | KVM_MEM_LOG_DIRTY_PAGES);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "enabling dirty logging on KVM slot %d failed",
                         (int)(slot - s->slots));
        slot->log_refs--;
        if (ring && !log_slots) {
            kvm_dirty_ring_log_stop(s);
        }
        return false;
    }
    if (!log_slots++ && ring) {
        kvm_dirty_reaper_start(s);
    }
    return true;
}

static void kvm_slot_log_unref_locked(KVMState *s, KVMSlot *slot)
{
    bool ring = kvm_dirty_ring_enabled(s);

    assert(slot->log_refs > 0);
    if (--slot->log_refs) {
        return;
    }
    if (ring && log_slots == 1) {
        kvm_dirty_reaper_stop();
    }
    if (slot->flags & KVM_MEM_LOG_DIRTY_PAGES) {
        kvm_slot_set_flags(s, slot, slot->flags & ~KVM_MEM_LOG_DIRTY_PAGES);
    }
    if (!--log_slots && ring) {
        kvm_dirty_ring_log_stop(s);
    }
}

bool kvm_dirty_ring_count_start(KVMState *s, Error **errp)
{
    if (!kvm_dirty_ring_enabled(s)) {
        error_setg(errp, "the KVM dirty ring is not enabled (-accel kvm,dirty-ring-size=N)");
        return false;
    }
    g_mutex_lock(&log_lock);
    for (int i = 0; i < s->nr_slots; i++) {
        if (!kvm_slot_log_ref_locked(s, &s->slots[i], errp)) {
            while (--i >= 0) {
                kvm_slot_log_unref_locked(s, &s->slots[i]);
            }
            g_mutex_unlock(&log_lock);
            return false;
        }
    }
    g_mutex_unlock(&log_lock);
    return true;
}

void kvm_dirty_ring_count_stop(KVMState *s)
{
    g_mutex_lock(&log_lock);
    for (int i = 0; i < s->nr_slots; i++) {
        kvm_slot_log_unref_locked(s, &s->slots[i]);
    }
    g_mutex_unlock(&log_lock);
}

/* ---- Clients ---- */

/*
 * dst |= src over the bits [first, first+n), word by word. Returns true if
 * src had a bit set there.
 */
static bool bitmap_or_range(unsigned long *dst, const unsigned long *src, uint64_t first,
                            uint64_t n)
{
    uint64_t w = first / BITS_PER_LONG, last = (first + n - 1) / BITS_PER_LONG;
    unsigned long any = 0;

    for (; w <= last; w++) {
        unsigned long m = ~0UL;

        if (w == first / BITS_PER_LONG) {
            m &= BITMAP_FIRST_WORD_MASK(first);
        }
        if (w == last) {
            m &= BITMAP_LAST_WORD_MASK(first + n);
        }
        any |= src[w] & m;
        dst[w] |= src[w] & m;
    }
    return any != 0;
}

/*
 * clients_lock held. Hands the bits of slot @i's dirty_bmap in [first,
 * first+n) to every client tracking the slot but @skip.
 */
static void kvm_dirty_hand_over_locked(KVMState *s, const KVMDirtyClient *skip, int i,
                                       uint64_t first, uint64_t n)
{
    const unsigned long *bits = s->slots[i].dirty_bmap;

    for (guint k = 0; k < s->dirty_clients->len; k++) {
        KVMDirtyClient *o = g_ptr_array_index(s->dirty_clients, k);
        KVMDirtyClientSlot *os = &o->slots[i];

        if (o != skip && os->untaken && bitmap_or_range(os->untaken, bits, first, n)) {
            os->pending = true;
        }
    }
}

/* log_lock held. Takes @c off the slots' client lists (and the list). */
static void kvm_dirty_client_detach_locked(KVMDirtyClient *c)
{
    KVMState *s = c->s;

    g_mutex_lock(&clients_lock);
    g_ptr_array_remove(s->dirty_clients, c);
    for (int i = 0; i < s->nr_slots; i++) {
        if (c->slots[i].untaken && !--s->slots[i].nclients) {
            kvm_dirty_log_track_slot(s, &s->slots[i], false);
        }
    }
    if (!s->dirty_clients->len) {
        g_clear_pointer(&s->dirty_clients, g_ptr_array_unref);
    }
    g_mutex_unlock(&clients_lock);
}

static void kvm_dirty_client_free(KVMDirtyClient *c)
{
    for (int i = 0; i < c->s->nr_slots; i++) {
        g_free(c->slots[i].untaken);
    }
    g_free(c->slots);
    g_free(c);
}

static KVMDirtyClient *kvm_dirty_client_start_as(KVMState *s, const char *name,
                                                 const RAMBlock *rb, bool deferred, Error **errp)
{
    KVMDirtyClient *c = g_new0(KVMDirtyClient, 1);

    c->s = s;
    c->name = name;
    c->slots = g_new0(KVMDirtyClientSlot, s->nr_slots);
    for (int i = 0; i < s->nr_slots; i++) {
        if (!rb || s->slots[i].rb == rb) {
            c->slots[i].untaken = bitmap_new(s->slots[i].npages);
            c->ntracked++;
        }
    }
    if (rb && !c->ntracked) {
        error_setg(errp, "%s: no KVM slot maps %s", name, rb->idstr);
        kvm_dirty_client_free(c);
        return NULL;
    }
    g_mutex_lock(&log_lock);
    /* Bitmaps first: in ring mode, entries harvested once the slot logs must find them. */
    g_mutex_lock(&clients_lock);
    if (!s->dirty_clients) {
        s->dirty_clients = g_ptr_array_new();
    }
    for (int i = 0; i < s->nr_slots; i++) {
        if (c->slots[i].untaken && !s->slots[i].nclients++) {
            kvm_dirty_log_track_slot(s, &s->slots[i], true);
        }
    }
    g_ptr_array_add(s->dirty_clients, c);
    g_mutex_unlock(&clients_lock);
    for (int i = 0; !deferred && i < s->nr_slots; i++) {
        if (c->slots[i].untaken && !kvm_slot_log_ref_locked(s, &s->slots[i], errp)) {
            /* Only the references this start took: other clients' slots keep logging. */
            while (--i >= 0) {
                if (c->slots[i].untaken) {
                    kvm_slot_log_unref_locked(s, &s->slots[i]);
                    c->slots[i].armed = false;
                }
            }
            kvm_dirty_client_detach_locked(c);
            g_mutex_unlock(&log_lock);
            kvm_dirty_client_free(c);
            return NULL;
        }
        c->slots[i].armed = c->slots[i].untaken != NULL;
    }
    g_mutex_unlock(&log_lock);
    return c;
}

KVMDirtyClient *kvm_dirty_client_start(KVMState *s, const char *name, const RAMBlock *rb,
                                       Error **errp)
{
    return kvm_dirty_client_start_as(s, name, rb, false, errp);
}

KVMDirtyClient *kvm_dirty_client_start_deferred(KVMState *s, const char *name,
                                                const RAMBlock *rb, Error **errp)
{
    return kvm_dirty_client_start_as(s, name, rb, true, errp);
}

int kvm_dirty_client_arm(KVMDirtyClient *c, KVMSlot *slot)
{
    KVMState *s = c->s;
    ptrdiff_t i = slot - s->slots;
    Error *err = NULL;
    int ret = 0;

    if (i < 0 || i >= s->nr_slots || !c->slots[i].untaken) {
        return -EINVAL;
    }
    if (c->slots[i].armed) {
        return 0;
    }
    g_mutex_lock(&log_lock);
    if (kvm_slot_log_ref_locked(s, slot, &err)) {
        c->slots[i].armed = true;
    } else {
        ret = -EIO;
        error_free(err);
    }
    g_mutex_unlock(&log_lock);
    return ret;
}

void kvm_dirty_client_stop(KVMDirtyClient *c)
{
    KVMState *s;

    if (!c) {
        return;
    }
    s = c->s;
    g_mutex_lock(&log_lock);
    kvm_dirty_client_detach_locked(c);
    for (int i = 0; i < s->nr_slots; i++) {
        if (c->slots[i].armed) {
            kvm_slot_log_unref_locked(s, &s->slots[i]);
        }
    }
    g_mutex_unlock(&log_lock);
    kvm_dirty_client_free(c);
}

/* clients_lock held. One slot of a sync: read KVM once, hand over, take. */
static int kvm_dirty_client_sync_slot_locked(KVMDirtyClient *c, int i, KVMDirtyTakeFn *take,
                                             void *opaque)
{
    KVMState *s = c->s;
    KVMSlot *slot = &s->slots[i];
    KVMDirtyClientSlot *cs = &c->slots[i];
    const unsigned long *bits = slot->dirty_bmap;
    int ret = kvm_dirty_log_read_slot(s, slot);

    if (ret < 0) {
        return ret;
    }
    if (slot->nclients > 1) {
        kvm_dirty_hand_over_locked(s, c, i, 0, slot->npages);
    }
    /* Alone on the slot (nothing handed to us since): take KVM's words as they are. */
    if (cs->pending) {
        bitmap_or(cs->untaken, cs->untaken, slot->dirty_bmap, slot->npages);
        bits = cs->untaken;
    }
    if (take) {
        take(opaque, slot, bits);
    }
    if (cs->pending) {
        bitmap_zero(cs->untaken, slot->npages);
        cs->pending = false;
    }
    cs->read = true;
    return 0;
}

int kvm_dirty_client_sync(KVMDirtyClient *c, KVMDirtyTakeFn *take, void *opaque)
{
    KVMState *s = c->s;
    int ret = kvm_dirty_log_sync_prepare(s);

    if (ret < 0) {
        return ret;
    }
    for (int i = 0; i < s->nr_slots; i++) {
        /* A deferred client's slot not armed yet: nothing of it is the client's. */
        if (!c->slots[i].armed) {
            continue;
        }
        g_mutex_lock(&clients_lock);
        ret = kvm_dirty_client_sync_slot_locked(c, i, take, opaque);
        g_mutex_unlock(&clients_lock);
        if (ret < 0) {
            return ret;
        }
    }
    return 0;
}

int kvm_dirty_client_clear(KVMDirtyClient *c, KVMSlot *slot, uint64_t first, uint64_t npages)
{
    KVMState *s = c->s;
    ptrdiff_t i = slot - s->slots;
    int ret;

    if (i < 0 || i >= s->nr_slots || !c->slots[i].untaken) {
        return -EINVAL;
    }
    if (!kvm_dirty_log_needs_clear(s) || first >= slot->npages || !npages) {
        return 0;
    }
    /* Clamp before adding: npages may mean "to the end" (and overflow). */
    npages = MIN(npages, slot->npages - first);
    g_mutex_lock(&clients_lock);
    if (!c->slots[i].read) {
        /* dirty_bmap may hold bits read before we started: not ours to re-arm. */
        g_mutex_unlock(&clients_lock);
        return 0;
    }
    /* The re-mark rule: before KVM forgets the bits, the others get them. */
    if (slot->nclients > 1) {
        kvm_dirty_hand_over_locked(s, c, i, first, npages);
    }
    ret = kvm_dirty_log_clear_slot(s, slot, first, npages);
    /* Nothing re-armed and the bits kept: ours too, so that what we read anyway comes back. */
    if (ret < 0 && bitmap_or_range(c->slots[i].untaken, slot->dirty_bmap, first, npages)) {
        c->slots[i].pending = true;
    }
    g_mutex_unlock(&clients_lock);
    return ret;
}

bool kvm_dirty_client_tracks(const KVMDirtyClient *c, const KVMSlot *slot)
{
    ptrdiff_t i = c ? slot - c->s->slots : -1;

    return i >= 0 && i < c->s->nr_slots && c->slots[i].untaken;
}
