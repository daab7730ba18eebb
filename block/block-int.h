/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to block/: the layer's instance, a node's private part and a
 * backend. The public contract is include/block/block.h.
 *
 * Files: block.c (the layer, opening nodes, permissions and locks),
 * activate.c (inactivation and activation), io.c (node requests), backend.c (backends: attach, requests,
 * accounting, error policy), drivers.c (the driver rows), file-posix.c and
 * raw.c (two rows), nbd*.c (the nbd client row, nbd-int.h), blockdev.c (-drive, -blockdev), block-qmp.c (QMP and
 * HMP queries).
 */
#ifndef BLOCK_BLOCK_INT_H
#define BLOCK_BLOCK_INT_H

#include <pthread.h>
#include "block/block.h"

typedef enum BlockdevDetectZeroes {
    BDRV_DETECT_ZEROES_OFF,
    BDRV_DETECT_ZEROES_ON,
    BDRV_DETECT_ZEROES_UNMAP,
} BlockdevDetectZeroes;

/* A node: the public part first, so a BlockDriverState * is a BdrvNode *. */
typedef struct BdrvNode {
    BlockDriverState bs;
    /* How the options were given, for the wording of "unknown option" (open only). */
    bool from_drive;
    const char *opt_prefix;         /* "file." for a child, "" for the top (open only) */
    BlockdevDetectZeroes detect_zeroes;
    /* Its format was probed (raw): a write must not make block 0 look like another (fixed). */
    bool probed;
    /*
     * backing= was given (open only): the backing node is @backing_node,
     * or none (JSON null, as libvirt passes it), whatever the image's
     * header names.
     */
    bool backing_given;
    BlockDriverState *backing_node;
    /*
     * Its length, for the bounds check of every request; read by any
     * request thread, written under the BQL with no request in flight
     * (open, activate, truncate). Protocol nodes are growable and not
     * checked.
     */
    int64_t length;
    /* What its parents and backends need of it (BQL; block.c's recompute). */
    unsigned need;
    unsigned locked;                /* what set_lock last took (BQL) */
} BdrvNode;

static inline BdrvNode *bdrv_node(BlockDriverState *bs)
{
    return (BdrvNode *)bs;
}

struct BlockLayer {
    GPtrArray *nodes;               /* BlockDriverState *, children before parents (BQL) */
    GPtrArray *backends;            /* BlockBackend * (BQL) */
    unsigned node_counter;          /* for "#blockNNN" names (BQL) */
    unsigned drive_counter;         /* for -drive ids QEMU makes up ("none0") (BQL) */
    bool incoming;                  /* open new nodes inactive (BQL) */
    struct JobRegistry *jobs;       /* block jobs (include/block/job.h) (BQL) */
};

/* query-blockstats' counters of one backend (stats_lock). */
typedef struct BlockAcctCounters {
    uint64_t bytes[BLOCK_ACCT__MAX];
    uint64_t ops[BLOCK_ACCT__MAX];
    uint64_t failed_ops[BLOCK_ACCT__MAX];
    uint64_t total_time_ns[BLOCK_ACCT__MAX];
    uint64_t merged[BLOCK_ACCT__MAX];       /* requests a device merged into another */
    uint64_t wr_highest_offset;
    int64_t last_ns;                /* the end of the last request, for idle_time_ns */
} BlockAcctCounters;

typedef enum BlockIOStatus {
    BLOCK_IOSTATUS_OK,
    BLOCK_IOSTATUS_FAILED,
    BLOCK_IOSTATUS_NOSPACE,
} BlockIOStatus;

struct BlockBackend {
    BlockLayer *bl;
    char *name;                     /* the -drive id, or "" (fixed) */
    /*
     * Holds a reference. Changed only by blk_replace_root (BQL, with
     * root_lock held for writing: a mirror's pivot); requests read it
     * under root_lock, lock-free readers with an acquire load (blk_bs).
     */
    BlockDriverState *root;
    char *dev_name;                 /* the device that took it, or NULL (BQL) */
    unsigned perm;                  /* BLK_PERM_* its device asked for (BQL) */
    bool anonymous;                 /* made by blk_attach on a node name: freed at detach */
    bool user;                      /* blk_attach_user's (an export): no drive, no device */
    bool write_cache;               /* cache=writeback, none, unsafe (fixed) */
    char *if_name;                  /* -drive if=, NULL for a -blockdev node's (fixed) */
    BlockdevOnError on_read_error, on_write_error;     /* fixed */
    BlockIOStatus iostatus;         /* after a stop on error (BQL) */
    GMutex stats_lock;
    BlockAcctCounters stats;        /* stats_lock */
    /*
     * Every write holds it for reading around the node's request and the
     * hook; the writer side (writer-preferring, so a stream of guest
     * writes cannot starve it) installs a hook or quiesces the writes.
     */
    pthread_rwlock_t hook_lock;
    const BlkWriteHook *write_hook; /* hook_lock */
    /*
     * Every request holds it for reading from its first look at root to
     * its end (before hook_lock, for writes); the writer side quiesces
     * the drive so that root can change under no request.
     */
    pthread_rwlock_t root_lock;
};

/* ---- block.c ---- */
/*
 * Open one node from @opts (its keys relative to it: "driver", "filename",
 * "file.filename", ...), children first. @file: its file child already
 * open (a probed -drive), or NULL. @flags: the parent's, which the node's
 * own options override. Takes ownership of nothing.
 */
BlockDriverState *bdrv_open_opts(BlockLayer *bl, QemuOpts *opts, BlockDriverState *file,
                                 int flags, bool from_drive, const char *prefix,
                                 Error **errp);
void bdrv_unref(BlockDriverState *bs);
/* The format whose probe is surest of @file's first bytes; raw when none is. */
const BlockDriver *bdrv_probe_format(BlockDriverState *file);
/* Take the image locks every node's users need now; on failure nothing changed. */
bool bdrv_refresh_perms(BlockLayer *bl, Error **errp);
/* A driver's open: refuse options it does not know, in QEMU's words for -drive or -blockdev. */
bool bdrv_check_options(BlockDriverState *bs, QemuOpts *opts, const char *const *known,
                        Error **errp);
/*
 * The protocol row for a filename where no driver is named: the row whose
 * protocol_prefixes it starts with ("nbd:..."), else "file".
 */
const BlockDriver *bdrv_find_protocol(const char *filename);
/*
 * QEMU's node-name and id rule: letters, digits, '-', '.', '_', starting
 * with a letter. Inline: nodes, drives and jobs all check it.
 */
static inline bool block_id_wellformed(const char *id)
{
    if (!g_ascii_isalpha(id[0])) {
        return false;
    }
    for (const char *p = id; *p; p++) {
        if (!g_ascii_isalnum(*p) && !strchr("-._", *p)) {
            return false;
        }
    }
    return true;
}

/* ---- drivers.c ---- */
/* The rows, NULL-terminated. */
extern const BlockDriver *const bdrv_drivers[];
extern const BlockDriver bdrv_file;
extern const BlockDriver bdrv_raw;
extern const BlockDriver bdrv_qcow2;             /* block/qcow2.c */
extern const BlockDriver bdrv_nbd;               /* block/nbd.c */

/* ---- backend.c ---- */
BlockBackend *blk_new(BlockLayer *bl, const char *name, BlockDriverState *root);
void blk_free(BlockBackend *blk);
BlockBackend *blk_by_name(BlockLayer *bl, const char *name);
/* Whether werror/rerror may stop the guest: io-status and BLOCK_IO_ERROR's nospace shown. */
bool blk_iostatus_enabled(BlockBackend *blk);


#endif
