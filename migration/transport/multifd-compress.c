/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * multifd-compression: none, zlib and zstd as rows of one table (contract
 * in multifd-compress.h). A decoder is never given more room than the page
 * it fills, so a hostile body can at worst put garbage in the pages. Input
 * left over once they are full, or output the codec still holds (probed
 * with one scratch byte), means the body is longer than its pages: refused,
 * not cut. An error leaves the stream out of step with its peer; the
 * caller fails the migration and never reuses the state.
 */
#include "qemu/osdep.h"
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>
#include "qapi/error.h"
#include "multifd.h"
#include "multifd-compress.h"

#define PAGE ((size_t)TARGET_PAGE_SIZE)

/*
 * QEMU's highest multifd-zstd-level (20) asks for a 2^25-byte window; a
 * frame asking more is refused rather than cost us up to 2 GiB a channel.
 */
#define ZSTD_RECV_WINDOW_LOG_MAX 25

/* A body that decodes to @got pages (more than @n: to more) for @n. */
static bool err_pages(Error **errp, const char *codec, uint32_t got, uint32_t n)
{
    if (got < n) {
        error_setg(errp, "%s multifd packet ends early: %u of %u pages",
                   codec, got, n);
    } else {
        error_setg(errp, "%s multifd packet inflates past its %u pages",
                   codec, n);
    }
    return false;
}

static ssize_t err_room(Error **errp, const char *codec, size_t cap, uint32_t n)
{
    error_setg(errp, "%s: %zu bytes of room are too few for %u pages",
               codec, cap, n);
    return -1;
}

/* ---- none: the pages as they are, no state (non-NULL says "set up") ---- */
static char none_state;     /* never written: only its address is used, as a token */

static void *none_send_new(int level, Error **errp)
{
    return &none_state;
}

static void *none_recv_new(Error **errp)
{
    return &none_state;
}

static void none_free(void *st)
{
}

static size_t none_bound(uint32_t n)
{
    return n * PAGE;
}

static ssize_t none_compress(void *st, const uint8_t *const *pages, uint32_t n,
                             uint8_t *out, size_t cap, Error **errp)
{
    if (cap < n * PAGE) {
        return err_room(errp, "none", cap, n);
    }
    for (uint32_t i = 0; i < n; i++) {
        memcpy(out + i * PAGE, pages[i], PAGE);
    }
    return n * PAGE;
}

static bool none_decompress(void *st, const uint8_t *in, size_t len,
                            uint8_t *const *pages, uint32_t n, Error **errp)
{
    if (len != n * PAGE) {
        return err_pages(errp, "uncompressed", len < n * PAGE ? len / PAGE
                         : n + 1, n);
    }
    for (uint32_t i = 0; i < n; i++) {
        memcpy(pages[i], in + i * PAGE, PAGE);
    }
    return true;
}

/*
 * ---- zlib: one deflate stream per channel, a sync flush per packet ----
 * Pages that do not compress cost deflate a full attempt for stored
 * blocks in the end, as they cost zstd (see its section): a few of each
 * packet's pages are tried alone on a second stream first, and when none
 * shrinks by 1/ZLIB_SAMPLE_GAIN the channel's stream goes to level 0
 * (stored blocks, a copy) for the packet. Changing the level between
 * packets is deflate's own deflateParams: nothing is pending after the
 * sync flush, so the stream stays one stream any inflate reads.
 */
#define ZLIB_SAMPLES        2
#define ZLIB_SAMPLE_GAIN    32

typedef struct ZlibSend {
    z_stream zs;
    z_stream probe;                     /* tries sample pages, reset each time */
    int level;
    bool stored;                        /* zs is at level 0 now */
    uint8_t page[TARGET_PAGE_SIZE];     /* what deflate reads; see compress */
    uint8_t probe_out[TARGET_PAGE_SIZE * 2];
} ZlibSend;

static void zlib_send_free(void *st)
{
    ZlibSend *s = st;

    if (s) {
        deflateEnd(&s->zs);
        deflateEnd(&s->probe);
        g_free(s);
    }
}

static void *zlib_send_new(int level, Error **errp)
{
    ZlibSend *s = g_new0(ZlibSend, 1);
    int ret = deflateInit(&s->zs, level);

    if (ret == Z_OK) {
        ret = deflateInit(&s->probe, level ? level : 1);
        if (ret != Z_OK) {
            deflateEnd(&s->zs);
        }
    }
    if (ret != Z_OK) {
        error_setg(errp, "zlib: cannot start deflate at level %d: %s",
                   level, zError(ret));
        g_free(s);
        return NULL;
    }
    s->level = level;
    return s;
}

/* True when no sample page of the packet deflates by 1/ZLIB_SAMPLE_GAIN. */
static bool zlib_packet_looks_random(ZlibSend *s, const uint8_t *const *pages, uint32_t n)
{
    for (uint32_t k = 0; k < ZLIB_SAMPLES; k++) {
        z_stream *p = &s->probe;

        memcpy(s->page, pages[(uint64_t)n * k / ZLIB_SAMPLES], PAGE);
        if (deflateReset(p) != Z_OK) {
            return false;
        }
        p->next_in = s->page;
        p->avail_in = PAGE;
        p->next_out = s->probe_out;
        p->avail_out = sizeof(s->probe_out);
        if (deflate(p, Z_FINISH) != Z_STREAM_END ||
            p->total_out < PAGE - PAGE / ZLIB_SAMPLE_GAIN) {
            return false;
        }
    }
    return true;
}

/*
 * deflateBound's worst case for any level or memory setting (9 bits a byte
 * for fixed codes, stored-block headers), plus what it leaves out: the zlib
 * header of a channel's first packet and the sync flush (<= 6 bytes).
 */
static size_t zlib_bound(uint32_t n)
{
    return n * PAGE + (n * PAGE + 7) / 8 + (n * PAGE + 63) / 64 + 5 + 32;
}

static ssize_t zlib_compress(void *st, const uint8_t *const *pages, uint32_t n,
                             uint8_t *out, size_t cap, Error **errp)
{
    ZlibSend *s = st;
    z_stream *zs = &s->zs;

    /* No pages: no deflate call and an empty body, which the receiver skips. */
    zs->next_out = out;
    zs->avail_out = MIN(cap, UINT_MAX);
    if (n && s->level) {
        bool stored = zlib_packet_looks_random(s, pages, n);

        if (stored != s->stored) {
            int ret = deflateParams(zs, stored ? 0 : s->level, Z_DEFAULT_STRATEGY);

            if (ret != Z_OK) {
                error_setg(errp, "zlib: cannot change the level: %s",
                           zs->msg ? zs->msg : zError(ret));
                return -1;
            }
            s->stored = stored;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        int ret;

        /*
         * The guest may write the page meanwhile; zlib does not promise to
         * read its input once, so it reads a copy that cannot change.
         */
        memcpy(s->page, pages[i], PAGE);
        zs->next_in = s->page;
        zs->avail_in = PAGE;
        ret = deflate(zs, i == n - 1 ? Z_SYNC_FLUSH : Z_NO_FLUSH);
        if (ret != Z_OK && ret != Z_BUF_ERROR) {
            error_setg(errp, "zlib: deflate failed: %s",
                       zs->msg ? zs->msg : zError(ret));
            return -1;
        }
        /* Input left, or output that filled the room, may not all be out. */
        if (zs->avail_in != 0 || zs->avail_out == 0) {
            return err_room(errp, "zlib", cap, n);
        }
    }
    return zs->next_out - out;
}

static void *zlib_recv_new(Error **errp)
{
    z_stream *zs = g_new0(z_stream, 1);
    int ret = inflateInit(zs);

    if (ret != Z_OK) {
        error_setg(errp, "zlib: cannot start inflate: %s", zError(ret));
        g_free(zs);
        return NULL;
    }
    return zs;
}

static void zlib_recv_free(void *st)
{
    if (st) {
        inflateEnd(st);
        g_free(st);
    }
}

/*
 * Z_BUF_ERROR only says inflate ran out of input or room: callers judge.
 * Z_STREAM_END is corrupt too: a channel's stream lasts the migration.
 */
static bool zlib_inflate_ok(z_stream *zs, int ret, Error **errp)
{
    if (ret != Z_OK && ret != Z_BUF_ERROR) {
        error_setg(errp, "zlib multifd packet is corrupt: %s",
                   zs->msg ? zs->msg : zError(ret));
        return false;
    }
    return true;
}

static bool zlib_decompress(void *st, const uint8_t *in, size_t len,
                            uint8_t *const *pages, uint32_t n, Error **errp)
{
    z_stream *zs = st;
    uint8_t probe;

    if (n == 0 && len == 0) {
        return true;
    }
    /*
     * Every body ends with a sync flush, whose empty stored block ends in
     * 00 00 ff ff. Checked first: a body cut inside the flush still fills
     * its pages and would pass otherwise.
     */
    if (len < 4 || len > UINT_MAX || memcmp(in + len - 4, "\0\0\xff\xff", 4)) {
        error_setg(errp, "zlib multifd packet of %zu bytes does not end "
                   "with a sync flush", len);
        return false;
    }
    zs->next_in = (Bytef *)in;
    zs->avail_in = len;
    for (uint32_t i = 0; i < n; i++) {
        zs->next_out = pages[i];
        zs->avail_out = PAGE;
        if (!zlib_inflate_ok(zs, inflate(zs, Z_NO_FLUSH), errp)) {
            return false;
        }
        /* inflate stops short of a full page only when input runs out. */
        if (zs->avail_out != 0) {
            return err_pages(errp, "zlib", i, n);
        }
    }
    if (zs->avail_in != 0) {
        return err_pages(errp, "zlib", n + 1, n);
    }
    /*
     * A sync flush leaves inflate between blocks with no bits left over
     * (data_type 128 exactly); read before the probe, which leaves that.
     */
    if (zs->data_type != 128) {
        error_setg(errp, "zlib multifd packet does not end at a flush point");
        return false;
    }
    /* All input is read, but the tail of a match may still be held. */
    zs->next_out = &probe;
    zs->avail_out = 1;
    if (!zlib_inflate_ok(zs, inflate(zs, Z_NO_FLUSH), errp)) {
        return false;
    }
    return zs->avail_out == 0 ? err_pages(errp, "zlib", n + 1, n) : true;
}

/*
 * ---- zstd: a frame per packet ----
 * One-shot compression of the packet's pages, copied together first (the
 * guest may write them meanwhile, and the copy lets zstd work on one flat
 * buffer instead of buffering a page at a time): on this machine that
 * is about 1.6x the streaming per-page rate. The receiver decodes such a
 * frame straight into the pages when they are contiguous; anything else
 * (QEMU's flushed stream, one frame per channel) goes the streaming way.
 */
typedef struct ZstdState {
    ZSTD_CCtx *cc;              /* sending */
    ZSTD_DCtx *dc;              /* receiving */
    uint8_t *stage;             /* pages gathered (sending) or scattered (receiving) */
    size_t stage_size;
    uint8_t sample[TARGET_PAGE_SIZE];           /* sending: a page copied to try */
    uint8_t sample_out[TARGET_PAGE_SIZE * 2];   /* sending: what it came to */
} ZstdState;

/*
 * Pages that do not compress (random data, pages of compressed or
 * encrypted files) cost a full attempt of zstd, the copy into the stage
 * and zstd's own copy into raw blocks, for nothing: in the seed scenario
 * with 2 channels, memcpy was half of the sending threads' time and
 * their CPU 1.67x QEMU 10.0's (perf, docs/benchmarks.md "multifd").
 * So a few of a packet's pages are tried alone first; when none shrinks
 * by at least 1/ZSTD_SAMPLE_GAIN, the packet goes as a frame of raw
 * blocks (the format's own "stored" blocks, which every decoder takes),
 * each page copied once, straight from the guest. A page tried alone
 * misses what it shares with its neighbours, so a packet of pages that
 * only repeat each other goes raw: zero pages, the common repeat, never
 * reach the codec.
 */
#define ZSTD_SAMPLES        2
#define ZSTD_SAMPLE_GAIN    32
#define ZSTD_MAGIC          0xFD2FB528u
#define ZSTD_BLOCK_MAX      (128 * 1024)
/* Single_Segment_flag, and Frame_Content_Size_flag 2: a 4-byte content size. */
#define ZSTD_FHD_SINGLE_FCS4 0xA0
#define ZSTD_RAW_HEADER     (4 + 1 + 4)

static void put_le(uint8_t *p, uint32_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        p[i] = v >> (8 * i);
    }
}

/* True when no sample page of the packet compresses by 1/ZSTD_SAMPLE_GAIN. */
static bool zstd_packet_looks_random(ZstdState *z, const uint8_t *const *pages, uint32_t n)
{
    for (uint32_t k = 0; k < ZSTD_SAMPLES; k++) {
        size_t r;

        /* A copy: the guest may write the page while zstd reads it twice. */
        memcpy(z->sample, pages[(uint64_t)n * k / ZSTD_SAMPLES], PAGE);
        r = ZSTD_compress2(z->cc, z->sample_out, sizeof(z->sample_out), z->sample, PAGE);
        if (ZSTD_isError(r) || r < PAGE - PAGE / ZSTD_SAMPLE_GAIN) {
            return false;
        }
    }
    return true;
}

/* The pages as one frame of raw blocks; 0 if @cap is too small. */
static size_t zstd_raw_frame(const uint8_t *const *pages, uint32_t n, uint8_t *out, size_t cap)
{
    const uint32_t per_block = ZSTD_BLOCK_MAX / PAGE;
    uint32_t blocks = DIV_ROUND_UP(n, per_block);
    size_t need = ZSTD_RAW_HEADER + 3 * (size_t)blocks + n * PAGE;
    uint8_t *p = out;

    if (cap < need) {
        return 0;
    }
    put_le(p, ZSTD_MAGIC, 4);
    p[4] = ZSTD_FHD_SINGLE_FCS4;
    put_le(p + 5, n * PAGE, 4);
    p += ZSTD_RAW_HEADER;
    for (uint32_t b = 0; b < blocks; b++) {
        uint32_t first = b * per_block, count = MIN(per_block, n - first);
        bool last = b == blocks - 1;

        /* Block_Header: Last_Block, Block_Type 0 (Raw), Block_Size. */
        put_le(p, (uint32_t)last | (count * PAGE) << 3, 3);
        p += 3;
        for (uint32_t i = first; i < first + count; i++) {
            memcpy(p, pages[i], PAGE);
            p += PAGE;
        }
    }
    return p - out;
}

static uint8_t *zstd_stage(ZstdState *z, size_t len)
{
    if (z->stage_size < len) {
        g_free(z->stage);
        z->stage = g_malloc(len);
        z->stage_size = len;
    }
    return z->stage;
}

static void zstd_free(void *st)
{
    ZstdState *z = st;

    if (z) {
        ZSTD_freeCCtx(z->cc);
        ZSTD_freeDCtx(z->dc);
        g_free(z->stage);
        g_free(z);
    }
}

static void *zstd_send_new(int level, Error **errp)
{
    ZstdState *z = g_new0(ZstdState, 1);
    size_t r;

    z->cc = ZSTD_createCCtx();
    r = z->cc ? ZSTD_CCtx_setParameter(z->cc, ZSTD_c_compressionLevel, level) : 0;
    if (!z->cc || ZSTD_isError(r)) {
        error_setg(errp, "zstd: cannot set up compression at level %d: %s",
                   level, z->cc ? ZSTD_getErrorName(r) : "out of memory");
        zstd_free(z);
        return NULL;
    }
    zstd_stage(z, MULTIFD_PACKET_SIZE);
    return z;
}

/* A frame header and block headers on top of zstd's own bound. */
static size_t zstd_bound(uint32_t n)
{
    return ZSTD_compressBound(n * PAGE) + 64;
}

static ssize_t zstd_compress(void *st, const uint8_t *const *pages, uint32_t n,
                             uint8_t *out, size_t cap, Error **errp)
{
    ZstdState *z = st;
    size_t r;

    uint8_t *stage;

    if (!n) {
        return 0;
    }
    if (zstd_packet_looks_random(z, pages, n)) {
        r = zstd_raw_frame(pages, n, out, cap);
        return r ? (ssize_t)r : err_room(errp, "zstd", cap, n);
    }
    stage = zstd_stage(z, n * PAGE);
    for (uint32_t i = 0; i < n; i++) {
        memcpy(stage + i * PAGE, pages[i], PAGE);
    }
    r = ZSTD_compress2(z->cc, out, cap, stage, n * PAGE);
    if (ZSTD_isError(r)) {
        if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall) {
            return err_room(errp, "zstd", cap, n);
        }
        error_setg(errp, "zstd: compression failed: %s", ZSTD_getErrorName(r));
        return -1;
    }
    return r;
}

static void *zstd_recv_new(Error **errp)
{
    ZstdState *z = g_new0(ZstdState, 1);
    size_t r;

    z->dc = ZSTD_createDCtx();
    r = z->dc ? ZSTD_DCtx_setParameter(z->dc, ZSTD_d_windowLogMax,
                                       ZSTD_RECV_WINDOW_LOG_MAX) : 0;
    if (!z->dc || ZSTD_isError(r)) {
        error_setg(errp, "zstd: cannot set up decompression: %s",
                   z->dc ? ZSTD_getErrorName(r) : "out of memory");
        zstd_free(z);
        return NULL;
    }
    return z;
}

/*
 * The body is exactly one frame that says it holds @n pages: decoded in
 * one call into room for exactly @n pages (the pages themselves when they
 * are contiguous), so nothing can land past them.
 */
static bool zstd_decompress_frame(ZstdState *z, const uint8_t *in, size_t len,
                                  uint8_t *const *pages, uint32_t n, Error **errp)
{
    bool flat = true;
    uint8_t *dst;
    size_t r;

    for (uint32_t i = 1; i < n && flat; i++) {
        flat = pages[i] == pages[0] + i * PAGE;
    }
    dst = flat ? pages[0] : zstd_stage(z, n * PAGE);
    r = ZSTD_decompressDCtx(z->dc, dst, n * PAGE, in, len);
    if (ZSTD_isError(r)) {
        error_setg(errp, "zstd multifd packet is corrupt: %s", ZSTD_getErrorName(r));
        return false;
    }
    if (r != n * PAGE) {
        return err_pages(errp, "zstd", r / PAGE, n);
    }
    for (uint32_t i = 0; !flat && i < n; i++) {
        memcpy(pages[i], z->stage + i * PAGE, PAGE);
    }
    return true;
}

static bool zstd_decompress(void *st, const uint8_t *in, size_t len,
                            uint8_t *const *pages, uint32_t n, Error **errp)
{
    ZstdState *z = st;
    ZSTD_inBuffer ib = { in, len, 0 };
    uint8_t probe;

    if (n && n <= MULTIFD_PACKET_PAGES &&
        ZSTD_getFrameContentSize(in, len) == (unsigned long long)n * PAGE &&
        ZSTD_findFrameCompressedSize(in, len) == len) {
        return zstd_decompress_frame(z, in, len, pages, n, errp);
    }

    /* After the pages, one scratch byte shows bytes the decoder still holds. */
    for (uint32_t i = 0; i <= n; i++) {
        ZSTD_outBuffer ob = { i < n ? pages[i] : &probe, i < n ? PAGE : 1, 0 };
        size_t in0, out0, r;

        /* Until the page is full, or no progress: the input has run out. */
        do {
            in0 = ib.pos;
            out0 = ob.pos;
            r = ZSTD_decompressStream(z->dc, &ob, &ib);
            if (ZSTD_isError(r)) {
                error_setg(errp, "zstd multifd packet is corrupt: %s",
                           ZSTD_getErrorName(r));
                return false;
            }
        } while (ob.pos < ob.size && (ib.pos != in0 || ob.pos != out0));
        if (i < n && ob.pos < ob.size) {
            return err_pages(errp, "zstd", i, n);
        }
        if (i == n && (ob.pos || ib.pos < ib.size)) {
            return err_pages(errp, "zstd", n + 1, n);
        }
    }
    return true;
}

static const MultifdCompressOps multifd_compress_table[] = {
    [MULTIFD_COMPRESSION_NONE] = {
        .name = "none", .packet_flag = MULTIFD_FLAG_NOCOMP,
        .send_new = none_send_new, .send_free = none_free,
        .compress = none_compress, .bound = none_bound,
        .recv_new = none_recv_new, .recv_free = none_free,
        .decompress = none_decompress,
    },
    [MULTIFD_COMPRESSION_ZLIB] = {
        .name = "zlib", .packet_flag = MULTIFD_FLAG_ZLIB,
        .send_new = zlib_send_new, .send_free = zlib_send_free,
        .compress = zlib_compress, .bound = zlib_bound,
        .recv_new = zlib_recv_new, .recv_free = zlib_recv_free,
        .decompress = zlib_decompress,
    },
    [MULTIFD_COMPRESSION_ZSTD] = {
        .name = "zstd", .packet_flag = MULTIFD_FLAG_ZSTD,
        .send_new = zstd_send_new, .send_free = zstd_free,
        .compress = zstd_compress, .bound = zstd_bound,
        .recv_new = zstd_recv_new, .recv_free = zstd_free,
        .decompress = zstd_decompress,
    },
};
QEMU_BUILD_BUG_ON(ARRAY_SIZE(multifd_compress_table) !=
                  MULTIFD_COMPRESSION__MAX);

const MultifdCompressOps *multifd_compress_ops(MultiFDCompression method)
{
    assert((unsigned)method < MULTIFD_COMPRESSION__MAX);
    return &multifd_compress_table[method];
}

const MultifdCompressOps *multifd_compress_ops_by_flag(uint32_t flag)
{
    for (size_t i = 0; i < ARRAY_SIZE(multifd_compress_table); i++) {
        if (multifd_compress_table[i].packet_flag == flag) {
            return &multifd_compress_table[i];
        }
    }
    return NULL;
}
