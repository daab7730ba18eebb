/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the postcopy destination. The loader (mig/dst)
 * drives it through the stream's commands:
 *
 *   OPEN_RETURN_PATH  a writer on the same socket, back to the source
 *   ADVISE            page sizes agree; all RAM discarded (it will come from
 *                     the source, every byte of it)
 *   DISCARD           pages sent in precopy and dirtied since: dropped again
 *   LISTEN            RAM registered with userfaultfd (missing mode); the fault
 *                     thread "mig/pc-fault" asks the source for each page a
 *                     vCPU (or the VMM) touches; pages are placed atomically
 *   RUN               the guest starts, its memory still arriving
 *
 * Neither mig/dst nor mig/pc-fault takes the BQL once RAM is registered: a
 * BQL holder (a monitor command reading guest memory) may itself wait on a
 * missing page, which only these two threads can bring in.
 */
#ifndef MIGRATION_POSTCOPY_DST_H
#define MIGRATION_POSTCOPY_DST_H

#include <stdbool.h>
#include <stdint.h>
#include "qapi/qapi-types.h"

/* How postcopy moves the incoming side along (incoming.c's, so the two stay one state machine). */
typedef struct PostcopyDstOps {
    /* The incoming MigrationStatus (read with migrate_get_state()). */
    const int *state;
    /* mig/dst: the incoming MigrationStatus moves from @old to @new. */
    void (*set_state)(int old, int new_state);
    /* Main thread, BQL: start the guest (or leave it paused, as -S and the source say). */
    void (*start_guest)(void);
    /*
     * mig/dst, paused: wait for migrate-recover's connection; returns its
     * stream, which replaces @old (closed) as the incoming stream.
     */
    QEMUFile *(*wait_recover)(QEMUFile *old);
} PostcopyDstOps;

/* incoming.c, before any connection: a new load; forgets the last one's statistics. */
void postcopy_dst_reset(const PostcopyDstOps *ops);

/*
 * Main thread: the postcopy-preempt channel connected (owned from now on).
 * Its pages are placed by "mig/pc-preempt" once LISTEN came.
 */
void postcopy_dst_set_preempt_channel(QEMUFile *f);

/* ---- mig/dst, from the stream's commands (loadvm-cmd.c); false with @errp set ---- */
bool postcopy_dst_open_return_path(QEMUFile *from_src, Error **errp);
bool postcopy_dst_ping(uint32_t value, Error **errp);
bool postcopy_dst_advise(uint64_t pagesize_summary, uint64_t target_page_size, Error **errp);
bool postcopy_dst_discard(const char *block, uint64_t start, uint64_t len, Error **errp);
bool postcopy_dst_listen(Error **errp);
bool postcopy_dst_run(Error **errp);

/* Recovery: send the source the pages @block has here (on the return path). */
bool postcopy_dst_recv_bitmap(const char *block, Error **errp);
/* Recovery: the source goes on; acknowledge, and ask again for what vCPUs still wait on. */
bool postcopy_dst_resume(Error **errp);

/*
 * mig/dst: the stream @f broke after LISTEN (@why). Pauses (postcopy-paused)
 * until migrate-recover brings a new connection, and returns its stream,
 * or NULL if there will be none.
 */
QEMUFile *postcopy_dst_pause(QEMUFile *f, const Error *why);

/* mig/dst: LISTEN was processed: the guest's memory is being placed, the stream needs no vmdesc. */
bool postcopy_dst_listening(void);
/*
 * mig/dst, the load ended: @ok = the whole stream arrived. Success
 * unregisters RAM (any page never sent is the zero page it was on the
 * source) and tells the source; failure leaves RAM registered and the
 * guest's vCPUs waiting for pages, the postcopy-paused state.
 */
void postcopy_dst_end(bool ok);

/* Main thread, BQL: query-migrate on the destination. */
void postcopy_dst_fill_info(MigrationInfo *info);

#endif
