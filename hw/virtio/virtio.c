/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The virtio device core: negotiation, status, broken handling and the
 * device thread. The thread exists only while the driver has set
 * DRIVER_OK, the VM runs and the device is not broken; every change of
 * those three goes through virtio_device_update_running() under the BQL,
 * which joins the thread before it returns, so a BQL holder that saw the
 * device stopped owns the queues. One exception: once guest RAM is lost
 * (guest_ram_lost) a thread that may wait on a missing page is not joined
 * but left behind (thread_abandoned); the device is broken, the guest
 * cannot run again, and nothing the thread may use is freed.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtio.h"
#include "system/memory.h"
#include "system/runstate.h"
#include <poll.h>
#include <sys/eventfd.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

bool virtio_has_feature(const VirtIODevice *vdev, unsigned int bit)
{
    return bit < 64 && (vdev->guest_features & (1ULL << bit));
}

VirtQueue *virtio_get_queue(VirtIODevice *vdev, unsigned int n)
{
    return n < vdev->ops->num_queues ? &vdev->vq[n] : NULL;
}

uint8_t virtio_device_get_status(VirtIODevice *vdev)
{
    uint8_t status = __atomic_load_n(&vdev->status, __ATOMIC_ACQUIRE);

    return status | (virtio_device_is_broken(vdev) ? VIRTIO_CONFIG_S_NEEDS_RESET : 0);
}

bool virtio_device_is_broken(VirtIODevice *vdev)
{
    return __atomic_load_n(&vdev->broken, __ATOMIC_ACQUIRE);
}

void virtio_error(VirtIODevice *vdev, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    for (unsigned int i = 0; i < vdev->ops->num_queues; i++) {
        virtqueue_set_broken(&vdev->vq[i]);
    }
    if (__atomic_exchange_n(&vdev->broken, 1, __ATOMIC_SEQ_CST)) {
        return;
    }
    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    /* Once per device: a guest that breaks it in a loop must not flood stderr. */
    if (!__atomic_exchange_n(&vdev->broken_warned, 1, __ATOMIC_SEQ_CST)) {
        warn_report("%s: %s; device marked broken until the driver resets it",
                    vdev->name, msg);
    }
    /* The spec wants a config change notification once the driver runs. */
    if ((__atomic_load_n(&vdev->status, __ATOMIC_ACQUIRE) & VIRTIO_CONFIG_S_DRIVER_OK) &&
        vdev->raise) {
        vdev->raise(vdev->transport, VIRTIO_ISR_CONFIG);
    }
}

static void virtio_queue_error(void *opaque, VirtQueue *vq, const char *msg)
{
    virtio_error(opaque, "%s", msg);
}

void virtio_queue_kick(VirtIODevice *vdev, unsigned int n)
{
    uint64_t one = 1;

    if (n < vdev->ops->num_queues) {
        /* A full counter (never, in practice) still leaves the fd readable. */
        if (write(vdev->notifier_fd[n], &one, sizeof(one)) < 0 && errno != EAGAIN) {
            virtio_error(vdev, "queue %u: cannot signal the device thread: %s", n,
                         strerror(errno));
        }
    }
}

void virtio_notify(VirtIODevice *vdev, VirtQueue *vq)
{
    if (virtqueue_should_notify(vq) && vdev->raise) {
        vdev->raise(vdev->transport, VIRTIO_ISR_VRING);
    }
}

void virtio_notify_config(VirtIODevice *vdev)
{
    __atomic_fetch_add(&vdev->config_generation, 1, __ATOMIC_SEQ_CST);
    if ((__atomic_load_n(&vdev->status, __ATOMIC_ACQUIRE) & VIRTIO_CONFIG_S_DRIVER_OK) &&
        vdev->raise) {
        vdev->raise(vdev->transport, VIRTIO_ISR_CONFIG);
    }
}

/* ---- The device thread ---- */

static void virtio_notifier_drain(int fd)
{
    uint64_t cnt;

    while (read(fd, &cnt, sizeof(cnt)) < 0 && errno == EINTR) {
    }
}

static void *virtio_device_thread_body(VirtIODevice *vdev)
{
    unsigned int nq = vdev->ops->num_queues;
    g_autofree struct pollfd *fds = g_new0(struct pollfd, nq + 1);

    fds[0] = (struct pollfd) { .fd = vdev->stop_fd, .events = POLLIN };
    for (unsigned int i = 0; i < nq; i++) {
        fds[i + 1] = (struct pollfd) { .fd = vdev->notifier_fd[i], .events = POLLIN };
    }
    /*
     * A kick the previous run took but did not finish (VM stopped, or the
     * state came in a migration) is gone: look at every queue once.
     */
    for (unsigned int i = 0; i < nq; i++) {
        if (vdev->vq[i].ready) {
            vdev->ops->queue_notify(vdev, &vdev->vq[i]);
        }
    }
    for (;;) {
        if (poll(fds, nq + 1, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            virtio_error(vdev, "device thread: poll failed: %s", strerror(errno));
            return NULL;
        }
        if (fds[0].revents) {
            return NULL;
        }
        for (unsigned int i = 0; i < nq; i++) {
            if (fds[i + 1].revents & POLLIN) {
                /* Drain first: a kick that comes during the handler wakes us again. */
                virtio_notifier_drain(vdev->notifier_fd[i]);
                if (vdev->vq[i].ready) {
                    vdev->ops->queue_notify(vdev, &vdev->vq[i]);
                }
            }
        }
    }
}

static void *virtio_device_thread_fn(void *opaque)
{
    VirtIODevice *vdev = opaque;
    uint64_t one = 1;

    virtio_device_thread_body(vdev);
    /* The last access to the device: whoever stops it may join now. */
    while (write(vdev->exit_fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    return NULL;
}

/* Whether the device thread said it returns, waiting at most @timeout_ms (-1: forever). */
static bool virtio_device_thread_exited(VirtIODevice *vdev, int lost_fd, int timeout_ms)
{
    struct pollfd fds[2] = {
        { .fd = vdev->exit_fd, .events = POLLIN },
        { .fd = lost_fd, .events = POLLIN },    /* poll() skips a negative fd */
    };

    while (poll(fds, 2, timeout_ms) < 0 && errno == EINTR) {
    }
    return fds[0].revents & POLLIN;
}

/*
 * Joins the device thread, unless it may wait forever on guest RAM: then
 * returns false, the thread told to return but not joined. The thread reads
 * and writes guest RAM without the BQL; under a lazy restore a page it
 * touches may be missing, and once the file failed (guest_ram_lost) the
 * fault is never answered and no signal ends the wait. A join there would
 * hold the BQL forever: no monitor, no STOP event, no quit. So the wait
 * for the thread also watches for the loss, which may come while we wait.
 */
static bool virtio_device_thread_join(VirtIODevice *vdev)
{
    int lost_fd = guest_ram_lost_fd();

    if (!virtio_device_thread_exited(vdev, lost_fd, -1) &&
        /* A thread that was not waiting on a page returns at once. */
        !virtio_device_thread_exited(vdev, -1, 100)) {
        return false;
    }
    qemu_thread_join(&vdev->thread);
    virtio_notifier_drain(vdev->exit_fd);
    return true;
}

static void virtio_device_thread_stop(VirtIODevice *vdev)
{
    uint64_t one = 1;

    if (!vdev->thread_running) {
        return;
    }
    while (write(vdev->stop_fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    if (!virtio_device_thread_join(vdev)) {
        /*
         * Left behind: the guest cannot run again (its memory is
         * incomplete), so the device never needs the thread. ops->stop
         * is not called: the thread may be inside the device's code, and
         * stop's flush would touch guest RAM under the BQL. The stop_fd
         * stays written: if the page ever came, the thread would return.
         */
        vdev->thread_running = false;
        vdev->thread_abandoned = true;
        virtio_error(vdev, "the device thread waits on guest RAM that will never come; "
                     "left behind");
        return;
    }
    virtio_notifier_drain(vdev->stop_fd);
    vdev->thread_running = false;
    /*
     * stop may read and write guest RAM under the BQL (virtio-net flushes
     * its frames into the rings); once RAM is lost that could wait for
     * ever. Skipped: the guest never runs again to see what it would do.
     */
    if (vdev->ops->stop && !guest_ram_lost()) {
        vdev->ops->stop(vdev);
    }
}

static void virtio_device_thread_start(VirtIODevice *vdev)
{
    g_autoptr(Error) err = NULL;
    int ret;

    if (vdev->ops->start && !vdev->ops->start(vdev, &err)) {
        virtio_error(vdev, "cannot start: %s", error_get_pretty(err));
        return;
    }
    ret = qemu_thread_create(&vdev->thread, vdev->ops->thread_name ?: "virtio",
                             virtio_device_thread_fn, vdev);
    if (ret < 0) {
        if (vdev->ops->stop) {
            vdev->ops->stop(vdev);
        }
        virtio_error(vdev, "cannot create the device thread: %s", strerror(-ret));
        return;
    }
    vdev->thread_running = true;
}

void virtio_device_update_running(VirtIODevice *vdev)
{
    bool want = vdev->vm_running && (vdev->status & VIRTIO_CONFIG_S_DRIVER_OK) &&
                !virtio_device_is_broken(vdev) && !vdev->thread_abandoned;

    if (want && !vdev->thread_running) {
        virtio_device_thread_start(vdev);
    } else if (!want && vdev->thread_running) {
        virtio_device_thread_stop(vdev);
    }
}

static void virtio_device_vm_change(void *opaque, bool running, RunState state)
{
    VirtIODevice *vdev = opaque;

    vdev->vm_running = running;
    virtio_device_update_running(vdev);
}

/* ---- Control plane (BQL) ---- */

bool virtio_queue_enable(VirtIODevice *vdev, unsigned int n)
{
    bool was_running = vdev->thread_running;
    bool ok;

    /* The thread reads queue config without a lock: change it only while stopped. */
    virtio_device_thread_stop(vdev);
    ok = virtqueue_enable(&vdev->vq[n], virtio_has_feature(vdev, VIRTIO_RING_F_EVENT_IDX),
                          virtio_has_feature(vdev, VIRTIO_RING_F_INDIRECT_DESC));
    if (was_running) {
        virtio_device_update_running(vdev);
    }
    return ok;
}

void virtio_queue_disable(VirtIODevice *vdev, unsigned int n)
{
    bool was_running = vdev->thread_running;

    virtio_device_thread_stop(vdev);
    virtqueue_disable(&vdev->vq[n]);
    if (was_running) {
        virtio_device_update_running(vdev);
    }
}

/*
 * Whether FEATURES_OK may stand: the driver took only what we offered, and
 * took VIRTIO_F_VERSION_1 (we have no legacy interface).
 */
static bool virtio_device_features_acceptable(VirtIODevice *vdev)
{
    return (vdev->guest_features & (1ULL << VIRTIO_F_VERSION_1)) &&
           !(vdev->guest_features & ~vdev->host_features);
}

void virtio_device_set_status(VirtIODevice *vdev, uint8_t val)
{
    uint8_t old = vdev->status;

    if (val == 0) {
        virtio_device_reset(vdev);
        return;
    }
    /* NEEDS_RESET is the device's to set; the driver's copy means nothing. */
    val &= ~VIRTIO_CONFIG_S_NEEDS_RESET;
    if ((val & VIRTIO_CONFIG_S_FEATURES_OK) && !(old & VIRTIO_CONFIG_S_FEATURES_OK) &&
        !virtio_device_features_acceptable(vdev)) {
        /* Refused: the driver reads FEATURES_OK back clear and gives up. */
        val &= ~VIRTIO_CONFIG_S_FEATURES_OK;
    }
    if (!(old & VIRTIO_CONFIG_S_FEATURES_OK) && !(val & VIRTIO_CONFIG_S_FEATURES_OK) &&
        (val & VIRTIO_CONFIG_S_DRIVER_OK)) {
        val &= ~VIRTIO_CONFIG_S_DRIVER_OK;
        __atomic_store_n(&vdev->status, val, __ATOMIC_RELEASE);
        virtio_error(vdev, "driver set DRIVER_OK without FEATURES_OK");
        return;
    }
    __atomic_store_n(&vdev->status, val, __ATOMIC_RELEASE);
    virtio_device_update_running(vdev);
}

void virtio_device_reset(VirtIODevice *vdev)
{
    __atomic_store_n(&vdev->status, 0, __ATOMIC_RELEASE);
    virtio_device_update_running(vdev);
    if (vdev->ops->reset) {
        vdev->ops->reset(vdev);
    }
    for (unsigned int i = 0; i < vdev->ops->num_queues; i++) {
        virtqueue_reset(&vdev->vq[i]);
    }
    vdev->guest_features = 0;
    __atomic_store_n(&vdev->broken, 0, __ATOMIC_SEQ_CST);
}

/* ---- Migration (BQL, device thread stopped) ---- */

#define VIRTIO_STATUS_KNOWN (VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER | \
                             VIRTIO_CONFIG_S_DRIVER_OK | VIRTIO_CONFIG_S_FEATURES_OK | \
                             VIRTIO_CONFIG_S_FAILED)

void virtio_device_get_state(VirtIODevice *vdev, VirtIODeviceState *ds, VirtQueueState *qs)
{
    assert(!vdev->thread_running);
    *ds = (VirtIODeviceState) {
        .status = vdev->status,
        .guest_features = vdev->guest_features,
        .config_generation = __atomic_load_n(&vdev->config_generation, __ATOMIC_ACQUIRE),
        .broken = virtio_device_is_broken(vdev),
    };
    for (unsigned int i = 0; i < vdev->ops->num_queues; i++) {
        virtqueue_get_state(&vdev->vq[i], &qs[i]);
    }
}

bool virtio_device_check_state(VirtIODevice *vdev, const VirtIODeviceState *ds,
                               const VirtQueueState *qs, Error **errp)
{
    uint64_t unknown = ds->guest_features & ~vdev->host_features;

    if (ds->status & ~VIRTIO_STATUS_KNOWN) {
        error_setg(errp, "%s: invalid status 0x%x", vdev->name, ds->status);
        return false;
    }
    if (unknown) {
        error_setg(errp, "%s: the driver's features 0x%" PRIx64 " include 0x%" PRIx64
                   ", which this device does not offer", vdev->name, ds->guest_features,
                   unknown);
        return false;
    }
    if ((ds->status & VIRTIO_CONFIG_S_FEATURES_OK) &&
        !(ds->guest_features & (1ULL << VIRTIO_F_VERSION_1))) {
        error_setg(errp, "%s: FEATURES_OK without VIRTIO_F_VERSION_1", vdev->name);
        return false;
    }
    if ((ds->status & VIRTIO_CONFIG_S_DRIVER_OK) && !(ds->status & VIRTIO_CONFIG_S_FEATURES_OK)) {
        error_setg(errp, "%s: DRIVER_OK without FEATURES_OK", vdev->name);
        return false;
    }
    for (unsigned int i = 0; i < vdev->ops->num_queues; i++) {
        if (!virtqueue_check_state(&vdev->vq[i], &qs[i], errp)) {
            error_prepend(errp, "%s: ", vdev->name);
            return false;
        }
    }
    return true;
}

/*
 * The rings as the device thread will find them, after the state is set.
 * What they hold the guest wrote (the used ring's idx too: the guest can
 * write it), so a disagreement is not a reason to refuse the migration: a
 * guest could block every migration of itself by writing used->idx or
 * posting a looping chain it never kicks. The device is loaded broken
 * instead (NEEDS_RESET), as the source would have broken it at the next
 * kick, with the one warning naming the device and the field; the guest's
 * problem stays the guest's.
 * Only a device that will run reads them: before DRIVER_OK the driver may
 * still be laying them out, and a device broken on the source is broken
 * already. Under postcopy or a lazy restore the rings' pages may not be
 * here yet, and a read would wait with the BQL on a fault that only the
 * source or the file can serve, maybe never: there the checks at the
 * first kick remain.
 */
static void virtio_device_check_rings(VirtIODevice *vdev, const VirtIODeviceState *ds,
                                      const VirtQueueState *qs)
{
    bool indirect = ds->guest_features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC);

    if (!(ds->status & VIRTIO_CONFIG_S_DRIVER_OK) || ds->broken || guest_ram_reads_may_wait()) {
        return;
    }
    for (unsigned int i = 0; i < vdev->ops->num_queues; i++) {
        g_autoptr(Error) err = NULL;

        if (!virtqueue_check_rings(&vdev->vq[i], &qs[i], indirect, &err)) {
            virtio_error(vdev, "at load, the rings in guest RAM disagree: %s",
                         error_get_pretty(err));
            return;
        }
    }
}

void virtio_device_set_state(VirtIODevice *vdev, const VirtIODeviceState *ds,
                             const VirtQueueState *qs)
{
    bool event_idx = ds->guest_features & (1ULL << VIRTIO_RING_F_EVENT_IDX);
    bool indirect = ds->guest_features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC);

    /* Whatever ran here before the state came in stops first. */
    __atomic_store_n(&vdev->status, 0, __ATOMIC_RELEASE);
    virtio_device_update_running(vdev);
    vdev->guest_features = ds->guest_features;
    __atomic_store_n(&vdev->config_generation, ds->config_generation, __ATOMIC_RELEASE);
    for (unsigned int i = 0; i < vdev->ops->num_queues; i++) {
        virtqueue_set_state(&vdev->vq[i], &qs[i], event_idx, indirect);
    }
    __atomic_store_n(&vdev->broken, 0, __ATOMIC_SEQ_CST);
    if (ds->broken) {
        /* Broken there, broken here; the warning was the source's to print. */
        __atomic_store_n(&vdev->broken_warned, 1, __ATOMIC_SEQ_CST);
        virtio_error(vdev, "broken on the migration source");
    }
    /* Before the status: no config interrupt now; the driver reads NEEDS_RESET. */
    virtio_device_check_rings(vdev, ds, qs);
    __atomic_store_n(&vdev->status, ds->status, __ATOMIC_RELEASE);
    virtio_device_update_running(vdev);
}

bool virtio_device_init(VirtIODevice *vdev, const VirtIODeviceOps *ops, Error **errp)
{
    unsigned int nq = ops->num_queues;

    assert(ops->queue_notify && ops->config_size <= 0x100);
    vdev->ops = ops;
    vdev->name = vdev->name ?: g_strdup(ops->name);
    vdev->host_features = ops->features | VIRTIO_CORE_FEATURES;
    vdev->config = g_malloc0(MAX(ops->config_size, 1));
    vdev->vq = g_new0(VirtQueue, nq);
    vdev->notifier_fd = g_new(int, nq);
    for (unsigned int i = 0; i < nq; i++) {
        virtqueue_init(&vdev->vq[i], i, ops->queue_size, virtio_queue_error, vdev);
        vdev->notifier_fd[i] = -1;
    }
    vdev->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    vdev->exit_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    for (unsigned int i = 0; i < nq && vdev->stop_fd >= 0 && vdev->exit_fd >= 0; i++) {
        vdev->notifier_fd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (vdev->notifier_fd[i] < 0) {
            break;
        }
    }
    if (vdev->stop_fd < 0 || vdev->exit_fd < 0 || (nq && vdev->notifier_fd[nq - 1] < 0)) {
        error_setg_errno(errp, errno, "%s: cannot create eventfds", ops->name);
        virtio_device_cleanup(vdev);
        return false;
    }
    vdev->vm_running = runstate_is_running();
    vdev->vm_change = qemu_add_vm_change_state_handler(virtio_device_vm_change, vdev);
    return true;
}

void virtio_device_cleanup(VirtIODevice *vdev)
{
    if (!vdev->ops) {
        return;
    }
    __atomic_store_n(&vdev->status, 0, __ATOMIC_RELEASE);
    virtio_device_thread_stop(vdev);
    if (vdev->thread_abandoned) {
        if (!virtio_device_thread_exited(vdev, -1, 0)) {
            /*
             * Still waiting on a page that will never come: the queues,
             * fds and the device around them stay for it, until the
             * process ends (only then does the wait end).
             */
            return;
        }
        qemu_thread_join(&vdev->thread);
        vdev->thread_abandoned = false;
    }
    if (vdev->vm_change) {
        qemu_del_vm_change_state_handler(vdev->vm_change);
    }
    for (unsigned int i = 0; i < vdev->ops->num_queues; i++) {
        if (vdev->notifier_fd[i] >= 0) {
            close(vdev->notifier_fd[i]);
        }
    }
    if (vdev->stop_fd >= 0) {
        close(vdev->stop_fd);
    }
    if (vdev->exit_fd >= 0) {
        close(vdev->exit_fd);
    }
    g_free(vdev->notifier_fd);
    g_free(vdev->vq);
    g_free(vdev->config);
    g_free(vdev->name);
    memset(vdev, 0, sizeof(*vdev));
}
