/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Buffered migration stream with a sticky error.
 *
 * Output: small puts are appended to an internal buffer; each put extends
 * the last iovec if it points at the buffer's tail, so a run of headers is
 * one iovec; qemu_put_buffer_async() adds an iovec that points straight at
 * guest memory. A flush writes up to MAX_IOV entries with one
 * channel_writev_all() (the channel handles short writes).
 * Input: a read-ahead buffer refilled from the channel (or a fixed memory area).
 */
#include "qemu/osdep.h"
#include "qemu/xxh64.h"
#include "qapi/error.h"
#include "io/channel.h"
#include "migration/qemu-file.h"
#include <sys/uio.h>

#define IO_BUF_SIZE (64 * 1024)
#define MAX_IOV 256

struct QEMUFile {
    Channel *ch;                /* one reference, ours; NULL for memory-backed files */
    bool writable;
    char *name;

    /* Output. */
    uint8_t *buf;               /* IO_BUF_SIZE */
    size_t buf_index;
    struct iovec iov[MAX_IOV];
    int iovcnt;
    GByteArray *mem_out;        /* buffer output */

    /* Input. */
    uint8_t *rbuf;
    size_t rbuf_size;
    size_t rpos;                /* next byte to consume */
    size_t rlen;                /* valid bytes in rbuf */
    bool eof;
    Xxh64State *consumed_hash;  /* the reader's, or NULL (qemu_file_hash_consumed) */

    uint64_t total;             /* bytes put or consumed */
    int last_error;
    char *error_msg;
    int shutdown;               /* atomic */

    uint64_t rate_limit_max;    /* bytes per window, 0 = unlimited */
    uint64_t rate_limit_used;
};

static QEMUFile *qemu_file_alloc(Channel *ch, const char *name, bool writable)
{
    QEMUFile *f = g_new0(QEMUFile, 1);

    f->ch = ch;
    f->name = g_strdup(name);
    f->writable = writable;
    if (writable) {
        f->buf = g_malloc(IO_BUF_SIZE);
    }
    return f;
}

QEMUFile *qemu_file_new_output(Channel *ch, const char *name)
{
    return qemu_file_alloc(ch, name, true);
}

QEMUFile *qemu_file_new_input(Channel *ch, const char *name)
{
    QEMUFile *f = qemu_file_alloc(ch, name, false);

    f->rbuf_size = IO_BUF_SIZE * 4;
    f->rbuf = g_malloc(f->rbuf_size);
    return f;
}

QEMUFile *qemu_file_new_buffer_output(void)
{
    QEMUFile *f = qemu_file_alloc(NULL, "buffer", true);

    f->mem_out = g_byte_array_sized_new(512 * 1024);
    return f;
}

QEMUFile *qemu_file_new_buffer_input(const uint8_t *data, size_t len)
{
    QEMUFile *f = qemu_file_alloc(NULL, "buffer", false);

    /* Input never writes to rbuf, so it may alias the caller's data. */
    f->rbuf = (uint8_t *)data;
    f->rlen = len;
    f->eof = true;
    return f;
}

const uint8_t *qemu_file_buffer_data(QEMUFile *f, size_t *len)
{
    qemu_fflush(f);
    *len = f->mem_out ? f->mem_out->len : 0;
    return f->mem_out ? f->mem_out->data : NULL;
}

const char *qemu_file_name(QEMUFile *f)
{
    return f->name;
}

int qemu_file_fd(QEMUFile *f)
{
    return f->ch ? channel_fd(f->ch) : -1;
}

Channel *qemu_file_channel(QEMUFile *f)
{
    return f->ch;
}

int qemu_file_get_error(QEMUFile *f)
{
    return f->last_error;
}

void qemu_file_set_error(QEMUFile *f, int err)
{
    if (!f->last_error && err) {
        f->last_error = err < 0 ? err : -err;
    }
}

void qemu_file_set_error_msg(QEMUFile *f, int err, const char *fmt, ...)
{
    va_list ap;

    if (f->last_error) {
        return;
    }
    qemu_file_set_error(f, err);
    va_start(ap, fmt);
    f->error_msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

const char *qemu_file_error_msg(QEMUFile *f)
{
    if (f->error_msg) {
        return f->error_msg;
    }
    return f->last_error ? g_strerror(-f->last_error) : "";
}

void qemu_file_shutdown(QEMUFile *f)
{
    __atomic_store_n(&f->shutdown, 1, __ATOMIC_SEQ_CST);
    if (f->ch) {
        /* Wakes a thread blocked in read/write, whatever the row (a command's pipe too). */
        channel_shutdown(f->ch, CHANNEL_SHUT_BOTH);
    }
}

static bool qemu_file_is_shut_down(QEMUFile *f)
{
    return __atomic_load_n(&f->shutdown, __ATOMIC_ACQUIRE);
}

/* ---- output ---- */

static void qemu_file_writev_all(QEMUFile *f)
{
    int ret;

    if (qemu_file_is_shut_down(f)) {
        qemu_file_set_error_msg(f, -EIO, "migration stream was shut down");
        return;
    }
    ret = channel_writev_all(f->ch, f->iov, f->iovcnt);
    if (ret < 0 && qemu_file_is_shut_down(f)) {
        /* Woken by qemu_file_shutdown(): that is why it failed, whatever errno says. */
        qemu_file_set_error_msg(f, -EIO, "migration stream was shut down");
    } else if (ret < 0) {
        const char *why = channel_error_detail(f->ch, true);

        qemu_file_set_error_msg(f, ret, "writing to %s failed: %s", f->name,
                                why ? why : g_strerror(-ret));
    }
}

void qemu_fflush(QEMUFile *f)
{
    if (!f->writable || (!f->iovcnt)) {
        f->buf_index = 0;
        f->iovcnt = 0;
        return;
    }
    if (f->mem_out) {
        for (int i = 0; i < f->iovcnt; i++) {
            g_byte_array_append(f->mem_out, f->iov[i].iov_base, f->iov[i].iov_len);
        }
    } else if (!f->last_error) {
        qemu_file_writev_all(f);
    }
    f->buf_index = 0;
    f->iovcnt = 0;
}

/* Callers make sure an iovec slot is free (iovcnt < MAX_IOV) beforehand. */
static void add_to_iovec(QEMUFile *f, const uint8_t *p, size_t len)
{
    if (f->iovcnt > 0 &&
        (uint8_t *)f->iov[f->iovcnt - 1].iov_base + f->iov[f->iovcnt - 1].iov_len == p) {
        f->iov[f->iovcnt - 1].iov_len += len;
    } else {
        assert(f->iovcnt < MAX_IOV);
        f->iov[f->iovcnt].iov_base = (void *)p;
        f->iov[f->iovcnt].iov_len = len;
        f->iovcnt++;
    }
    f->total += len;
    f->rate_limit_used += len;
}

void qemu_put_buffer(QEMUFile *f, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    if (f->last_error) {
        return;
    }
    while (len > 0) {
        size_t l = MIN(len, IO_BUF_SIZE - f->buf_index);

        if (f->iovcnt == MAX_IOV) {
            qemu_fflush(f);
            l = MIN(len, IO_BUF_SIZE);
        }
        memcpy(f->buf + f->buf_index, p, l);
        add_to_iovec(f, f->buf + f->buf_index, l);
        f->buf_index += l;
        p += l;
        len -= l;
        if (f->buf_index == IO_BUF_SIZE) {
            qemu_fflush(f);
        }
    }
}

void qemu_put_buffer_async(QEMUFile *f, const void *buf, size_t len)
{
    if (f->last_error) {
        return;
    }
    if (f->mem_out) {
        /* Memory output copies at flush; keep it simple and copy now. */
        qemu_put_buffer(f, buf, len);
        return;
    }
    if (f->iovcnt == MAX_IOV) {
        qemu_fflush(f);
    }
    add_to_iovec(f, buf, len);
}

void qemu_put_byte(QEMUFile *f, uint8_t v)
{
    if (f->last_error) {
        return;
    }
    if (f->iovcnt == MAX_IOV) {
        qemu_fflush(f);
    }
    f->buf[f->buf_index] = v;
    add_to_iovec(f, f->buf + f->buf_index, 1);
    f->buf_index++;
    if (f->buf_index == IO_BUF_SIZE) {
        qemu_fflush(f);
    }
}

void qemu_put_be16(QEMUFile *f, uint16_t v)
{
    uint16_t be = GUINT16_TO_BE(v);

    qemu_put_buffer(f, &be, 2);
}

void qemu_put_be32(QEMUFile *f, uint32_t v)
{
    uint32_t be = GUINT32_TO_BE(v);

    qemu_put_buffer(f, &be, 4);
}

void qemu_put_be64(QEMUFile *f, uint64_t v)
{
    uint64_t be = GUINT64_TO_BE(v);

    qemu_put_buffer(f, &be, 8);
}

void qemu_put_counted_string(QEMUFile *f, const char *s)
{
    size_t len = strlen(s);

    assert(len < 256);
    qemu_put_byte(f, len);
    qemu_put_buffer(f, s, len);
}

/* ---- input ---- */

/* Makes at least @need bytes available from rpos; false at EOF or error. */
static bool qemu_fill_buffer(QEMUFile *f, size_t need)
{
    while (f->rlen - f->rpos < need) {
        struct iovec iov;
        ssize_t n;

        if (f->last_error) {
            return false;
        }
        if (f->eof) {
            qemu_file_set_error_msg(f, -EIO, "unexpected end of migration stream");
            return false;
        }
        if (qemu_file_is_shut_down(f)) {
            qemu_file_set_error_msg(f, -EIO, "migration stream was shut down");
            return false;
        }
        if (f->rpos) {
            memmove(f->rbuf, f->rbuf + f->rpos, f->rlen - f->rpos);
            f->rlen -= f->rpos;
            f->rpos = 0;
        }
        if (need > f->rbuf_size) {
            f->rbuf_size = need;
            f->rbuf = g_realloc(f->rbuf, f->rbuf_size);
        }
        iov = (struct iovec) { f->rbuf + f->rlen, f->rbuf_size - f->rlen };
        n = channel_readv(f->ch, &iov, 1, 0);
        if (n == -EINTR) {
            continue;
        }
        if (n < 0) {
            const char *why = channel_error_detail(f->ch, false);

            qemu_file_set_error_msg(f, n, "reading from %s failed: %s", f->name,
                                    why ? why : g_strerror(-n));
            return false;
        }
        if (n == 0) {
            f->eof = true;
            continue;
        }
        f->rlen += n;
    }
    return true;
}

size_t qemu_file_input_buffered(QEMUFile *f)
{
    /* The channel's read-ahead (a listener's peek) can be read without waiting too. */
    return f->rlen - f->rpos + (f->ch ? channel_pending(f->ch) : 0);
}

void qemu_get_buffer(QEMUFile *f, void *buf, size_t len)
{
    uint8_t *p = buf;

    if (f->last_error) {
        /* Sticky: after the first error every get reads zeroes, buffered data or not. */
        memset(buf, 0, len);
        return;
    }
    while (len > 0) {
        size_t avail = f->rlen - f->rpos;
        size_t l;

        if (!avail && !qemu_fill_buffer(f, 1)) {
            memset(p, 0, len);
            return;
        }
        avail = f->rlen - f->rpos;
        l = MIN(len, avail);
        memcpy(p, f->rbuf + f->rpos, l);
        if (f->consumed_hash) {
            xxh64_update(f->consumed_hash, p, l);
        }
        f->rpos += l;
        f->total += l;
        p += l;
        len -= l;
    }
}

uint8_t qemu_get_byte(QEMUFile *f)
{
    uint8_t v;

    if (f->rpos < f->rlen && !f->last_error && !f->consumed_hash) {
        f->total++;
        return f->rbuf[f->rpos++];
    }
    qemu_get_buffer(f, &v, 1);
    return v;
}

uint16_t qemu_get_be16(QEMUFile *f)
{
    uint16_t v;

    qemu_get_buffer(f, &v, 2);
    return GUINT16_FROM_BE(v);
}

uint32_t qemu_get_be32(QEMUFile *f)
{
    uint32_t v;

    qemu_get_buffer(f, &v, 4);
    return GUINT32_FROM_BE(v);
}

uint64_t qemu_get_be64(QEMUFile *f)
{
    uint64_t v;

    qemu_get_buffer(f, &v, 8);
    return GUINT64_FROM_BE(v);
}

bool qemu_get_counted_string(QEMUFile *f, char *buf)
{
    uint8_t len = qemu_get_byte(f);

    qemu_get_buffer(f, buf, len);
    buf[len] = '\0';
    return !f->last_error;
}

int qemu_peek_byte(QEMUFile *f, size_t offset)
{
    if (f->last_error) {
        return -1;
    }
    if (f->rlen - f->rpos <= offset && !qemu_fill_buffer(f, offset + 1)) {
        /* A peek past the end is not an error by itself; a failed read is. */
        if (f->eof) {
            f->last_error = 0;
            g_clear_pointer(&f->error_msg, g_free);
        }
        return -1;
    }
    return f->rbuf[f->rpos + offset];
}

void qemu_file_skip(QEMUFile *f, size_t len)
{
    uint8_t tmp[4096];

    while (len > 0 && !f->last_error) {
        size_t l = MIN(len, sizeof(tmp));
        qemu_get_buffer(f, tmp, l);
        len -= l;
    }
}

void qemu_file_hash_consumed(QEMUFile *f, Xxh64State *st)
{
    f->consumed_hash = st;
}

/* ---- common ---- */

uint64_t qemu_file_transferred(QEMUFile *f)
{
    return f->total;
}

void qemu_file_count_side_bytes(QEMUFile *f, uint64_t len)
{
    f->total += len;
    f->rate_limit_used += len;
}

void qemu_file_set_rate_limit(QEMUFile *f, uint64_t limit)
{
    f->rate_limit_max = limit;
}

uint64_t qemu_file_get_rate_limit(QEMUFile *f)
{
    return f->rate_limit_max;
}

bool qemu_file_rate_limit(QEMUFile *f)
{
    if (f->last_error || qemu_file_is_shut_down(f)) {
        return true;
    }
    return f->rate_limit_max && f->rate_limit_used >= f->rate_limit_max;
}

void qemu_file_reset_rate_window(QEMUFile *f)
{
    f->rate_limit_used = 0;
}

int qemu_fclose(QEMUFile *f)
{
    int ret;

    if (f->writable) {
        qemu_fflush(f);
    }
    ret = f->last_error;
    if (f->ch) {
        /* The last reference closes the connection (others: the return path's). */
        int cret = channel_unref(f->ch);

        if (!ret) {
            ret = cret;
        }
    }
    if (f->mem_out) {
        g_byte_array_free(f->mem_out, TRUE);
    }
    if (f->ch || !f->eof) {
        g_free(f->rbuf);
    }
    g_free(f->buf);
    g_free(f->error_msg);
    g_free(f->name);
    g_free(f);
    return ret;
}

/* ---- position (seekable files: the mapped-ram layout) ---- */

int64_t qemu_file_tell(QEMUFile *f)
{
    int64_t pos;

    if (!f->ch) {
        return -ESPIPE;
    }
    if (f->writable) {
        qemu_fflush(f);
    }
    pos = channel_seek(f->ch, 0, SEEK_CUR);
    if (pos < 0) {
        return pos;
    }
    /* Input read ahead is not consumed yet. */
    return f->writable ? pos : pos - (int64_t)(f->rlen - f->rpos);
}

bool qemu_file_seek(QEMUFile *f, int64_t pos)
{
    int64_t ret;

    if (f->last_error) {
        return false;
    }
    if (!f->ch || pos < 0) {
        qemu_file_set_error_msg(f, -ESPIPE, "%s is not seekable", f->name);
        return false;
    }
    if (f->writable) {
        qemu_fflush(f);
    } else {
        f->rpos = f->rlen = 0;
        f->eof = false;
    }
    ret = channel_seek(f->ch, pos, SEEK_SET);
    if (ret < 0) {
        qemu_file_set_error_msg(f, ret, "seeking %s to %" PRId64 " failed: %s", f->name,
                                pos, g_strerror(-ret));
        return false;
    }
    return true;
}
