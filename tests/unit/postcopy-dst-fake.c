/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A postcopy destination that refuses every command, for unit tests of the
 * loader (loadvm.c, loadvm-cmd.c) without userfaultfd, RAM or threads.
 * Counts what reached it, so a test sees whether the loader's own checks
 * stopped a command first.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "postcopy-dst-fake.h"
#include "migration/incoming/postcopy-dst.h"
#include "migration/incoming/mapped-ram-in.h"
#include "migration/core/options.h"
#include "migration/incoming/postcopy-rp-dst.h"
#include "migration/transport/ram.h"

int postcopy_fake_calls;

static bool refuse(const char *what, Error **errp)
{
    postcopy_fake_calls++;
    error_setg(errp, "fake postcopy destination: %s refused", what);
    return false;
}

void postcopy_dst_reset(const PostcopyDstOps *ops)
{
}

bool postcopy_dst_open_return_path(QEMUFile *from_src, Error **errp)
{
    return refuse("OPEN_RETURN_PATH", errp);
}

bool postcopy_dst_ping(uint32_t value, Error **errp)
{
    return refuse("PING", errp);
}

bool postcopy_dst_advise(uint64_t pagesize_summary, uint64_t target_page_size, Error **errp)
{
    return refuse("ADVISE", errp);
}

bool postcopy_dst_discard(const char *block, uint64_t start, uint64_t len, Error **errp)
{
    return refuse("DISCARD", errp);
}

bool postcopy_dst_listen(Error **errp)
{
    return refuse("LISTEN", errp);
}

bool postcopy_dst_run(Error **errp)
{
    return refuse("RUN", errp);
}

bool postcopy_dst_listening(void)
{
    return false;
}

void postcopy_dst_end(bool ok)
{
}

void postcopy_dst_fill_info(MigrationInfo *info)
{
}

bool postcopy_dst_recv_bitmap(const char *block, Error **errp)
{
    return refuse("RECV_BITMAP", errp);
}

bool postcopy_dst_resume(Error **errp)
{
    return refuse("POSTCOPY_RESUME", errp);
}

QEMUFile *postcopy_dst_pause(QEMUFile *f, const Error *why)
{
    return NULL;
}

/* A stream that names mapped-ram is refused too: there is no file here. */
bool migrate_mapped_ram(void)
{
    return false;
}

/* Off here: a stream that says x-ignore-shared is refused (the ends must agree). */
bool migrate_ignore_shared(void)
{
    return false;
}

/* Nor is this a live update's destination (no cpr mode). */
bool migrate_ram_ignore_shared(void)
{
    return false;
}

bool mapped_ram_in_check_file(QEMUFile *f, int64_t stream_start, MappedRamIntegrity **integ,
                              int64_t *stream_end, Error **errp)
{
    return refuse("mapped-ram", errp);
}

/* ...so no block header of a mapped-ram file is ever read... */
bool mapped_ram_in_block(QEMUFile *f, RAMBlock *rb, void *opaque, Error **errp)
{
    g_assert_not_reached();
}

/* ...and the "ram" section is never told its pages are in a file. */
void ram_load_set_map(bool (*map_block)(QEMUFile *f, RAMBlock *rb, void *opaque, Error **errp),
                      void *opaque)
{
    g_assert_not_reached();
}

/* ...so no integrity record is ever read. */
void mri_free(MappedRamIntegrity *r)
{
    g_assert(!r);
}

/* No return path: a damaged vmdesc after a whole load is only a warning. */
bool rp_dst_is_open(void)
{
    return false;
}

bool rp_dst_confirming(void)
{
    return false;
}
