/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Split virtqueues over guest RAM. Every value read from a ring is the
 * guest's and may change under us: each index and descriptor is loaded
 * once, checked, and only the checked copy is used. Ring layouts (virtio
 * 1.x, 2.7), all little endian:
 *
 *   descriptor table  16 bytes each: addr u64, len u32, flags u16, next u16
 *   avail (driver)    flags u16, idx u16, ring[num] u16, used_event u16
 *   used (device)     flags u16, idx u16, ring[num] {id u32, len u32},
 *                     avail_event u16
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtqueue.h"
#include "virtqueue-int.h"
#include "system/memory.h"
#include <linux/virtio_ring.h>


/* A descriptor as checked: the guest's copy is never read twice. */
typedef struct VRingDesc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
    uint16_t next;
} VRingDesc;

/*
 * A full barrier: our stores before it are visible before the driver's
 * fields after it are read (the driver does the mirror image). TSan cannot
 * model a fence; there a seq_cst read-modify-write stands in for it.
 */
static inline void virtqueue_mb(void)
{
#if defined(__SANITIZE_THREAD__)
    static int dummy;

    __atomic_fetch_add(&dummy, 0, __ATOMIC_SEQ_CST);
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static inline void ring_store16_release(uint8_t *p, uint16_t v)
{
    __atomic_store_n((uint16_t *)p, GUINT16_TO_LE(v), __ATOMIC_RELEASE);
}

static inline void ring_store16(uint8_t *p, uint16_t v)
{
    __atomic_store_n((uint16_t *)p, GUINT16_TO_LE(v), __ATOMIC_RELAXED);
}

static inline void ring_store32(uint8_t *p, uint32_t v)
{
    __atomic_store_n((uint32_t *)p, GUINT32_TO_LE(v), __ATOMIC_RELAXED);
}

static size_t avail_ring_size(uint16_t num)
{
    return 6 + 2 * (size_t)num;
}

static size_t used_ring_size(uint16_t num)
{
    return 6 + 8 * (size_t)num;
}

void virtqueue_init(VirtQueue *vq, unsigned int index, uint16_t num_max,
                    VirtQueueErrorFn *error_fn, void *opaque)
{
    assert(num_max && num_max <= VIRTQUEUE_MAX_SIZE && !(num_max & (num_max - 1)));
    memset(vq, 0, offsetof(VirtQueue, scratch_iov));
    vq->index = index;
    vq->num_max = num_max;
    vq->error_fn = error_fn;
    vq->error_opaque = opaque;
    virtqueue_reset(vq);
}

void virtqueue_reset(VirtQueue *vq)
{
    virtqueue_disable(vq);
    vq->num = vq->num_max;
    vq->desc_addr = vq->avail_addr = vq->used_addr = 0;
    vq->event_idx = vq->indirect = false;
    __atomic_store_n(&vq->broken, 0, __ATOMIC_SEQ_CST);
}

void virtqueue_error(VirtQueue *vq, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    /* Only the first report counts: a broken queue stays broken until reset. */
    if (__atomic_exchange_n(&vq->broken, 1, __ATOMIC_SEQ_CST)) {
        return;
    }
    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (vq->error_fn) {
        vq->error_fn(vq->error_opaque, vq, msg);
    }
}

void virtqueue_set_broken(VirtQueue *vq)
{
    __atomic_store_n(&vq->broken, 1, __ATOMIC_SEQ_CST);
}

bool virtqueue_is_broken(VirtQueue *vq)
{
    return __atomic_load_n(&vq->broken, __ATOMIC_ACQUIRE);
}

/* NULL if a ring of @size bytes fits at @gpa; else why not (the caller frees it). */
static char *virtqueue_ring_problem(unsigned int index, const char *what, uint64_t gpa,
                                    size_t size, unsigned int align)
{
    if (gpa % align) {
        return g_strdup_printf("queue %u: %s ring at 0x%" PRIx64 " is not %u-byte aligned",
                               index, what, gpa, align);
    }
    if (!guest_phys_to_host(gpa, size)) {
        return g_strdup_printf("queue %u: %s ring 0x%" PRIx64 "+0x%zx is outside guest RAM",
                               index, what, gpa, size);
    }
    return NULL;
}

/*
 * NULL if a queue of @num entries with these rings is one we can run; else
 * why not. Looks up guest RAM but reads none of it.
 */
char *virtqueue_config_problem(const VirtQueue *vq, uint32_t num, uint64_t desc,
                                      uint64_t avail, uint64_t used)
{
    char *why;

    if (num > vq->num_max) {
        return g_strdup_printf("queue %u: size %u is above the maximum %u", vq->index, num,
                               vq->num_max);
    }
    /* Free-running 16-bit indices wrap cleanly only over a power-of-two ring. */
    if (!num || (num & (num - 1))) {
        return g_strdup_printf("queue %u: size %u is not a power of two", vq->index, num);
    }
    why = virtqueue_ring_problem(vq->index, "descriptor", desc, (size_t)num * DESC_SIZE,
                                 VRING_DESC_ALIGN_SIZE);
    why = why ?: virtqueue_ring_problem(vq->index, "driver", avail, avail_ring_size(num),
                                        VRING_AVAIL_ALIGN_SIZE);
    return why ?: virtqueue_ring_problem(vq->index, "device", used, used_ring_size(num),
                                         VRING_USED_ALIGN_SIZE);
}

/* Maps the rings the config names; virtqueue_config_problem() said they fit. */
void virtqueue_map(VirtQueue *vq, bool event_idx, bool indirect)
{
    const GuestRAMRange *r = guest_ram_lookup(vq->used_addr);

    vq->desc = guest_phys_to_host(vq->desc_addr, (size_t)vq->num * DESC_SIZE);
    vq->avail = guest_phys_to_host(vq->avail_addr, avail_ring_size(vq->num));
    vq->used = guest_phys_to_host(vq->used_addr, used_ring_size(vq->num));
    vq->used_rb = r->rb;
    vq->used_ram_offset = r->offset + (vq->used_addr - r->gpa);
    vq->event_idx = event_idx;
    vq->indirect = indirect;
    vq->notification = true;
    vq->ready = true;
}

bool virtqueue_enable(VirtQueue *vq, bool event_idx, bool indirect)
{
    g_autofree char *why = NULL;

    virtqueue_disable(vq);
    why = virtqueue_config_problem(vq, vq->num, vq->desc_addr, vq->avail_addr, vq->used_addr);
    if (why) {
        virtqueue_error(vq, "%s", why);
        return false;
    }
    /* The driver may have used the queue before (a reset resumes from 0). */
    vq->last_avail_idx = vq->used_idx = 0;
    vq->signalled_used = 0;
    vq->signalled_used_valid = false;
    vq->inuse = 0;
    virtqueue_map(vq, event_idx, indirect);
    return true;
}

void virtqueue_disable(VirtQueue *vq)
{
    vq->ready = false;
    vq->desc = vq->avail = vq->used = NULL;
    vq->used_rb = NULL;
    vq->last_avail_idx = vq->used_idx = 0;
    vq->inuse = 0;
}

static void virtqueue_used_dirty(VirtQueue *vq, size_t off, size_t len)
{
    ram_block_mark_dirty(vq->used_rb, vq->used_ram_offset + off, len);
}

/* The driver's avail->idx; what it published before is visible after this. */
static uint16_t virtqueue_avail_idx(VirtQueue *vq)
{
    return ring_load16_acquire(vq->avail + 2);
}

/*
 * How many chains the driver offers. The driver can never be more than a
 * queue's worth ahead of us; if it claims to be, its index is garbage.
 */
bool virtqueue_num_heads(VirtQueue *vq, unsigned int *heads)
{
    uint16_t idx = virtqueue_avail_idx(vq);
    uint16_t n = idx - vq->last_avail_idx;

    if (n > vq->num) {
        virtqueue_error(vq, "queue %u: avail idx %u is %u ahead of %u, more than the "
                        "queue size %u", vq->index, idx, n, vq->last_avail_idx, vq->num);
        return false;
    }
    *heads = n;
    return true;
}

bool virtqueue_empty(VirtQueue *vq)
{
    unsigned int heads;

    if (!vq->ready || virtqueue_is_broken(vq)) {
        return true;
    }
    return !virtqueue_num_heads(vq, &heads) || heads == 0;
}

static void virtqueue_read_desc(const uint8_t *table, unsigned int i, VRingDesc *d)
{
    const volatile uint8_t *src = table + (size_t)i * DESC_SIZE;
    uint8_t raw[DESC_SIZE];

    /*
     * One copy through volatile loads, so that the compiler cannot read the
     * guest's bytes again later: the checks and the mapping see this copy
     * only. (Indirect tables need not be aligned, hence bytes.)
     */
    for (int k = 0; k < DESC_SIZE; k++) {
        raw[k] = src[k];
    }
    memcpy(&d->addr, raw, 8);
    memcpy(&d->len, raw + 8, 4);
    memcpy(&d->flags, raw + 12, 2);
    memcpy(&d->next, raw + 14, 2);
    d->addr = GUINT64_FROM_LE(d->addr);
    d->len = GUINT32_FROM_LE(d->len);
    d->flags = GUINT16_FROM_LE(d->flags);
    d->next = GUINT16_FROM_LE(d->next);
}


/* Maps one buffer descriptor onto guest RAM and appends it to the walk. */
static bool virtqueue_map_desc(VirtQueue *vq, ChainWalk *w, const VRingDesc *d,
                               unsigned int i, bool in_indirect)
{
    unsigned int n = w->out_num + w->in_num;
    void *host;

    if (d->flags & VRING_DESC_F_INDIRECT) {
        virtqueue_error(vq, "queue %u: descriptor %u%s is indirect %s", vq->index, i,
                        in_indirect ? " of an indirect table" : "",
                        in_indirect ? "(nested tables are not allowed)"
                                    : "but not the head of its chain");
        return false;
    }
    if (!(d->flags & VRING_DESC_F_WRITE) && w->in_num) {
        virtqueue_error(vq, "queue %u: descriptor %u is device-readable after a "
                        "device-writable one", vq->index, i);
        return false;
    }
    if (d->len == 0) {
        return true;            /* nothing to map; harmless */
    }
    host = d->addr + d->len < d->addr ? NULL : guest_phys_to_host(d->addr, d->len);
    if (!host) {
        virtqueue_error(vq, "queue %u: descriptor %u buffer 0x%" PRIx64 "+0x%x is outside "
                        "guest RAM", vq->index, i, d->addr, d->len);
        return false;
    }
    if (n >= VIRTQUEUE_MAX_SIZE) {
        virtqueue_error(vq, "queue %u: chain has more than %d buffers", vq->index,
                        VIRTQUEUE_MAX_SIZE);
        return false;
    }
    vq->scratch_iov[n] = (struct iovec) { .iov_base = host, .iov_len = d->len };
    vq->scratch_addr[n] = d->addr;
    if (d->flags & VRING_DESC_F_WRITE) {
        w->in_num++;
        w->in_len += d->len;
    } else {
        w->out_num++;
        w->out_len += d->len;
    }
    return true;
}

/*
 * Follows a chain of @max descriptors in @table from @first. A chain can
 * hold each descriptor at most once, so one longer than @max loops.
 */
static bool virtqueue_walk_table(VirtQueue *vq, ChainWalk *w, const uint8_t *table,
                                 unsigned int max, unsigned int first, bool in_indirect)
{
    unsigned int i = first;

    for (unsigned int count = 1;; count++) {
        VRingDesc d;

        virtqueue_read_desc(table, i, &d);
        if (!virtqueue_map_desc(vq, w, &d, i, in_indirect)) {
            return false;
        }
        if (!(d.flags & VRING_DESC_F_NEXT)) {
            return true;
        }
        if (count >= max) {
            virtqueue_error(vq, "queue %u: descriptor chain from %u is longer than %u "
                            "(a loop)", vq->index, first, max);
            return false;
        }
        if (d.next >= max) {
            virtqueue_error(vq, "queue %u: descriptor %u has next %u, beyond %u",
                            vq->index, i, d.next, max);
            return false;
        }
        i = d.next;
    }
}

/* The chain at @head: one indirect descriptor naming a table, or a direct chain. */
bool virtqueue_walk_chain(VirtQueue *vq, ChainWalk *w, unsigned int head)
{
    VRingDesc d;
    const uint8_t *table;

    virtqueue_read_desc(vq->desc, head, &d);
    if (!(d.flags & VRING_DESC_F_INDIRECT)) {
        return virtqueue_walk_table(vq, w, vq->desc, vq->num, head, false);
    }
    if (!vq->indirect) {
        virtqueue_error(vq, "queue %u: descriptor %u is indirect, but "
                        "VIRTIO_RING_F_INDIRECT_DESC was not negotiated", vq->index, head);
        return false;
    }
    if (d.flags & VRING_DESC_F_NEXT) {
        virtqueue_error(vq, "queue %u: indirect descriptor %u also has NEXT set",
                        vq->index, head);
        return false;
    }
    if (!d.len || d.len % DESC_SIZE || d.len / DESC_SIZE > VIRTQUEUE_MAX_SIZE) {
        virtqueue_error(vq, "queue %u: indirect table of descriptor %u has bad length %u",
                        vq->index, head, d.len);
        return false;
    }
    table = guest_phys_to_host(d.addr, d.len);
    if (!table) {
        virtqueue_error(vq, "queue %u: indirect table 0x%" PRIx64 "+0x%x is outside "
                        "guest RAM", vq->index, d.addr, d.len);
        return false;
    }
    return virtqueue_walk_table(vq, w, table, d.len / DESC_SIZE, 0, true);
}

static VirtQueueElement *virtqueue_elem_new(VirtQueue *vq, const ChainWalk *w,
                                            unsigned int head)
{
    unsigned int n = w->out_num + w->in_num;
    VirtQueueElement *elem;
    uint8_t *p;

    elem = g_malloc(sizeof(*elem) + n * (sizeof(struct iovec) + sizeof(uint64_t)));
    p = (uint8_t *)(elem + 1);
    elem->index = head;
    elem->out_num = w->out_num;
    elem->in_num = w->in_num;
    elem->out_len = w->out_len;
    elem->in_len = w->in_len;
    elem->out_sg = (struct iovec *)p;
    elem->in_sg = elem->out_sg + w->out_num;
    elem->out_addr = (uint64_t *)(elem->out_sg + n);
    elem->in_addr = elem->out_addr + w->out_num;
    memcpy(elem->out_sg, vq->scratch_iov, n * sizeof(struct iovec));
    memcpy(elem->out_addr, vq->scratch_addr, n * sizeof(uint64_t));
    return elem;
}

static void virtqueue_set_avail_event(VirtQueue *vq, uint16_t val)
{
    size_t off = 4 + 8 * (size_t)vq->num;

    ring_store16(vq->used + off, val);
    virtqueue_used_dirty(vq, off, 2);
}

VirtQueueElement *virtqueue_pop(VirtQueue *vq)
{
    ChainWalk w = { 0 };
    unsigned int heads, head;

    if (!vq->ready || virtqueue_is_broken(vq) || !virtqueue_num_heads(vq, &heads) ||
        !heads) {
        return NULL;
    }
    if (vq->inuse >= vq->num) {
        virtqueue_error(vq, "queue %u: more than %u buffers in use", vq->index, vq->num);
        return NULL;
    }
    head = ring_load16(vq->avail + 4 + 2 * (vq->last_avail_idx & (vq->num - 1)));
    if (head >= vq->num) {
        virtqueue_error(vq, "queue %u: avail ring names head %u, beyond the queue size %u",
                        vq->index, head, vq->num);
        return NULL;
    }
    if (!virtqueue_walk_chain(vq, &w, head)) {
        return NULL;
    }
    vq->last_avail_idx++;
    vq->inuse++;
    if (vq->event_idx && vq->notification) {
        /* Kick us again only for buffers beyond the one just taken. */
        virtqueue_set_avail_event(vq, vq->last_avail_idx);
    }
    return virtqueue_elem_new(vq, &w, head);
}

void virtqueue_unpop(VirtQueue *vq, VirtQueueElement *elem)
{
    assert(vq->inuse > 0);
    vq->last_avail_idx--;
    vq->inuse--;
}

/* Marks the first @len bytes of the element's writable buffers dirty. */
static void virtqueue_elem_dirty(const VirtQueueElement *elem, size_t len)
{
    for (unsigned int i = 0; i < elem->in_num && len; i++) {
        size_t n = MIN(len, elem->in_sg[i].iov_len);
        const GuestRAMRange *r = guest_ram_lookup(elem->in_addr[i]);

        /* pop mapped it inside one range, and ranges never change. */
        ram_block_mark_dirty(r->rb, r->offset + (elem->in_addr[i] - r->gpa), n);
        len -= n;
    }
}

void virtqueue_fill(VirtQueue *vq, const VirtQueueElement *elem, uint32_t len,
                    unsigned int idx)
{
    size_t off;

    if (!vq->ready || virtqueue_is_broken(vq)) {
        return;
    }
    /* A device never reports more than the driver gave it. */
    len = MIN(len, elem->in_len);
    virtqueue_elem_dirty(elem, len);
    off = 4 + 8 * (size_t)((vq->used_idx + idx) & (vq->num - 1));
    ring_store32(vq->used + off, elem->index);
    ring_store32(vq->used + off + 4, len);
    virtqueue_used_dirty(vq, off, 8);
}

void virtqueue_flush(VirtQueue *vq, unsigned int count)
{
    uint16_t old = vq->used_idx, new = old + count;

    if (!vq->ready || virtqueue_is_broken(vq)) {
        return;
    }
    assert(count <= vq->inuse);
    /* The entries must be visible before the index that publishes them. */
    ring_store16_release(vq->used + 2, new);
    virtqueue_used_dirty(vq, 2, 2);
    vq->used_idx = new;
    vq->inuse -= count;
    /*
     * If the last interrupt's index fell out of the window we just moved
     * over, the 16-bit comparison in should_notify could wrongly say "already
     * signalled": forget it so the next check interrupts.
     */
    if ((int16_t)(new - vq->signalled_used) < (uint16_t)(new - old)) {
        vq->signalled_used_valid = false;
    }
}

void virtqueue_push(VirtQueue *vq, const VirtQueueElement *elem, uint32_t len)
{
    virtqueue_fill(vq, elem, len, 0);
    virtqueue_flush(vq, 1);
}

bool virtqueue_should_notify(VirtQueue *vq)
{
    uint16_t old, new, event;
    bool valid;

    if (!vq->ready || virtqueue_is_broken(vq)) {
        return false;
    }
    /*
     * Our used->idx store must be visible before we read the driver's wish:
     * otherwise it may decide to sleep on an index we already passed.
     */
    virtqueue_mb();
    if (!vq->event_idx) {
        return !(ring_load16(vq->avail) & VRING_AVAIL_F_NO_INTERRUPT);
    }
    event = ring_load16(vq->avail + 4 + 2 * (size_t)vq->num);
    old = vq->signalled_used;
    valid = vq->signalled_used_valid;
    new = vq->signalled_used = vq->used_idx;
    vq->signalled_used_valid = true;
    return !valid || vring_need_event(event, new, old);
}

void virtqueue_set_notification(VirtQueue *vq, bool enable)
{
    if (!vq->ready || virtqueue_is_broken(vq)) {
        return;
    }
    vq->notification = enable;
    if (vq->event_idx) {
        /* Disabled: leave avail_event behind; the driver passes it and stops kicking. */
        if (enable) {
            virtqueue_set_avail_event(vq, ring_load16(vq->avail + 2));
        }
    } else {
        ring_store16(vq->used, enable ? 0 : VRING_USED_F_NO_NOTIFY);
        virtqueue_used_dirty(vq, 0, 2);
    }
    if (enable) {
        /* Publish before the caller looks at the avail ring once more. */
        virtqueue_mb();
    }
}

static size_t virtqueue_iov_copy(const struct iovec *iov, unsigned int cnt, size_t offset,
                                 void *buf, size_t len, bool to_iov)
{
    size_t done = 0;

    for (unsigned int i = 0; i < cnt && done < len; i++) {
        size_t n;

        if (offset >= iov[i].iov_len) {
            offset -= iov[i].iov_len;
            continue;
        }
        n = MIN(iov[i].iov_len - offset, len - done);
        if (to_iov) {
            memcpy((uint8_t *)iov[i].iov_base + offset, (uint8_t *)buf + done, n);
        } else {
            memcpy((uint8_t *)buf + done, (uint8_t *)iov[i].iov_base + offset, n);
        }
        done += n;
        offset = 0;
    }
    return done;
}

size_t virtqueue_elem_write(const VirtQueueElement *elem, size_t offset, const void *buf,
                            size_t len)
{
    return virtqueue_iov_copy(elem->in_sg, elem->in_num, offset, (void *)buf, len, true);
}

size_t virtqueue_elem_read(const VirtQueueElement *elem, size_t offset, void *buf,
                           size_t len)
{
    return virtqueue_iov_copy(elem->out_sg, elem->out_num, offset, buf, len, false);
}
