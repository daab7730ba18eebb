/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qcow2's header and header extensions: parsed from the image's first
 * cluster and checked before anything uses them. Pure: no I/O, no state.
 *
 * The header comes from the image, i.e. from whoever made the file: every
 * offset is checked for alignment and range, every length against the
 * buffer and the format's limits, before a table is read or allocated.
 * Messages are QEMU 7.2's where it has one (checked by running qemu-img
 * and qemu-io on the same bytes), so a user sees the same refusal from
 * both programs.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "block/qcow2-int.h"

int qcow2_probe(const uint8_t *buf, size_t len)
{
    /*
     * Any version from 2 on, as QEMU probes: an image of a version we do
     * not know is refused by open in QEMU's words, not taken for raw
     * (version 1 is QEMU's older "qcow" format, not ours).
     */
    if (len >= 8 && ldl_be_p(buf) == QCOW2_MAGIC && ldl_be_p(buf + 4) >= 2) {
        return 100;
    }
    return 0;
}

void qcow2_header_free(Qcow2Header *h)
{
    g_free(h->backing_file);
    g_free(h->backing_format);
    h->backing_file = NULL;
    h->backing_format = NULL;
}

static bool offset_ok(uint64_t offset, uint64_t cluster_size)
{
    /* Cluster-aligned and within the 56 bits an L2 entry can hold. */
    return (offset & (cluster_size - 1)) == 0 && offset <= QCOW2_OFFSET_MASK;
}

/* The extensions between the fixed header and @end (the backing name or the cluster's end). */
static int parse_extensions(Qcow2Header *h, const uint8_t *buf, uint64_t start, uint64_t end,
                            Error **errp)
{
    uint64_t off = start;

    while (off + 8 <= end) {
        uint32_t type = ldl_be_p(buf + off);
        uint32_t len = ldl_be_p(buf + off + 4);

        off += 8;
        if (type == QCOW2_EXT_END) {
            break;
        }
        if (len > end - off) {
            error_setg(errp, "qcow2: header extension 0x%x is too large (%u bytes)", type, len);
            return -EINVAL;
        }
        if (type == QCOW2_EXT_BACKING_FORMAT) {
            /* A format name: QEMU keeps it in 16 bytes with the NUL. */
            if (len >= 16) {
                error_setg(errp, "ERROR: ext_backing_format: len=%u too large (>=16)", len);
                return -EINVAL;
            }
            g_free(h->backing_format);
            h->backing_format = g_strndup((const char *)buf + off, len);
        }
        /*
         * The feature name table, bitmaps (an autoclear feature we clear on
         * a read-write open), and unknown extensions are skipped: the
         * incompatible bits already refused what we cannot honour.
         */
        off += QEMU_ALIGN_UP((uint64_t)len, 8);
    }
    return 0;
}

static int check_features(const Qcow2Header *h, bool writable, Error **errp)
{
    uint64_t unknown = h->incompatible_features & ~QCOW2_INCOMPAT_KNOWN;

    if (unknown) {
        error_setg(errp, "Unsupported qcow2 feature(s): Unknown incompatible feature: %" PRIx64,
                   unknown);
        return -ENOTSUP;
    }
    if (h->incompatible_features & QCOW2_INCOMPAT_DATA_FILE) {
        error_setg(errp, "Unsupported qcow2 feature(s): external data file");
        return -ENOTSUP;
    }
    if (h->incompatible_features & QCOW2_INCOMPAT_EXTL2) {
        error_setg(errp, "Unsupported qcow2 feature(s): extended L2 entries");
        return -ENOTSUP;
    }
    if (h->compression_type == 0 && (h->incompatible_features & QCOW2_INCOMPAT_COMPRESSION)) {
        error_setg(errp, "qcow2: Compression type incompatible feature bit must not be set");
        return -EINVAL;
    }
    if (h->compression_type != 0 && !(h->incompatible_features & QCOW2_INCOMPAT_COMPRESSION)) {
        error_setg(errp, "qcow2: Compression type incompatible feature bit must be set");
        return -EINVAL;
    }
    if (h->compression_type > 1) {
        error_setg(errp, "qcow2: unknown compression type: %u", h->compression_type);
        return -EINVAL;
    }
    if (h->compression_type == 1) {
        error_setg(errp, "Unsupported qcow2 feature(s): zstd compression");
        return -ENOTSUP;
    }
    if (writable && (h->incompatible_features & QCOW2_INCOMPAT_CORRUPT)) {
        error_setg(errp, "qcow2: Image is corrupt; cannot be opened read/write");
        return -EACCES;
    }
    /*
     * QEMU repairs a dirty image (lazy refcounts not written back) on a
     * read-write open; we do not rebuild refcounts, so we refuse rather
     * than allocate over clusters whose refcount is stale. Reads do not
     * use refcounts: a read-only open is safe.
     */
    if (writable && (h->incompatible_features & QCOW2_INCOMPAT_DIRTY)) {
        error_setg(errp, "qcow2: Image is dirty (its refcounts were not written back); "
                   "repair it with 'qemu-img check -r all' before opening it read/write");
        return -ENOTSUP;
    }
    return 0;
}

static int check_encryption(const Qcow2Header *h, Error **errp)
{
    switch (h->crypt_method) {
    case 0:
        return 0;
    case 1:
        error_setg(errp, "Use of AES-CBC encrypted qcow2 images is no longer supported in "
                   "system emulators");
        error_append_hint(errp, "You can use 'qemu-img convert' to convert your image to an "
                          "alternative supported format, such as unencrypted qcow2, or raw "
                          "with the LUKS format instead.\n");
        return -ENOTSUP;
    case 2:
        error_setg(errp, "qcow2: LUKS encrypted images are not supported");
        return -ENOTSUP;
    default:
        error_setg(errp, "Unsupported encryption method %u", h->crypt_method);
        return -EINVAL;
    }
}

static int check_tables(const Qcow2Header *h, bool writable, Error **errp)
{
    uint64_t cs = 1ull << h->cluster_bits;
    uint64_t l2_entries = cs / 8;
    uint64_t needed;

    /* Guest bytes one L1 entry maps: cs * l2_entries <= 2^39, no overflow. */
    if (h->size > INT64_MAX / 2 ||
        DIV_ROUND_UP(h->size, cs * l2_entries) > QCOW2_MAX_L1_BYTES / 8) {
        error_setg(errp, "Image is too big");
        return -EFBIG;
    }
    needed = DIV_ROUND_UP(h->size, cs * l2_entries);
    if ((uint64_t)h->l1_size > QCOW2_MAX_L1_BYTES / 8) {
        error_setg(errp, "Active L1 table too large");
        return -EFBIG;
    }
    if (h->l1_size < needed) {
        error_setg(errp, "L1 table is too small");
        return -EINVAL;
    }
    if (h->l1_size && (!offset_ok(h->l1_table_offset, cs) || h->l1_table_offset == 0)) {
        error_setg(errp, "Active L1 table offset invalid");
        return -EINVAL;
    }
    if (h->refcount_table_clusters == 0) {
        error_setg(errp, "Image does not contain a reference count table");
        return -EINVAL;
    }
    if ((uint64_t)h->refcount_table_clusters > QCOW2_MAX_RCT_BYTES / cs) {
        error_setg(errp, "Reference count table too large");
        return -EINVAL;
    }
    if (!offset_ok(h->refcount_table_offset, cs) || h->refcount_table_offset == 0) {
        error_setg(errp, "Reference count table offset invalid");
        return -EINVAL;
    }
    if (h->nb_snapshots > QCOW2_MAX_SNAPSHOTS) {
        error_setg(errp, "Too many snapshots");
        return -EINVAL;
    }
    if (h->nb_snapshots && !offset_ok(h->snapshots_offset, cs)) {
        error_setg(errp, "Snapshot table offset invalid");
        return -EINVAL;
    }
    /*
     * Internal snapshots share clusters (refcounts above 1) and own L1
     * tables we do not maintain: reading the active layer is fine, writing
     * would need their bookkeeping.
     */
    if (writable && h->nb_snapshots) {
        error_setg(errp, "qcow2: images with internal snapshots can only be opened read-only "
                   "(the image has %u)", h->nb_snapshots);
        return -ENOTSUP;
    }
    return 0;
}

int qcow2_header_parse(Qcow2Header *h, const uint8_t *buf, size_t len, bool writable,
                       Error **errp)
{
    uint64_t cs, ext_end;
    int ret;

    memset(h, 0, sizeof(*h));
    if (len < QCOW2_V2_HEADER_LEN || ldl_be_p(buf) != QCOW2_MAGIC) {
        error_setg(errp, "Image is not in qcow2 format");
        return -EINVAL;
    }
    h->version = ldl_be_p(buf + 4);
    h->backing_file_offset = ldq_be_p(buf + 8);
    h->backing_file_size = ldl_be_p(buf + 16);
    h->cluster_bits = ldl_be_p(buf + 20);
    h->size = ldq_be_p(buf + 24);
    h->crypt_method = ldl_be_p(buf + 32);
    h->l1_size = ldl_be_p(buf + 36);
    h->l1_table_offset = ldq_be_p(buf + 40);
    h->refcount_table_offset = ldq_be_p(buf + 48);
    h->refcount_table_clusters = ldl_be_p(buf + 56);
    h->nb_snapshots = ldl_be_p(buf + 60);
    h->snapshots_offset = ldq_be_p(buf + 64);

    if (h->version != 2 && h->version != 3) {
        error_setg(errp, "Unsupported qcow2 version %u", h->version);
        return -ENOTSUP;
    }
    if (h->cluster_bits < QCOW2_MIN_CLUSTER_BITS || h->cluster_bits > QCOW2_MAX_CLUSTER_BITS) {
        error_setg(errp, "Unsupported cluster size: 2^%u", h->cluster_bits);
        return -EINVAL;
    }
    cs = 1ull << h->cluster_bits;
    if (len < cs) {
        /* The caller pads a short file; a shorter buffer is its bug. */
        error_setg(errp, "qcow2: header buffer shorter than a cluster");
        return -EINVAL;
    }

    if (h->version == 2) {
        h->refcount_order = 4;
        h->header_length = QCOW2_V2_HEADER_LEN;
    } else {
        h->incompatible_features = ldq_be_p(buf + 72);
        h->compatible_features = ldq_be_p(buf + 80);
        h->autoclear_features = ldq_be_p(buf + 88);
        h->refcount_order = ldl_be_p(buf + 96);
        h->header_length = ldl_be_p(buf + 100);
        if (h->header_length < QCOW2_V3_HEADER_LEN) {
            error_setg(errp, "qcow2 header too short");
            return -EINVAL;
        }
        if (h->header_length > cs) {
            error_setg(errp, "qcow2 header exceeds cluster size");
            return -EINVAL;
        }
        if (h->header_length > QCOW2_V3_HEADER_LEN) {
            h->compression_type = buf[104];
        }
    }
    if (h->backing_file_offset > cs) {
        error_setg(errp, "Invalid backing file offset");
        return -EINVAL;
    }
    if (h->backing_file_offset &&
        (h->backing_file_size > QCOW2_MAX_BACKING_NAME ||
         h->backing_file_size > cs - h->backing_file_offset)) {
        error_setg(errp, "Backing file name too long");
        return -EINVAL;
    }
    if (h->refcount_order > 6) {
        error_setg(errp, "Reference count entry width too large; may not exceed 64 bits");
        return -EINVAL;
    }
    ret = check_features(h, writable, errp);
    if (ret == 0) {
        ret = check_encryption(h, errp);
    }
    if (ret == 0) {
        ret = check_tables(h, writable, errp);
    }
    if (ret < 0) {
        return ret;
    }

    /* Extensions run from the header's end to the backing name, or the cluster's end. */
    ext_end = cs;
    if (h->backing_file_offset > h->header_length) {
        ext_end = h->backing_file_offset;
    }
    ret = parse_extensions(h, buf, QEMU_ALIGN_UP((uint64_t)h->header_length, 8), ext_end, errp);
    if (ret < 0) {
        qcow2_header_free(h);
        return ret;
    }
    if (h->backing_file_offset && h->backing_file_size) {
        h->backing_file = g_strndup((const char *)buf + h->backing_file_offset,
                                    h->backing_file_size);
        if (strlen(h->backing_file) != h->backing_file_size) {
            error_setg(errp, "qcow2: backing file name contains a NUL byte");
            qcow2_header_free(h);
            return -EINVAL;
        }
    }
    return 0;
}

bool qcow2_overlaps_metadata(BDRVQcow2State *s, uint64_t offset, uint64_t len)
{
    uint64_t end = offset + len;
    uint64_t l1_end = s->h.l1_table_offset + (uint64_t)s->l1_size * 8;
    uint64_t rct_end = s->rct_offset + (uint64_t)s->rct_clusters * s->cluster_size;

    return offset < s->cluster_size ||
           (offset < l1_end && end > s->h.l1_table_offset) ||
           (offset < rct_end && end > s->rct_offset);
}

bool qcow2_overlaps_tables(BDRVQcow2State *s, uint64_t offset, uint64_t len)
{
    uint64_t first = offset >> s->cluster_bits;
    uint64_t last = (offset + len - 1) >> s->cluster_bits;

    /*
     * A loop over the L1 and refcount tables per check: a few hundred
     * entries for a 100 GiB image of 64 KiB clusters, a handful for the
     * refcount table's used part.
     */
    for (uint32_t i = 0; i < s->l1_size; i++) {
        uint64_t c = (s->l1[i] & QCOW2_OFFSET_MASK) >> s->cluster_bits;

        if (c && c >= first && c <= last) {
            return true;
        }
    }
    for (uint64_t i = 0; i < s->rct_top; i++) {
        uint64_t c = (s->rct[i] & QCOW2_RCT_OFFSET_MASK) >> s->cluster_bits;

        if (c && c >= first && c <= last) {
            return true;
        }
    }
    return false;
}

void qcow2_get_info(BlockDriverState *bs, BdrvFormatInfo *info)
{
    BDRVQcow2State *s = bs->opaque;
    uint64_t incompat;

    /* A request that finds the metadata inconsistent sets the corrupt bit under the lock. */
    tsan_g_mutex_lock(&s->lock);
    incompat = s->h.incompatible_features;
    info->corrupt = s->corrupt || (incompat & QCOW2_INCOMPAT_CORRUPT);
    tsan_g_mutex_unlock(&s->lock);
    info->cluster_size = s->cluster_size;
    info->dirty = incompat & QCOW2_INCOMPAT_DIRTY;
    info->compat = s->h.version >= 3 ? "1.1" : "0.10";
    info->compression_type = s->h.compression_type == 1 ? "zstd" : "zlib";
    info->lazy_refcounts = s->h.compatible_features & QCOW2_COMPAT_LAZY_REFCOUNTS;
    info->extended_l2 = incompat & QCOW2_INCOMPAT_EXTL2;
    info->refcount_bits = 1u << s->h.refcount_order;
}
