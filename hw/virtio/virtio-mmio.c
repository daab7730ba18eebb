/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-mmio, version 2 (virtio 1.x, 4.2.2). Register accesses come from
 * vCPU threads with the BQL held; the device thread only raises
 * interrupts, under irq_lock. Control registers are 32-bit and aligned
 * (other accesses read 0 and are dropped), config space takes any width.
 *
 * The interrupt line is level-triggered, high while InterruptStatus is
 * non-zero. Through a resampling irqfd, a write asserts it; KVM keeps it
 * asserted until the guest's EOI, then drops it and tells us (resamplefd),
 * and we assert again if something is still pending. Without irqfd, the
 * level goes to KVM_IRQ_LINE whenever it changes. A transport wired to a
 * userspace interrupt controller (virtio_mmio_create_on_line: QEMU's
 * microvm's second IOAPIC) hands it every change of the level instead.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-mmio.h"
#include "virtio-mmio-mig.h"
#include "qemu/tsan.h"
#include "system/ioport.h"
#include "system/kvm.h"
#include "system/runstate.h"
#include <glib-unix.h>
#include <sys/eventfd.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>

#define VIRTIO_MMIO_MAGIC   0x74726976      /* "virt" */
#define VIRTIO_MMIO_VERSION_MODERN 2
struct VirtIOMMIOState {
    VirtIODevice *vdev;
    hwaddr base;                /* fixed */
    int gsi;                    /* fixed */
    /* A line to a userspace interrupt controller instead of KVM's GSI (fixed). */
    VirtIOMMIOLineFn line_fn;
    void *line_opaque;
    unsigned int line_pin;

    /* Register selectors (BQL). */
    uint32_t host_features_sel;
    uint32_t guest_features_sel;
    uint32_t queue_sel;

    /* KVM side: chosen at create, fixed after. */
    bool use_ioeventfd;
    bool use_irqfd;
    int irq_fd;                 /* irqfd: a write asserts the line */
    int resample_fd;            /* irqfd: KVM dropped the line at EOI */
    guint resample_watch;       /* main-loop source on resample_fd */
    bool *ioeventfd_on;         /* per queue: assigned in KVM (BQL) */


    /* The interrupt (irq_lock, any thread). */
    GMutex irq_lock;
    uint32_t isr;               /* InterruptStatus; also read atomically */
    bool irqfd_asserted;        /* irqfd: asserted, no EOI seen since */
    int line_level;             /* KVM_IRQ_LINE: the level KVM has */
};

hwaddr virtio_mmio_base(const VirtIOMMIOState *s)
{
    return s->base;
}

int virtio_mmio_gsi(const VirtIOMMIOState *s)
{
    return s->gsi;
}

bool virtio_mmio_uses_ioeventfd(const VirtIOMMIOState *s)
{
    return s->use_ioeventfd;
}

bool virtio_mmio_uses_irqfd(const VirtIOMMIOState *s)
{
    return s->use_irqfd;
}

/* ---- The interrupt line ---- */

static void virtio_mmio_irqfd_assert_locked(VirtIOMMIOState *s)
{
    uint64_t one = 1;

    if (!s->irqfd_asserted && write(s->irq_fd, &one, sizeof(one)) == sizeof(one)) {
        s->irqfd_asserted = true;
    }
}

static void virtio_mmio_update_line_locked(VirtIOMMIOState *s)
{
    int level = s->isr != 0;

    if (s->use_irqfd) {
        /* Lowering is KVM's, at the EOI; raising is ours. */
        if (level) {
            virtio_mmio_irqfd_assert_locked(s);
        }
    } else if (level != s->line_level && s->line_fn) {
        s->line_level = level;
        s->line_fn(s->line_opaque, s->line_pin, level);
    } else if (level != s->line_level && kvm_state) {
        s->line_level = level;
        kvm_set_irq(kvm_state, s->gsi, level);
    }
}

/* The transport's VirtIORaiseFn: any thread. */
static void virtio_mmio_raise(void *opaque, uint32_t bits)
{
    VirtIOMMIOState *s = opaque;

    tsan_g_mutex_lock(&s->irq_lock);
    __atomic_store_n(&s->isr, s->isr | bits, __ATOMIC_RELEASE);
    virtio_mmio_update_line_locked(s);
    tsan_g_mutex_unlock(&s->irq_lock);
}

static void virtio_mmio_ack(VirtIOMMIOState *s, uint32_t bits)
{
    tsan_g_mutex_lock(&s->irq_lock);
    __atomic_store_n(&s->isr, s->isr & ~bits, __ATOMIC_RELEASE);
    virtio_mmio_update_line_locked(s);
    tsan_g_mutex_unlock(&s->irq_lock);
}

/* Main loop: the guest EOIed our interrupt and KVM dropped the line. */
static gboolean virtio_mmio_resample(gint fd, GIOCondition cond, gpointer opaque)
{
    VirtIOMMIOState *s = opaque;
    uint64_t cnt;

    while (read(fd, &cnt, sizeof(cnt)) < 0 && errno == EINTR) {
    }
    tsan_g_mutex_lock(&s->irq_lock);
    s->irqfd_asserted = false;
    virtio_mmio_update_line_locked(s);
    tsan_g_mutex_unlock(&s->irq_lock);
    return G_SOURCE_CONTINUE;
}

/* ---- Queues and ioeventfds (BQL) ---- */

static void virtio_mmio_ioeventfd_set(VirtIOMMIOState *s, unsigned int n, bool on)
{
    int ret;

    if (!s->use_ioeventfd || s->ioeventfd_on[n] == on) {
        return;
    }
    ret = kvm_mmio_ioeventfd_assign(kvm_state, s->vdev->notifier_fd[n],
                                    s->base + VIRTIO_MMIO_QUEUE_NOTIFY, 4, n, on);
    if (ret < 0) {
        /* The MMIO exit still kicks the same eventfd: slower, not wrong. */
        g_debug("%s: KVM_IOEVENTFD for queue %u failed: %s", s->vdev->name, n,
                strerror(-ret));
        return;
    }
    s->ioeventfd_on[n] = on;
}

static void virtio_mmio_queue_ready(VirtIOMMIOState *s, VirtQueue *vq, bool ready)
{
    if (ready && !vq->ready) {
        if (virtio_queue_enable(s->vdev, vq->index)) {
            virtio_mmio_ioeventfd_set(s, vq->index, true);
        }
    } else if (!ready && vq->ready) {
        virtio_mmio_ioeventfd_set(s, vq->index, false);
        virtio_queue_disable(s->vdev, vq->index);
    }
}

/* Device reset through Status = 0, or system_reset. */
static void virtio_mmio_reset(VirtIOMMIOState *s)
{
    virtio_device_reset(s->vdev);
    for (unsigned int i = 0; i < s->vdev->ops->num_queues; i++) {
        virtio_mmio_ioeventfd_set(s, i, false);
    }
    s->host_features_sel = s->guest_features_sel = s->queue_sel = 0;
    /* An irqfd line already asserted stays so until the guest's EOI. */
    virtio_mmio_ack(s, ~0u);
}

static void virtio_mmio_system_reset(void *opaque)
{
    virtio_mmio_reset(opaque);
}

/* ---- Registers ---- */

static uint64_t virtio_mmio_config_read(VirtIOMMIOState *s, uint64_t off, unsigned int size)
{
    VirtIODevice *vdev = s->vdev;
    uint64_t val = 0;

    if (off + size > vdev->ops->config_size) {
        return 0;
    }
    if (vdev->ops->get_config) {
        vdev->ops->get_config(vdev, vdev->config);
    }
    memcpy(&val, vdev->config + off, size);
    return GUINT64_FROM_LE(val);
}

static void virtio_mmio_config_write(VirtIOMMIOState *s, uint64_t off, uint64_t val,
                                     unsigned int size)
{
    VirtIODevice *vdev = s->vdev;

    if (off + size > vdev->ops->config_size || !vdev->ops->set_config) {
        return;
    }
    val = GUINT64_TO_LE(val);
    memcpy(vdev->config + off, &val, size);
    vdev->ops->set_config(vdev, vdev->config);
}

static uint64_t virtio_mmio_read(void *opaque, uint64_t addr, unsigned int size)
{
    VirtIOMMIOState *s = opaque;
    VirtIODevice *vdev = s->vdev;
    VirtQueue *vq = virtio_get_queue(vdev, s->queue_sel);

    if (addr >= VIRTIO_MMIO_CONFIG) {
        return virtio_mmio_config_read(s, addr - VIRTIO_MMIO_CONFIG, size);
    }
    if (size != 4 || addr % 4) {
        return 0;
    }
    switch (addr) {
    case VIRTIO_MMIO_MAGIC_VALUE:
        return VIRTIO_MMIO_MAGIC;
    case VIRTIO_MMIO_VERSION:
        return VIRTIO_MMIO_VERSION_MODERN;
    case VIRTIO_MMIO_DEVICE_ID:
        return vdev->ops->device_id;
    case VIRTIO_MMIO_VENDOR_ID:
        return VIRTIO_VENDOR_ID_QEMU;
    case VIRTIO_MMIO_DEVICE_FEATURES:
        return s->host_features_sel < 2 ? (uint32_t)(vdev->host_features >>
                                                      (32 * s->host_features_sel)) : 0;
    case VIRTIO_MMIO_QUEUE_NUM_MAX:
        return vq ? vq->num_max : 0;    /* 0: no such queue */
    case VIRTIO_MMIO_QUEUE_READY:
        return vq ? vq->ready : 0;
    case VIRTIO_MMIO_INTERRUPT_STATUS:
        return __atomic_load_n(&s->isr, __ATOMIC_ACQUIRE);
    case VIRTIO_MMIO_STATUS:
        return virtio_device_get_status(vdev);
    case VIRTIO_MMIO_QUEUE_DESC_LOW:
        return vq ? (uint32_t)vq->desc_addr : 0;
    case VIRTIO_MMIO_QUEUE_DESC_HIGH:
        return vq ? vq->desc_addr >> 32 : 0;
    case VIRTIO_MMIO_QUEUE_AVAIL_LOW:
        return vq ? (uint32_t)vq->avail_addr : 0;
    case VIRTIO_MMIO_QUEUE_AVAIL_HIGH:
        return vq ? vq->avail_addr >> 32 : 0;
    case VIRTIO_MMIO_QUEUE_USED_LOW:
        return vq ? (uint32_t)vq->used_addr : 0;
    case VIRTIO_MMIO_QUEUE_USED_HIGH:
        return vq ? vq->used_addr >> 32 : 0;
    case VIRTIO_MMIO_SHM_LEN_LOW:
    case VIRTIO_MMIO_SHM_LEN_HIGH:
    case VIRTIO_MMIO_SHM_BASE_LOW:
    case VIRTIO_MMIO_SHM_BASE_HIGH:
        return 0xffffffff;      /* no shared memory regions: length -1 */
    case VIRTIO_MMIO_CONFIG_GENERATION:
        return __atomic_load_n(&vdev->config_generation, __ATOMIC_ACQUIRE);
    default:
        return 0;               /* write-only or reserved */
    }
}

/* Sets the low or high half of a queue address; only while the queue is off. */
static void virtio_mmio_set_addr_half(VirtQueue *vq, uint64_t *addr, bool high, uint32_t val)
{
    if (!vq || vq->ready) {
        return;
    }
    *addr = high ? (*addr & 0xffffffffULL) | ((uint64_t)val << 32)
                 : (*addr & ~0xffffffffULL) | val;
}

static void virtio_mmio_write_features(VirtIOMMIOState *s, uint32_t val)
{
    VirtIODevice *vdev = s->vdev;
    unsigned int shift = 32 * s->guest_features_sel;

    /* After FEATURES_OK the negotiation is over. */
    if (s->guest_features_sel >= 2 || (vdev->status & VIRTIO_CONFIG_S_FEATURES_OK)) {
        return;
    }
    vdev->guest_features = (vdev->guest_features & ~(0xffffffffULL << shift)) |
                           ((uint64_t)val << shift);
}

static void virtio_mmio_write(void *opaque, uint64_t addr, uint64_t val64, unsigned int size)
{
    VirtIOMMIOState *s = opaque;
    VirtIODevice *vdev = s->vdev;
    VirtQueue *vq = virtio_get_queue(vdev, s->queue_sel);
    uint32_t val = val64;

    if (addr >= VIRTIO_MMIO_CONFIG) {
        virtio_mmio_config_write(s, addr - VIRTIO_MMIO_CONFIG, val64, size);
        return;
    }
    if (size != 4 || addr % 4) {
        return;
    }
    switch (addr) {
    case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
        s->host_features_sel = val;
        break;
    case VIRTIO_MMIO_DRIVER_FEATURES:
        virtio_mmio_write_features(s, val);
        break;
    case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
        s->guest_features_sel = val;
        break;
    case VIRTIO_MMIO_QUEUE_SEL:
        s->queue_sel = val;
        break;
    case VIRTIO_MMIO_QUEUE_NUM:
        if (vq && !vq->ready) {
            /* Out of range becomes 0, which QueueReady refuses. */
            vq->num = val <= UINT16_MAX ? val : 0;
        }
        break;
    case VIRTIO_MMIO_QUEUE_READY:
        if (vq) {
            virtio_mmio_queue_ready(s, vq, val & 1);
        }
        break;
    case VIRTIO_MMIO_QUEUE_NOTIFY:
        /* The exit path of what KVM's ioeventfd does without exiting. */
        if (val < vdev->ops->num_queues && vdev->vq[val].ready) {
            virtio_queue_kick(vdev, val);
        }
        break;
    case VIRTIO_MMIO_INTERRUPT_ACK:
        virtio_mmio_ack(s, val);
        break;
    case VIRTIO_MMIO_STATUS:
        if ((val & 0xff) == 0) {
            virtio_mmio_reset(s);
        } else {
            virtio_device_set_status(vdev, val & 0xff);
        }
        break;
    case VIRTIO_MMIO_QUEUE_DESC_LOW:
    case VIRTIO_MMIO_QUEUE_DESC_HIGH:
        virtio_mmio_set_addr_half(vq, vq ? &vq->desc_addr : NULL,
                                  addr == VIRTIO_MMIO_QUEUE_DESC_HIGH, val);
        break;
    case VIRTIO_MMIO_QUEUE_AVAIL_LOW:
    case VIRTIO_MMIO_QUEUE_AVAIL_HIGH:
        virtio_mmio_set_addr_half(vq, vq ? &vq->avail_addr : NULL,
                                  addr == VIRTIO_MMIO_QUEUE_AVAIL_HIGH, val);
        break;
    case VIRTIO_MMIO_QUEUE_USED_LOW:
    case VIRTIO_MMIO_QUEUE_USED_HIGH:
        virtio_mmio_set_addr_half(vq, vq ? &vq->used_addr : NULL,
                                  addr == VIRTIO_MMIO_QUEUE_USED_HIGH, val);
        break;
    default:
        break;                  /* read-only or reserved */
    }
}

static const IORangeOps virtio_mmio_ops = {
    .read = virtio_mmio_read,
    .write = virtio_mmio_write,
};

/* ---- Migration ---- */

void virtio_mmio_mig_save(VirtIOMMIOState *s, VirtIOMMIOMigState *m)
{
    m->host_features_sel = s->host_features_sel;
    m->guest_features_sel = s->guest_features_sel;
    m->queue_sel = s->queue_sel;
    m->isr = __atomic_load_n(&s->isr, __ATOMIC_ACQUIRE);
    m->num_queues = s->vdev->ops->num_queues;
    virtio_device_get_state(s->vdev, &m->dev, m->vq);
}

bool virtio_mmio_mig_load(VirtIOMMIOState *s, const VirtIOMMIOMigState *m, Error **errp)
{
    VirtIODevice *vdev = s->vdev;

    if (m->num_queues != vdev->ops->num_queues) {
        error_setg(errp, "%s: %u queues in the stream, the device has %u", vdev->name,
                   m->num_queues, vdev->ops->num_queues);
        return false;
    }
    if (m->isr & ~(VIRTIO_ISR_VRING | VIRTIO_ISR_CONFIG)) {
        error_setg(errp, "%s: invalid InterruptStatus 0x%x", vdev->name, m->isr);
        return false;
    }
    if (!virtio_device_check_state(vdev, &m->dev, m->vq, errp)) {
        return false;
    }
    /* Checked: from here on nothing fails. */
    for (unsigned int i = 0; i < vdev->ops->num_queues; i++) {
        virtio_mmio_ioeventfd_set(s, i, false);
    }
    virtio_device_set_state(vdev, &m->dev, m->vq);
    for (unsigned int i = 0; i < vdev->ops->num_queues; i++) {
        virtio_mmio_ioeventfd_set(s, i, vdev->vq[i].ready);
    }
    s->host_features_sel = m->host_features_sel;
    s->guest_features_sel = m->guest_features_sel;
    s->queue_sel = m->queue_sel;
    tsan_g_mutex_lock(&s->irq_lock);
    __atomic_store_n(&s->isr, m->isr, __ATOMIC_RELEASE);
    /* The new irqchip has not heard of our line: drive it once. */
    s->irqfd_asserted = false;
    s->line_level = -1;
    virtio_mmio_update_line_locked(s);
    tsan_g_mutex_unlock(&s->irq_lock);
    return true;
}

VirtIODevice *virtio_mmio_vdev(const VirtIOMMIOState *s)
{
    return s->vdev;
}

/* ---- Creation ---- */

static void virtio_mmio_irqfd_init(VirtIOMMIOState *s)
{
    int ret;

    s->irq_fd = s->resample_fd = -1;
    if (!kvm_has_irqfd_resample(kvm_state)) {
        return;
    }
    s->irq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->resample_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ret = s->irq_fd < 0 || s->resample_fd < 0 ? -errno :
          kvm_irqfd_resample_assign(kvm_state, s->irq_fd, s->resample_fd, s->gsi, true);
    if (ret < 0) {
        g_debug("%s: irqfd on GSI %d failed (%s): using KVM_IRQ_LINE", s->vdev->name,
                s->gsi, strerror(-ret));
        if (s->irq_fd >= 0) {
            close(s->irq_fd);
        }
        if (s->resample_fd >= 0) {
            close(s->resample_fd);
        }
        s->irq_fd = s->resample_fd = -1;
        return;
    }
    s->use_irqfd = true;
    s->resample_watch = g_unix_fd_add(s->resample_fd, G_IO_IN, virtio_mmio_resample, s);
}

VirtIOMMIOState *virtio_mmio_create(VirtIODevice *vdev, hwaddr base, int gsi, Error **errp)
{
    return virtio_mmio_create_on_line(vdev, base, gsi, NULL, NULL, 0, errp);
}

VirtIOMMIOState *virtio_mmio_create_on_line(VirtIODevice *vdev, hwaddr base, int gsi,
                                            VirtIOMMIOLineFn line_fn, void *line_opaque,
                                            unsigned int line_pin, Error **errp)
{
    g_autofree VirtIOMMIOState *s = g_new0(VirtIOMMIOState, 1);

    if (vdev->ops->num_queues > VIRTIO_MMIO_MAX_QUEUES) {
        error_setg(errp, "%s has %u queues; virtio-mmio migrates at most %d",
                   vdev->ops->name, vdev->ops->num_queues, VIRTIO_MMIO_MAX_QUEUES);
        return NULL;
    }
    if (io_range_add(mmio_table, base, VIRTIO_MMIO_WINDOW_SIZE, &virtio_mmio_ops, s,
                     "virtio-mmio") < 0) {
        error_setg(errp, "MMIO range 0x%" HWADDR_PRIx "-0x%" HWADDR_PRIx " is already in use",
                   base, base + VIRTIO_MMIO_WINDOW_SIZE - 1);
        return NULL;
    }
    s->vdev = vdev;
    s->base = base;
    s->gsi = gsi;
    s->line_fn = line_fn;
    s->line_opaque = line_opaque;
    s->line_pin = line_pin;
    s->ioeventfd_on = g_new0(bool, vdev->ops->num_queues);
    g_mutex_init(&s->irq_lock);
    g_free(vdev->name);
    vdev->name = g_strdup_printf("%s at 0x%" HWADDR_PRIx, vdev->ops->name, base);
    vdev->raise = virtio_mmio_raise;
    vdev->transport = s;
    s->use_ioeventfd = kvm_has_ioeventfd(kvm_state);
    if (!line_fn) {
        virtio_mmio_irqfd_init(s);      /* KVM's GSI: an irqfd where KVM has one */
    }
    qemu_register_reset(virtio_mmio_system_reset, s);
    return g_steal_pointer(&s);
}

void virtio_mmio_destroy(VirtIOMMIOState *s)
{
    virtio_mmio_reset(s);
    if (s->use_irqfd) {
        g_source_remove(s->resample_watch);
        kvm_irqfd_resample_assign(kvm_state, s->irq_fd, s->resample_fd, s->gsi, false);
        close(s->irq_fd);
        close(s->resample_fd);
    }
    s->vdev->raise = NULL;
    s->vdev->transport = NULL;
    g_mutex_clear(&s->irq_lock);
    g_free(s->ioeventfd_on);
    g_free(s);
}
