/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mirror job: a copy of a drive's disk into a target node that
 * follows the guest's writes (docs/devel/mirror.md).
 *
 * How to use it (BQL):
 *
 *   MirrorOptions o = MIRROR_OPTIONS_DEFAULT;  then set sync, speed, ...
 *   job = mirror_start(bl, "job0", blk, source, target, &o, errp)
 *   ... BLOCK_JOB_READY: the target holds the disk and keeps following it
 *   job_user_cancel(job, false, errp)   the final copy, then BLOCK_JOB_COMPLETED
 *
 * @blk is the backend the guest writes through (its writes are tracked
 * through its write hook), or NULL for a node nobody writes.
 */
#ifndef BLOCK_MIRROR_H
#define BLOCK_MIRROR_H

#include "block/job.h"

typedef struct MirrorOptions {
    MirrorSyncMode sync;
    MirrorCopyMode copy_mode;
    uint64_t granularity;           /* a power of two in [512, 64 MiB] */
    uint64_t buf_size;              /* the copy's buffer: at most this in flight */
    int64_t speed;                  /* bytes/s, 0: unlimited */
    JobOnError on_source_error, on_target_error;    /* report, ignore (auto: report) */
    bool auto_finalize, auto_dismiss;
} MirrorOptions;

/*
 * QEMU's default is the target's cluster size (64 KiB for qcow2): a 4 KiB
 * guest write during the copy then sends 64 KiB again. 4 KiB chunks send
 * what was written (adjacent dirty chunks still go out as one run, up to
 * 1 MiB) for a bitmap of 32 KiB per GiB of disk: QEMU 7.2 sent 4.3 times
 * the data plus the guest's writes over NBD in migbench's storage scenario.
 */
#define MIRROR_DEFAULT_GRANULARITY  (4 * 1024)
#define MIRROR_DEFAULT_BUF_SIZE     (16 * 1024 * 1024)

void mirror_options_init(MirrorOptions *o);
Job *mirror_start(BlockLayer *bl, const char *job_id, BlockBackend *blk,
                  BlockDriverState *source, BlockDriverState *target,
                  const MirrorOptions *o, Error **errp);
/* Whether @bs is a mirror's source or target now (BQL): blockdev-del refuses it. */
bool mirror_node_busy(BlockLayer *bl, BlockDriverState *bs);

#endif
