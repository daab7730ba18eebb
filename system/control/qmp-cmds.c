/* SPDX-License-Identifier: GPL-2.0-or-later */
/* QMP commands owned by system/: run state, reset, quit, name, KVM, CPUs, pmemsave. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "block/block.h"
#include "hw/boards.h"
#include "monitor/monitor.h"
#include "migration/misc.h"
#include "system/cpus.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "system/runstate.h"

StatusInfo *qmp_query_status(Error **errp)
{
    StatusInfo *info = g_new0(StatusInfo, 1);

    info->running = runstate_is_running();
    info->singlestep = false;
    info->status = runstate_get();
    return info;
}

static bool runstate_needs_reset(void)
{
    return runstate_check(RUN_STATE_INTERNAL_ERROR) || runstate_check(RUN_STATE_SHUTDOWN) ||
           runstate_check(RUN_STATE_GUEST_PANICKED);
}

bool qmp_stop(Error **errp)
{
    if (runstate_check(RUN_STATE_INMIGRATE)) {
        /* Like QEMU: do not start the guest once the incoming migration ends. */
        migration_set_autostart(false);
    } else {
        vm_stop(RUN_STATE_PAUSED);
    }
    return true;
}

bool qmp_cont(Error **errp)
{
    if (runstate_needs_reset()) {
        error_setg(errp, "Resetting the Virtual Machine is required");
        return false;
    }
    if (runstate_check(RUN_STATE_INMIGRATE)) {
        if (!migration_guest_ram_usable(errp)) {
            return false;
        }
        migration_set_autostart(true);
        return true;
    }
    if (!migration_allows_cont(errp)) {
        return false;
    }
    /* A completed migration's source, or a destination that could not, takes the images. */
    if (!migration_handover_take(errp)) {
        return false;
    }
    if (current_machine && current_machine->block) {
        blk_iostatus_reset_all(current_machine->block);
    }
    vm_start();
    return true;
}

bool qmp_system_reset(Error **errp)
{
    /*
     * QEMU always resets; ours would write the boot data into missing pages
     * and hang, or into the memory a live update handed over.
     */
    if (!migration_guest_ram_usable(errp) || !migration_guest_owned_here(errp)) {
        return false;
    }
    qemu_system_reset_now(SHUTDOWN_CAUSE_HOST_QMP_SYSTEM_RESET);
    return true;
}

bool qmp_system_powerdown(Error **errp)
{
    qemu_system_powerdown();
    return true;
}

bool qmp_quit(Error **errp)
{
    qemu_system_shutdown_request(SHUTDOWN_CAUSE_HOST_QMP_QUIT);
    return true;
}

NameInfo *qmp_query_name(Error **errp)
{
    NameInfo *info = g_new0(NameInfo, 1);

    info->name = g_strdup(qemu_get_name());
    return info;
}

UuidInfo *qmp_query_uuid(Error **errp)
{
    UuidInfo *info = g_new0(UuidInfo, 1);

    info->UUID = g_strdup(qemu_get_uuid());
    return info;
}

KvmInfo *qmp_query_kvm(Error **errp)
{
    KvmInfo *info = g_new0(KvmInfo, 1);

    info->enabled = kvm_state != NULL;
    info->present = access("/dev/kvm", R_OK | W_OK) == 0 || kvm_state != NULL;
    return info;
}

CpuInfoFastList *qmp_query_cpus_fast(Error **errp)
{
    CpuInfoFastList *head = NULL, **tail = &head;

    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);
        CpuInfoFast *info = g_new0(CpuInfoFast, 1);
        CpuInfoFastList *entry = g_new0(CpuInfoFastList, 1);

        info->cpu_index = cpu->cpu_index;
        info->qom_path = g_strdup_printf("/machine/unattached/device[%d]", cpu->cpu_index);
        info->thread_id = cpu->thread_id;
        info->target = SYS_EMU_TARGET_X86_64;
        entry->value = info;
        *tail = entry;
        tail = &entry->next;
    }
    return head;
}

bool qmp_pmemsave(int64_t val, int64_t size, const char *filename, Error **errp)
{
    g_autofree uint8_t *buf = NULL;
    uint64_t done = 0;
    int fd;

    if (size < 0) {
        error_setg(errp, "Parameter 'size' expects a non-negative value");
        return false;
    }
    if ((uint64_t)val + (uint64_t)size < (uint64_t)val) {
        error_setg(errp, "Invalid parameter 'val': range wraps around");
        return false;
    }
    if (!migration_guest_ram_usable(errp)) {
        return false;
    }
    fd = open(filename, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        error_setg_errno(errp, errno, "Could not open '%s'", filename);
        return false;
    }
    buf = g_malloc(1 * MiB);
    while (done < (uint64_t)size) {
        uint64_t n = MIN((uint64_t)size - done, 1 * MiB);

        /* Holes (no RAM) read as zero, like unassigned memory. */
        for (uint64_t off = 0; off < n;) {
            hwaddr a = val + done + off;
            const GuestRAMRange *r = guest_ram_lookup(a);
            uint64_t chunk = MIN(n - off, TARGET_PAGE_SIZE - (a & (TARGET_PAGE_SIZE - 1)));

            if (r) {
                chunk = MIN(n - off, r->size - (a - r->gpa));
                memcpy(buf + off, r->rb->host + r->offset + (a - r->gpa), chunk);
            } else {
                memset(buf + off, 0, chunk);
            }
            off += chunk;
        }
        if (write(fd, buf, n) != (ssize_t)n) {
            error_setg_errno(errp, errno, "writing memory to '%s' failed", filename);
            close(fd);
            return false;
        }
        done += n;
    }
    if (close(fd) < 0) {
        error_setg_errno(errp, errno, "writing memory to '%s' failed", filename);
        return false;
    }
    return true;
}
