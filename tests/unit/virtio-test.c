/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The virtio device test bench: fakes of KVM and the run state, and a fake driver. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/ioport.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "system/runstate.h"
#include "migration/misc.h"
#include "migration/qemu-file.h"
#include "virtio-test.h"
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>

VirtIOTestFakes vtest_fake;
KVMState *kvm_state;

static KVMState fake_kvm_state;
static GPtrArray *vm_handlers;  /* VMChangeStateEntry * */
static RAMBlock *ram;

/* ---- Fakes ---- */

struct VMChangeStateEntry {
    VMChangeStateHandler *cb;
    void *opaque;
};

bool kvm_has_ioeventfd(KVMState *s)
{
    return s && vtest_fake.ioeventfd_cap;
}

bool kvm_has_irqfd_resample(KVMState *s)
{
    return s && vtest_fake.irqfd_cap;
}

int kvm_mmio_ioeventfd_assign(KVMState *s, int fd, hwaddr addr, unsigned int len,
                              uint64_t datamatch, bool assign)
{
    int *slot;

    g_assert_true(vtest_fake.ioeventfd_cap);
    g_assert_cmpuint(datamatch, <, G_N_ELEMENTS(vtest_fake.ioeventfd_fd));
    slot = &vtest_fake.ioeventfd_fd[datamatch];
    /* KVM refuses a second identical assignment and an unknown deassignment. */
    g_assert_cmpint(*slot, ==, assign ? -1 : fd);
    *slot = assign ? fd : -1;
    vtest_fake.ioeventfd_addr = addr;
    vtest_fake.ioeventfd_len = len;
    return 0;
}

int kvm_irqfd_resample_assign(KVMState *s, int fd, int resamplefd, int gsi, bool assign)
{
    g_assert_true(vtest_fake.irqfd_cap);
    if (!assign) {
        g_assert_cmpint(fd, ==, vtest_fake.irq_fd);
        vtest_fake.irq_fd = vtest_fake.resample_fd = -1;
        return 0;
    }
    vtest_fake.irq_fd = fd;
    vtest_fake.resample_fd = resamplefd;
    vtest_fake.irqfd_gsi = gsi;
    return 0;
}

int kvm_set_irq(KVMState *s, int irq, int level)
{
    __atomic_store_n(&vtest_fake.line_level, level, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&vtest_fake.line_calls, 1, __ATOMIC_SEQ_CST);
    return 0;
}

void qemu_register_reset(QEMUResetHandler *fn, void *opaque)
{
}

bool runstate_is_running(void)
{
    return vtest_fake.running;
}

/* No incoming migration here, and no live update (net/slirp-cpr.c asks). */
bool runstate_check(RunState state)
{
    return state == (vtest_fake.running ? RUN_STATE_RUNNING : RUN_STATE_PAUSED);
}

bool migration_guest_owned_here(Error **errp)
{
    return true;
}

VMChangeStateEntry *qemu_add_vm_change_state_handler(VMChangeStateHandler *cb, void *opaque)
{
    VMChangeStateEntry *e = g_new(VMChangeStateEntry, 1);

    e->cb = cb;
    e->opaque = opaque;
    g_ptr_array_add(vm_handlers, e);
    return e;
}

void qemu_del_vm_change_state_handler(VMChangeStateEntry *e)
{
    g_ptr_array_remove(vm_handlers, e);
    g_free(e);
}

void vmstate_register(const char *idstr, uint32_t instance_id,
                      const VMStateDescription *vmsd, void *opaque)
{
    unsigned int n = vtest_fake.n_sections;

    vtest_fake.vmsd = vmsd;
    vtest_fake.vmsd_opaque = opaque;
    vtest_fake.vmsd_instance = instance_id;
    g_assert_cmpuint(n, <, G_N_ELEMENTS(vtest_fake.sections));
    /* Interned: callers may build the name in a buffer they free (the real registry copies it). */
    vtest_fake.sections[n].idstr = g_intern_string(idstr);
    vtest_fake.sections[n].instance = instance_id;
    vtest_fake.sections[n].vmsd = vmsd;
    vtest_fake.sections[n].opaque = opaque;
    vtest_fake.n_sections++;
}

void vmstate_unregister(const VMStateDescription *vmsd, void *opaque)
{
    for (unsigned int i = 0; i < vtest_fake.n_sections; i++) {
        if (vtest_fake.sections[i].vmsd == vmsd && vtest_fake.sections[i].opaque == opaque) {
            memmove(&vtest_fake.sections[i], &vtest_fake.sections[i + 1],
                    (vtest_fake.n_sections - i - 1) * sizeof(vtest_fake.sections[0]));
            vtest_fake.n_sections--;
            break;
        }
    }
    if (vtest_fake.vmsd == vmsd && vtest_fake.vmsd_opaque == opaque) {
        vtest_fake.vmsd = NULL;
        vtest_fake.vmsd_opaque = NULL;
    }
}

static uint8_t *vtest_save(const VMStateDescription *vmsd, void *opaque, size_t *len)
{
    QEMUFile *f = qemu_file_new_buffer_output();
    const uint8_t *data;
    uint8_t *copy;

    g_assert_true(vmstate_save_state(f, vmsd, opaque, NULL, ERRP_ABORT));
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    data = qemu_file_buffer_data(f, len);
    copy = g_memdup2(data, *len);
    qemu_fclose(f);
    return copy;
}

static bool vtest_load(const VMStateDescription *vmsd, void *opaque, int version,
                       const uint8_t *data, size_t len, Error **errp)
{
    QEMUFile *f = qemu_file_new_buffer_input(data, len);
    bool ok = vmstate_load_state(f, vmsd, opaque, version, errp);

    qemu_fclose(f);
    return ok;
}

uint8_t *vtest_section_save(size_t *len)
{
    return vtest_save(vtest_fake.vmsd, vtest_fake.vmsd_opaque, len);
}

bool vtest_section_load(const uint8_t *data, size_t len, Error **errp)
{
    return vtest_load(vtest_fake.vmsd, vtest_fake.vmsd_opaque, vtest_fake.vmsd->version_id,
                      data, len, errp);
}

static unsigned int vtest_section_find(const char *idstr)
{
    for (unsigned int i = vtest_fake.n_sections; i-- > 0;) {
        if (!strcmp(vtest_fake.sections[i].idstr, idstr)) {
            return i;
        }
    }
    g_error("no section '%s' registered", idstr);
}

uint8_t *vtest_section_save_named(const char *idstr, size_t *len)
{
    unsigned int i = vtest_section_find(idstr);

    return vtest_save(vtest_fake.sections[i].vmsd, vtest_fake.sections[i].opaque, len);
}

bool vtest_section_load_named(const char *idstr, int version, const uint8_t *data, size_t len,
                              Error **errp)
{
    unsigned int i = vtest_section_find(idstr);
    const VMStateDescription *vmsd = vtest_fake.sections[i].vmsd;

    return vtest_load(vmsd, vtest_fake.sections[i].opaque, version ? version : vmsd->version_id,
                      data, len, errp);
}

void vtest_vm_set_running(bool running)
{
    vtest_fake.running = running;
    for (guint i = 0; i < vm_handlers->len; i++) {
        VMChangeStateEntry *e = g_ptr_array_index(vm_handlers, i);

        e->cb(e->opaque, running, running ? RUN_STATE_RUNNING : RUN_STATE_PAUSED);
    }
}

void vtest_fakes_reset(bool ioeventfd, bool irqfd)
{
    memset(&vtest_fake, 0, sizeof(vtest_fake));
    vtest_fake.ioeventfd_cap = ioeventfd;
    vtest_fake.irqfd_cap = irqfd;
    for (size_t i = 0; i < G_N_ELEMENTS(vtest_fake.ioeventfd_fd); i++) {
        vtest_fake.ioeventfd_fd[i] = -1;
    }
    vtest_fake.irq_fd = vtest_fake.resample_fd = -1;
    vtest_fake.running = true;
}

void vtest_init(void)
{
    RAMBackendOpts o = { .id = "vtest.ram", .kind = RAM_BACKEND_ANON,
                         .size = VTEST_RAM_SIZE };

    ram = ram_block_create(&o, ERRP_ABORT);
    guest_ram_map(ram, 0, 0, VTEST_RAM_SIZE, ERRP_ABORT);
    kvm_state = &fake_kvm_state;
    vm_handlers = g_ptr_array_new();
    mmio_table = io_range_table_new();
    vtest_fakes_reset(false, false);
}

void vtest_cleanup(void)
{
    io_range_table_free(mmio_table);
    mmio_table = NULL;
    g_ptr_array_free(vm_handlers, TRUE);
    ram_block_destroy(ram);
}

/* ---- The fake driver ---- */

uint8_t *vtest_gpa(uint64_t gpa)
{
    uint8_t *p = guest_phys_to_host(gpa, 1);

    g_assert_nonnull(p);
    return p;
}

uint32_t vtest_read(hwaddr base, uint64_t off)
{
    uint64_t v;

    g_assert_true(io_range_read(mmio_table, base + off, 4, &v));
    return v;
}

void vtest_write(hwaddr base, uint64_t off, uint32_t val)
{
    g_assert_true(io_range_write(mmio_table, base + off, 4, val));
}

void vtest_negotiate(hwaddr base, uint64_t features)
{
    uint32_t s = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;

    vtest_write(base, VIRTIO_MMIO_STATUS, 0);
    vtest_write(base, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
    vtest_write(base, VIRTIO_MMIO_STATUS, s);
    vtest_write(base, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
    vtest_write(base, VIRTIO_MMIO_DRIVER_FEATURES, features);
    vtest_write(base, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
    vtest_write(base, VIRTIO_MMIO_DRIVER_FEATURES, features >> 32);
    vtest_write(base, VIRTIO_MMIO_STATUS, s | VIRTIO_CONFIG_S_FEATURES_OK);
}

static void vtest_zero(uint64_t gpa, size_t len)
{
    void *p = guest_phys_to_host(gpa, len);

    if (p) {
        memset(p, 0, len);
    }
}

void vtest_queue_setup(hwaddr base, VirtIOTestQueue *q)
{
    static const struct { uint32_t lo, hi; size_t off; } addr_regs[] = {
        { VIRTIO_MMIO_QUEUE_DESC_LOW, VIRTIO_MMIO_QUEUE_DESC_HIGH,
          offsetof(VirtIOTestQueue, desc) },
        { VIRTIO_MMIO_QUEUE_AVAIL_LOW, VIRTIO_MMIO_QUEUE_AVAIL_HIGH,
          offsetof(VirtIOTestQueue, avail) },
        { VIRTIO_MMIO_QUEUE_USED_LOW, VIRTIO_MMIO_QUEUE_USED_HIGH,
          offsetof(VirtIOTestQueue, used) },
    };

    if (q->num <= UINT16_MAX) {
        vtest_zero(q->desc, 16 * (size_t)q->num);
        vtest_zero(q->avail, 6 + 2 * (size_t)q->num);
        vtest_zero(q->used, 6 + 8 * (size_t)q->num);
    }
    q->avail_idx = 0;
    vtest_write(base, VIRTIO_MMIO_QUEUE_SEL, q->index);
    g_assert_cmpuint(vtest_read(base, VIRTIO_MMIO_QUEUE_READY), ==, 0);
    vtest_write(base, VIRTIO_MMIO_QUEUE_NUM, q->num);
    for (size_t i = 0; i < G_N_ELEMENTS(addr_regs); i++) {
        uint64_t a = *(uint64_t *)((uint8_t *)q + addr_regs[i].off);

        vtest_write(base, addr_regs[i].lo, a);
        vtest_write(base, addr_regs[i].hi, a >> 32);
    }
    vtest_write(base, VIRTIO_MMIO_QUEUE_READY, 1);
}

void vtest_put16(uint64_t gpa, uint16_t val)
{
    val = GUINT16_TO_LE(val);
    memcpy(vtest_gpa(gpa), &val, 2);
}

void vtest_put_desc(VirtIOTestQueue *q, unsigned int i, uint64_t addr, uint32_t len,
                    uint16_t flags, uint16_t next)
{
    uint8_t *p = vtest_gpa(q->desc + 16 * i);
    uint64_t a = GUINT64_TO_LE(addr);
    uint32_t l = GUINT32_TO_LE(len);
    uint16_t f = GUINT16_TO_LE(flags), n = GUINT16_TO_LE(next);

    memcpy(p, &a, 8);
    memcpy(p + 8, &l, 4);
    memcpy(p + 12, &f, 2);
    memcpy(p + 14, &n, 2);
}

void vtest_publish(VirtIOTestQueue *q, uint16_t head)
{
    vtest_put16(q->avail + 4 + 2 * (q->avail_idx % q->num), head);
    q->avail_idx++;
    __atomic_store_n((uint16_t *)vtest_gpa(q->avail + 2), GUINT16_TO_LE(q->avail_idx),
                     __ATOMIC_RELEASE);
}

uint16_t vtest_used_idx(VirtIOTestQueue *q)
{
    return GUINT16_FROM_LE(__atomic_load_n((uint16_t *)vtest_gpa(q->used + 2),
                                           __ATOMIC_ACQUIRE));
}

void vtest_used_elem(VirtIOTestQueue *q, uint16_t i, uint32_t *id, uint32_t *len)
{
    uint8_t *p = vtest_gpa(q->used + 4 + 8 * (size_t)(i % q->num));

    memcpy(id, p, 4);
    memcpy(len, p + 4, 4);
    *id = GUINT32_FROM_LE(*id);
    *len = GUINT32_FROM_LE(*len);
}

bool vtest_wait_used(VirtIOTestQueue *q, uint16_t want)
{
    gint64 end = g_get_monotonic_time() + VTEST_WAIT_US;

    while (vtest_used_idx(q) != want) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(1000);
    }
    return true;
}

bool vtest_wait_uint(unsigned int *p, unsigned int want)
{
    gint64 end = g_get_monotonic_time() + VTEST_WAIT_US;

    while (__atomic_load_n(p, __ATOMIC_SEQ_CST) < want) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(1000);
    }
    return true;
}
