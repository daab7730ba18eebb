/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qcow2 (versions 2 and 3) inside the format driver: the on-disk layout,
 * the node's state and the parts' interfaces. Only block/qcow2*.c and
 * their tests include this; everyone else sees the driver row
 * (bdrv_qcow2, listed in block/drivers.c) through include/block/block.h.
 *
 * The layout (docs/interop/qcow2.txt, the QEMU project's specification):
 * everything big-endian; a header in cluster 0; a guest offset maps
 * through the L1 table (one 8-byte entry per L2 table) and an L2 table
 * (one cluster of 8-byte entries, one per data cluster) to a host
 * cluster; every host cluster in use has a reference count, found
 * through the refcount table (8-byte entries, one per refcount block)
 * and a refcount block (one cluster of 2^refcount_order-bit entries).
 *
 * Parts: qcow2-header.c (parse and check the header and its extensions,
 * pure), qcow2-cache.c (write-back caches of L2 tables and refcount
 * blocks), qcow2-refcount.c (reference counts, allocation and freeing),
 * qcow2-cluster.c (guest offset -> L2 entry, L2 table allocation),
 * qcow2-io.c (one guest cluster's data: read, copy-on-write), qcow2.c (the driver row: open, requests, flush, migration).
 */
#ifndef BLOCK_QCOW2_H
#define BLOCK_QCOW2_H

#include "qemu/osdep.h"
#include "block/block.h"

#define QCOW2_MAGIC             0x514649fbu     /* "QFI\xfb" */
#define QCOW2_V2_HEADER_LEN     72
#define QCOW2_V3_HEADER_LEN     104
#define QCOW2_MIN_CLUSTER_BITS  9
#define QCOW2_MAX_CLUSTER_BITS  21
#define QCOW2_MAX_BACKING_NAME  1023
/* Bounds QEMU also enforces, so an image either accepts opens both. */
#define QCOW2_MAX_L1_BYTES      (32 * 1024 * 1024)
#define QCOW2_MAX_RCT_BYTES     (8 * 1024 * 1024)
#define QCOW2_MAX_SNAPSHOTS     65536

/* Header feature bits. */
#define QCOW2_INCOMPAT_DIRTY        (1ull << 0)
#define QCOW2_INCOMPAT_CORRUPT      (1ull << 1)
#define QCOW2_INCOMPAT_DATA_FILE    (1ull << 2)
#define QCOW2_INCOMPAT_COMPRESSION  (1ull << 3)
#define QCOW2_INCOMPAT_EXTL2        (1ull << 4)
#define QCOW2_INCOMPAT_KNOWN        0x1full
#define QCOW2_COMPAT_LAZY_REFCOUNTS (1ull << 0)

/* Header extension types. */
#define QCOW2_EXT_END               0x00000000u
#define QCOW2_EXT_BACKING_FORMAT    0xe2792acau
#define QCOW2_EXT_FEATURE_TABLE     0x6803f857u

/* L1 and L2 entries. */
#define QCOW2_OFLAG_COPIED      (1ull << 63)    /* refcount is exactly 1: write in place */
#define QCOW2_OFLAG_COMPRESSED  (1ull << 62)
#define QCOW2_OFLAG_ZERO        (1ull << 0)     /* v3 L2: reads as zeroes */
#define QCOW2_OFFSET_MASK       0x00fffffffffffe00ull   /* bits 9-55 */
#define QCOW2_L1_RESERVED       0x7f000000000001ffull
#define QCOW2_L2_RESERVED       0x3f000000000001feull
#define QCOW2_RCT_OFFSET_MASK   0xfffffffffffffe00ull

/* What the fixed header says (host byte order), and its extensions. */
typedef struct Qcow2Header {
    uint32_t version;
    uint64_t backing_file_offset;
    uint32_t backing_file_size;
    uint32_t cluster_bits;
    uint64_t size;
    uint32_t crypt_method;
    uint32_t l1_size;
    uint64_t l1_table_offset;
    uint64_t refcount_table_offset;
    uint32_t refcount_table_clusters;
    uint32_t nb_snapshots;
    uint64_t snapshots_offset;
    uint64_t incompatible_features;
    uint64_t compatible_features;
    uint64_t autoclear_features;
    uint32_t refcount_order;
    uint32_t header_length;
    uint8_t compression_type;
    char *backing_file;             /* NULL: none; owned */
    char *backing_format;           /* NULL: not recorded; owned */
} Qcow2Header;

/*
 * qcow2_header_parse: check the header in @buf (the image's first
 * cluster, or all of a shorter file, zero-padded to @len) and fill @h.
 * @writable: the node is opened read-write (the dirty, corrupt and
 * snapshot checks differ). Every offset and length is checked against the
 * format's and QEMU's limits; nothing is read outside @buf. Returns 0, or
 * -errno with @errp set (QEMU's messages) and nothing left to free.
 */
int qcow2_header_parse(Qcow2Header *h, const uint8_t *buf, size_t len, bool writable,
                       Error **errp);
void qcow2_header_free(Qcow2Header *h);
/* The row's get_info: query-block's cluster-size, dirty-flag and format-specific. BQL. */
void qcow2_get_info(BlockDriverState *bs, BdrvFormatInfo *info);
/* How sure @buf's first bytes are a qcow2 image (the row's probe). */
int qcow2_probe(const uint8_t *buf, size_t len);

/*
 * A write-back cache of cluster-sized tables (L2 tables, refcount blocks),
 * kept as they are on disk (big-endian). Owner: BDRVQcow2State.lock.
 * A dirty table of a cache with @depends is written only after
 * @depends's dirty tables are on stable storage: an L2 entry must never
 * reach the disk before the refcount that makes its cluster in use (a
 * crash would then let the cluster be allocated twice); a leak is the
 * worst a crash may leave.
 */
typedef struct Qcow2CacheEntry {
    uint64_t offset;                /* host offset of the table; 0: empty slot */
    uint8_t *table;                 /* one cluster */
    uint64_t last_use;              /* the cache's tick at the last get */
    bool dirty;                     /* differs from the disk */
    /*
     * The dependency's whole writebacks that a completed flush must cover
     * before this table may be written: one more than it had when the
     * table was last changed (qcow2_cache_mark_dirty), so every refcount
     * change made before that is on stable storage first.
     */
    uint64_t dep_need;
} Qcow2CacheEntry;

typedef struct Qcow2Cache {
    Qcow2CacheEntry *entries;
    int nb_entries;
    uint64_t tick;
    struct Qcow2Cache *depends;     /* written back (and flushed) before ours */
    uint64_t writebacks;            /* whole writebacks done (qcow2_cache_writeback) */
    uint64_t flushed;               /* of those, how many a completed flush began after */
} Qcow2Cache;

/* The node's state (bs->opaque). */
typedef struct BDRVQcow2State {
    /* Fixed after open (and after activate, which runs with no request). */
    BlockDriverState *bs;
    Qcow2Header h;
    unsigned cluster_bits;
    uint64_t cluster_size;
    unsigned l2_bits;               /* log2 of entries per L2 table */
    unsigned rb_bits;               /* log2 of entries per refcount block */
    bool writable;

    /*
     * Held shared by every request that maps guest offsets to host clusters
     * and then does data I/O outside @lock; held exclusive by the requests
     * that free clusters (discard, write_zeroes with MAY_UNMAP), so a host
     * cluster is never reused while a request still reads or writes it.
     */
    GRWLock io_lock;
    /* Every field below. Lock order: io_lock, then lock. */
    GMutex lock;
    uint64_t *l1;                   /* host byte order, as on disk otherwise */
    uint32_t l1_size;
    uint64_t *rct;                  /* refcount table, host byte order */
    uint64_t rct_entries;
    uint64_t rct_top;               /* entries at and past this index are 0 */
    uint64_t rct_offset;
    uint32_t rct_clusters;
    Qcow2Cache l2_cache;            /* depends on refblock_cache */
    Qcow2Cache refblock_cache;
    uint64_t free_hint;             /* no free cluster below this index */
    uint64_t end_cluster;           /* no cluster in use at or past this index */
    bool corrupt;                   /* inconsistent metadata seen: no more writes */
    /*
     * Guest cluster indexes whose allocating write is between its prepare
     * and commit (its data being written without @lock); another write to
     * one waits on @alloc_cond, so a guest cluster is allocated once.
     */
    GArray *allocating;
    GCond alloc_cond;
    bool inactive;                  /* between inactivate and activate: -EPERM */
} BDRVQcow2State;

/* qcow2-cache.c (all under s->lock) */
void qcow2_cache_init(Qcow2Cache *c, int nb_entries, uint64_t cluster_size, Qcow2Cache *depends);
void qcow2_cache_destroy(Qcow2Cache *c);
/* The table at host @offset: read from the file, or zeroed when @fresh (a new table). */
int qcow2_cache_get(BDRVQcow2State *s, Qcow2Cache *c, uint64_t offset, bool fresh,
                    Qcow2CacheEntry **out);
int qcow2_cache_writeback(BDRVQcow2State *s, Qcow2Cache *c);
/* Only the dirty tables whose dependency is already flushed (qcow2_flush: no flush here). */
int qcow2_cache_writeback_ready(BDRVQcow2State *s, Qcow2Cache *c);
/* A table of @c was changed: dirty, and what it depends on from now (dep_need). */
void qcow2_cache_mark_dirty(Qcow2Cache *c, Qcow2CacheEntry *e);
bool qcow2_cache_is_dirty(const Qcow2Cache *c);
void qcow2_cache_forget(Qcow2Cache *c, uint64_t offset);    /* a freed table */
void qcow2_cache_drop_all(Qcow2Cache *c);                   /* activate: reread later */
/* bdrv_flush(s->bs->file), and both caches' tables count as stable after it. */
int qcow2_flush_file(BDRVQcow2State *s);
/*
 * The same with s->lock dropped around the flush (held on entry and on
 * return): what the caches wrote before it counts as stable after it;
 * other requests go on meanwhile.
 */
int qcow2_flush_file_unlocked(BDRVQcow2State *s);

/* qcow2-refcount.c (all under s->lock) */
int qcow2_refcount_get(BDRVQcow2State *s, uint64_t cluster, uint64_t *refcount);
/* One free cluster, its refcount set to 1; its host offset in *offset. */
int qcow2_alloc_cluster(BDRVQcow2State *s, uint64_t *offset);
/* The cluster at host @offset if it is free and already has a refcount block: -EBUSY if not. */
int qcow2_alloc_cluster_at(BDRVQcow2State *s, uint64_t offset);
/* Drop one reference to the cluster at @offset; at 0 it may be reused and is punched. */
int qcow2_free_cluster(BDRVQcow2State *s, uint64_t offset);
/* Header, L1 and refcount table ranges: data must never be written there. */
bool qcow2_overlaps_metadata(BDRVQcow2State *s, uint64_t offset, uint64_t len);
/* L2 tables (named by the L1 table) and refcount blocks: data must not go there either. */
bool qcow2_overlaps_tables(BDRVQcow2State *s, uint64_t offset, uint64_t len);
/* A refused write or inconsistent table: stop writing, say so once, mark the header. */
int qcow2_mark_corrupt(BDRVQcow2State *s, const char *why);

/* qcow2-cluster.c (all under s->lock) */
/*
 * The L2 entry for guest @offset: *entry is 0 where no L2 table exists.
 * With @alloc_l2, a missing L2 table is allocated first and *slot points
 * at the entry inside the cached table (mark the cache entry dirty through
 * *ce after changing it); without it, *slot may be NULL.
 */
int qcow2_get_l2_entry(BDRVQcow2State *s, uint64_t offset, bool alloc_l2, uint64_t *entry,
                       Qcow2CacheEntry **ce, uint8_t **slot);
/* Replace the L2 entry for guest @offset (its L2 table exists). */
int qcow2_set_l2_entry(BDRVQcow2State *s, uint64_t offset, uint64_t entry);
/* Write the L1 entry @index to the file (write-through: L1 changes are rare). */
int qcow2_write_l1_entry(BDRVQcow2State *s, uint32_t index);
/*
 * The row's block_status: from the L2 entries, the run of clusters of one
 * kind from @offset (unallocated ones read as zeroes, or as the backing
 * image's data, which this reports as data). Takes s->lock.
 */
int qcow2_block_status(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                       uint64_t *pnum, unsigned *status);
/* Write back both caches, dependencies first. */
int qcow2_writeback_all(BDRVQcow2State *s);

/* qcow2-io.c: one guest cluster's data */
typedef enum Qcow2ClusterType {
    QCOW2_CLUSTER_UNALLOCATED,      /* the backing image's, or zeroes */
    QCOW2_CLUSTER_ZERO,             /* v3 zero flag, no host cluster */
    QCOW2_CLUSTER_ZERO_ALLOC,       /* v3 zero flag, a host cluster kept for later writes */
    QCOW2_CLUSTER_NORMAL,
    QCOW2_CLUSTER_COMPRESSED,
} Qcow2ClusterType;

/* What an L2 entry names (inline: every file of the driver asks). */
static inline Qcow2ClusterType qcow2_classify(BDRVQcow2State *s, uint64_t entry)
{
    if (entry & QCOW2_OFLAG_COMPRESSED) {
        return QCOW2_CLUSTER_COMPRESSED;
    }
    if (s->h.version >= 3 && (entry & QCOW2_OFLAG_ZERO)) {
        return (entry & QCOW2_OFFSET_MASK) ? QCOW2_CLUSTER_ZERO_ALLOC : QCOW2_CLUSTER_ZERO;
    }
    return (entry & QCOW2_OFFSET_MASK) ? QCOW2_CLUSTER_NORMAL : QCOW2_CLUSTER_UNALLOCATED;
}
/* A data cluster's host offset is aligned (else: corrupt, -EIO). */
int qcow2_check_host(BDRVQcow2State *s, uint64_t entry, uint64_t guest);
/*
 * Bytes [@in_off, @in_off + @len) of the guest cluster at @guest (cluster
 * aligned) whose L2 entry is @entry, to/from the request's iovec at
 * @iov_off. For reads, @len may run on into the following clusters:
 * normal ones that follow on the host too, or ones of the same kind
 * without data (unallocated; zero). Reads run without s->lock (the caller checked a data
 * cluster's offset under it); the copy-on-write runs under it.
 */
int qcow2_read_cluster(BDRVQcow2State *s, uint64_t guest, uint64_t entry, uint64_t in_off,
                       uint64_t len, const struct iovec *iov, int niov, uint64_t iov_off);
/*
 * An allocating write (copy-on-write) of one guest cluster: s->lock held
 * on entry and on return, dropped around the new cluster's data write
 * with the guest cluster's index in s->allocating (qcow2_cluster_allocating
 * says so to a second writer, which waits on s->alloc_cond).
 */
int qcow2_cow_write(BDRVQcow2State *s, uint64_t guest, uint64_t entry, uint64_t in_off,
                    uint64_t len, const struct iovec *iov, int niov, uint64_t iov_off);
bool qcow2_cluster_allocating(BDRVQcow2State *s, uint64_t index);
/*
 * Whole new clusters from guest @guest (cluster aligned; @entry its L2
 * entry), as many as follow that read as unallocated or zero, up to
 * @max_bytes, into contiguous new host clusters with one host write (a
 * 1 MiB write was 16 allocations and 16 writes, which ext4 serialises on
 * the file's lock as it grows). s->lock held, dropped around the write.
 * *@written: the bytes done (whole clusters); -EAGAIN: not such a run
 * (the caller writes one cluster its usual way).
 */
int qcow2_write_new_run(BDRVQcow2State *s, uint64_t guest, uint64_t entry, uint64_t max_bytes,
                        const struct iovec *iov, int niov, uint64_t iov_off, uint64_t *written);
/* Drop the references a compressed cluster's data holds. */
int qcow2_free_compressed(BDRVQcow2State *s, uint64_t entry);
int qcow2_iov_slice(const struct iovec *iov, int niov, uint64_t off, uint64_t len,
                    struct iovec *out);
void qcow2_iov_copy(const struct iovec *iov, int niov, uint64_t off, uint8_t *buf,
                    uint64_t len, bool to_iov);
void qcow2_iov_zero(const struct iovec *iov, int niov, uint64_t off, uint64_t len);

extern const BlockDriver bdrv_qcow2;

#endif
