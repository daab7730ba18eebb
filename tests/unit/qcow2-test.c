/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers of the qcow2 unit tests (test-qcow2.c, test-qcow2-crash.c): see qcow2-test.h. */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "block/qcow2-int.h"
#include "block-fake.h"
#include "qcow2-test.h"

char *tmpdir;

void qcow2_test_dir_init(const char *name)
{
    g_autofree char *tmpl = g_strdup_printf("%s-XXXXXX", name);

    tmpdir = g_dir_make_tmp(tmpl, NULL);
    g_assert_nonnull(tmpdir);
}

void qcow2_test_dir_cleanup(void)
{
    run(NULL, "rm -rf %s", tmpdir);
    g_free(tmpdir);
}

bool have_qemu_img(void)
{
    g_autofree char *p = g_find_program_in_path("qemu-img");

    if (!p) {
        g_test_skip("qemu-img not installed (qemu-utils, scripts/install-deps.sh)");
    }
    return p != NULL;
}

/* Run a command; its exit status, its output in *out (if given). */
int run(char **out, const char *fmt, ...)
{
    g_autofree char *cmd = NULL, *o = NULL, *e = NULL;
    GError *err = NULL;
    int status;
    va_list ap;

    va_start(ap, fmt);
    cmd = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (!g_spawn_command_line_sync(cmd, &o, &e, &status, &err)) {
        g_error("%s: %s", cmd, err->message);
    }
    if (status && !out) {
        g_test_message("%s: %s%s", cmd, o, e);      /* else the caller judges the output */
    }
    if (out) {
        *out = g_strconcat(o, e, NULL);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *path(const char *name)
{
    return g_build_filename(tmpdir, name, NULL);
}

BlockDriverState *open_qcow2(const char *file, int flags, Error **errp)
{
    BlockDriverState *f = fake_file_open(file, flags & BDRV_O_RDWR, errp);

    return f ? fake_format_open(&bdrv_qcow2, f, flags, errp) : NULL;
}

BlockDriverState *open_ok(const char *file, int flags)
{
    Error *err = NULL;
    BlockDriverState *bs = open_qcow2(file, flags, &err);

    if (!bs) {
        g_error("open %s: %s", file, error_get_pretty(err));
    }
    return bs;
}

void check_read(BlockDriverState *bs, const uint8_t *model, uint64_t off, uint64_t len)
{
    g_autofree uint8_t *buf = g_malloc(len);
    /* Two pieces: the iovec paths split the request. */
    struct iovec v[2] = { { buf, len / 3 }, { buf + len / 3, len - len / 3 } };

    g_assert_cmpint(bs->drv->preadv(bs, off, len, v, 2), ==, 0);
    if (memcmp(buf, model + off, len)) {
        for (uint64_t i = 0; i < len; i++) {
            if (buf[i] != model[off + i]) {
                g_error("byte %#" PRIx64 ": %#x, expected %#x", off + i, buf[i], model[off + i]);
            }
        }
    }
}

void check_whole(BlockDriverState *bs, const uint8_t *model, uint64_t size)
{
    for (uint64_t off = 0; off < size; off += 1 * MiB) {
        check_read(bs, model, off, MIN(1 * MiB, size - off));
    }
}

/* QEMU's verdict: no errors, no leaks, and the same bytes as @model. */
void qemu_judges(const char *img, const uint8_t *model, uint64_t size)
{
    g_autofree char *raw = path("model.raw");
    g_autofree char *out = NULL;

    g_assert_true(g_file_set_contents(raw, (const char *)model, size, NULL));
    if (run(&out, "qemu-img check -f qcow2 %s", img) != 0) {
        g_error("qemu-img check %s:\n%s", img, out);
    }
    g_assert_null(strstr(out, "leaked"));
    g_assert_cmpint(run(NULL, "qemu-img compare -f qcow2 -F raw %s %s", img, raw), ==, 0);
    unlink(raw);
}

uint64_t header_field(const char *img, unsigned off)
{
    g_autofree char *data = NULL;
    gsize len;

    g_assert_true(g_file_get_contents(img, &data, &len, NULL));
    g_assert_cmpuint(len, >=, off + 8);
    return ldq_be_p(data + off);
}
