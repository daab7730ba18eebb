/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cpr-transfer row of the outgoing modes: a live update on this host.
 * The guest's RAM never moves: while it runs, the old process hands the
 * memory's fds to the new one over the cpr channel and waits until the
 * new process, having mapped them and built its machine, hangs up (it
 * listens on the main channel by then). Then precopy's switchover runs
 * with nothing left to send: stop, vCPU and device state, the new
 * process's confirmation, its go. Dirty logging never starts: the page
 * source below has no pages. docs/devel/live-update.md tells the order and
 * why each fd crosses.
 */
#include "qemu/osdep.h"
#include <poll.h>
#include "qapi/error.h"
#include "qemu/cpr-fd.h"
#include "qemu/sockets.h"
#include "system/memory.h"
#include "migration/core/cpr-state.h"
#include "migration/core/options.h"
#include "migration/core/status.h"
#include "migration/transport/ram.h"
#include "migration/transport/ram-source.h"
#include "outgoing.h"
#include "cpr.h"

/* ---- the page source: every block is the new process's already ---- */

static bool cpr_ram_setup(void *src, QEMUFile *f, Error **errp)
{
    return true;
}

static bool cpr_ram_send_next(void *src, QEMUFile *f, RAMPageWriter *w)
{
    return false;
}

static uint64_t cpr_ram_pending(void *src, QEMUFile *f, bool exact)
{
    return 0;
}

static void cpr_ram_cleanup(void *src)
{
}

static void cpr_ram_fill_info(void *src, MigrationInfo *info)
{
}

const RAMPageSource cpr_ram_source = {
    .name = "cpr",
    .setup = cpr_ram_setup,
    .send_next = cpr_ram_send_next,
    .pending = cpr_ram_pending,
    .cleanup = cpr_ram_cleanup,
    .fill_info = cpr_ram_fill_info,
};

/* ---- the row ---- */

static bool cpr_transfer_selected(void)
{
    return migrate_mode() == MIG_MODE_CPR_TRANSFER;
}

static void cpr_transfer_init(MigrationState *s, void *ms)
{
    ram_select_source(&cpr_ram_source, ms);
}

/* QEMU's refusals, in its words; multifd and mapped-ram would carry nothing here. */
bool cpr_check_start(Error **errp)
{
    static const struct {
        MigrationCapability cap;
        const char *what;
    } refused[] = {
        { MIGRATION_CAPABILITY_POSTCOPY_RAM, "postcopy" },
        { MIGRATION_CAPABILITY_BACKGROUND_SNAPSHOT, "background snapshot" },
        { MIGRATION_CAPABILITY_MULTIFD, "multifd" },
        { MIGRATION_CAPABILITY_MAPPED_RAM, "mapped-ram" },
    };
    GPtrArray *rbs = ram_blocks();

    for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
        if (migrate_cap(refused[i].cap)) {
            error_setg(errp, "Cannot use %s with CPR", refused[i].what);
            return false;
        }
    }
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        if (!ram_block_fd_shared(rb)) {
            error_setg(errp, "Memory region %s is not compatible with CPR. share=on is "
                       "required for memory-backend objects, and aux-ram-share=on is "
                       "required.", rb->idstr);
            return false;
        }
    }
    if (rbs->len > CPR_STATE_MAX_FDS) {
        error_setg(errp, "cpr: %u RAM blocks, more than the %d a cpr state hands over",
                   rbs->len, CPR_STATE_MAX_FDS);
        return false;
    }
    return true;
}

typedef struct CprEntries {
    CprFdEntry *e;
    unsigned n;
} CprEntries;

static void cpr_add_preserved(const char *name, int fd, void *opaque)
{
    CprEntries *ce = opaque;

    /* Past the limit a socket stays behind: the new process then cannot bind its port. */
    if (ce->n < CPR_STATE_MAX_FDS) {
        ce->e[ce->n++] = (CprFdEntry) { .name = (char *)name, .fd = fd };
    }
}

unsigned cpr_fd_entries(CprFdEntry *e)
{
    GPtrArray *rbs = ram_blocks();
    CprEntries ce = { .e = e };

    /* The blocks never change after machine init; cpr_check_start counted them. */
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        e[ce.n++] = (CprFdEntry) { .name = rb->idstr, .fd = rb->fd, .size = rb->used_length };
    }
    /* Then what devices' backends keep open for the guest (hostfwd sockets). */
    cpr_fd_preserved_foreach(cpr_add_preserved, &ce);
    return ce.n;
}

static bool cpr_transfer_check_start(MigrationState *s, const char *uri, Error **errp)
{
    if (!s->cpr_uri) {
        error_setg(errp, "missing 'cpr' migration channel");
        return false;
    }
    return cpr_check_start(errp);
}

/*
 * Until the new process hangs up: it has mapped our memory and listens on
 * the main channel then (or it died, and the main connection will say so).
 * Polled, so that migrate_cancel ends the wait.
 */
static bool cpr_wait_hangup(MigrationState *s, int fd, Error **errp)
{
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, 50);
        char c;

        if (migrate_get_state(&s->state) == MIGRATION_STATUS_CANCELLING) {
            error_setg(errp, "cancelled while the new process started");
            return false;
        }
        if (r < 0 && errno != EINTR) {
            error_setg_errno(errp, errno, "cpr channel: poll");
            return false;
        }
        if (r <= 0) {
            continue;
        }
        r = read(fd, &c, 1);
        if (r == 0 || (r < 0 && errno == ECONNRESET)) {
            return true;
        }
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (r < 0) {
            error_setg_errno(errp, errno, "cpr channel");
        } else {
            error_setg(errp, "cpr channel: the new process sent bytes; it only hangs up");
        }
        return false;
    }
}

/* mig/src, the guest running: hand over the memory and wait for the new process. */
static bool cpr_transfer_before_connect(MigrationState *s, void *ms, Error **errp)
{
    CprFdEntry e[CPR_STATE_MAX_FDS];
    unsigned n;
    bool ok;
    int fd;

    fd = unix_connect_path(s->cpr_uri + strlen("unix:"), errp);
    if (fd < 0) {
        return false;
    }
    n = cpr_fd_entries(e);
    ok = cpr_state_send(fd, MIG_MODE_CPR_TRANSFER, e, n, errp) &&
         cpr_wait_hangup(s, fd, errp);
    close(fd);
    return ok;
}

/*
 * The rest of both live-update rows is precopy's switchover with nothing
 * left to send: their state is a PrecopyState (state_size), handed on.
 */
bool cpr_switchover_ready(MigrationState *s, void *ms, bool all_sent)
{
    return true;        /* nothing to send before the stop */
}

bool cpr_stream_start(MigrationState *s, void *ms, QEMUFile *f, Error **errp)
{
    return precopy_mode.stream_start(s, ms, f, errp);
}

bool cpr_complete(MigrationState *s, void *ms, QEMUFile *f, Error **errp)
{
    return precopy_mode.complete(s, ms, f, errp);
}

XDowntimeInfo *cpr_downtime_info(const MigrationState *s, void *ms)
{
    return precopy_mode.downtime_info(s, ms);
}

void cpr_cleanup(MigrationState *s, void *ms)
{
    precopy_mode.cleanup(s, ms);
}

const MigrationOutMode cpr_transfer_mode = {
    .name = "cpr-transfer",
    .hands_over_memory = true,
    .state_size = sizeof(PrecopyState),
    .selected = cpr_transfer_selected,
    .init = cpr_transfer_init,
    .check_start = cpr_transfer_check_start,
    .downtime_info = cpr_downtime_info,
    .before_connect = cpr_transfer_before_connect,
    .stream_start = cpr_stream_start,
    .switchover_ready = cpr_switchover_ready,
    .complete = cpr_complete,
    .cleanup = cpr_cleanup,
};
