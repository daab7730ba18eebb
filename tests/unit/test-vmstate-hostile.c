/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * migration/stream/vmstate.c against hostile streams: counts over their bound, a
 * NULL buffer with a length, truncation at every offset and garbage fail
 * cleanly with an error and never write past the device's fields.
 */
#include "vmstate-sample.h"

/* ---- hostile input ---- */

typedef struct Counted {
    uint32_t n;
    Elem e[4];
    uint32_t len;
    uint8_t *buf;               /* 16 bytes */
} Counted;

static const VMStateDescription vmstate_counted = {
    .name = "counted",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(n, Counted),
        VMSTATE_STRUCT_VARRAY_UINT32(e, Counted, n, 4, vmstate_elem, Elem),
        VMSTATE_UINT32(len, Counted),
        VMSTATE_VBUFFER_UINT32(buf, Counted, len, 16),
        VMSTATE_END_OF_LIST()
    },
};

static bool load_counted(uint32_t n, uint32_t len, Error **errp)
{
    QEMUFile *out = qemu_file_new_buffer_output();
    g_autofree uint8_t *buf = g_malloc0(16);
    Counted c = { .buf = buf };
    const uint8_t *data;
    size_t dlen;
    bool ok;

    /* Written by hand: our own saver asserts the bounds. */
    qemu_put_be32(out, n);
    for (uint32_t i = 0; i < MIN(n, 64); i++) {
        qemu_put_be32(out, i);
        qemu_put_be64(out, i);
    }
    qemu_put_be32(out, len);
    for (uint32_t i = 0; i < MIN(len, 64); i++) {
        qemu_put_byte(out, i);
    }
    data = qemu_file_buffer_data(out, &dlen);
    ok = load_buf(&vmstate_counted, &c, 1, data, dlen, NULL, errp);
    qemu_fclose(out);
    return ok;
}

static void test_hostile_counts(void)
{
    Error *err = NULL;

    g_assert_true(load_counted(4, 16, &error_abort));
    g_assert_true(load_counted(0, 0, &error_abort));
    g_assert_false(load_counted(5, 16, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "count 5 exceeds the maximum 4"));
    g_clear_pointer(&err, error_free);
    g_assert_false(load_counted(0xffffffff, 0, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "exceeds the maximum"));
    g_clear_pointer(&err, error_free);
    g_assert_false(load_counted(4, 17, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "count 17 exceeds the maximum 16"));
    g_clear_pointer(&err, error_free);
    g_assert_false(load_counted(1, 0x80000000, &err));
    g_clear_pointer(&err, error_free);
}

static void test_hostile_null_vbuffer(void)
{
    g_autoptr(Sample) src = sample_filled(false, false);
    g_autoptr(Sample) dst = sample_new();
    g_autofree uint8_t *data = NULL;
    Error *err = NULL;
    size_t len;

    data = save_buf(&vmstate_sample, src, NULL, &len);
    g_clear_pointer(&dst->vbuf, g_free);
    g_assert_false(load_buf(&vmstate_sample, dst, 3, data, len, NULL, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "no buffer for field 'vbuf'"));
    error_free(err);
}

/*
 * Every proper prefix of a stream must fail, except where only whole
 * optional subsections are missing: those prefixes are valid streams.
 */
static void test_hostile_truncated(void)
{
    g_autoptr(Sample) src = sample_filled(true, true);
    g_autofree uint8_t *full = NULL, *fields_only = NULL, *with_extra = NULL;
    size_t len, len_fields, len_extra;

    full = save_buf(&vmstate_sample, src, NULL, &len);
    src->want_extra = src->want_more = false;
    fields_only = save_buf(&vmstate_sample, src, NULL, &len_fields);
    src->want_extra = true;
    with_extra = save_buf(&vmstate_sample, src, NULL, &len_extra);
    g_assert_cmpuint(len_fields, <, len_extra);
    g_assert_cmpuint(len_extra, <, len);

    for (size_t cut = 0; cut < len; cut++) {
        g_autoptr(Sample) dst = sample_new();
        /* An exact-size copy, so a read past the end is caught by ASan. */
        g_autofree uint8_t *prefix = g_memdup2(full, cut);
        Error *err = NULL;
        bool ok = load_buf(&vmstate_sample, dst, 3, prefix, cut, NULL, &err);

        if (cut == len_fields || cut == len_extra) {
            g_assert_true(ok);
            g_assert_null(err);
            g_assert_cmpint(dst->post_loads, ==, 1);
        } else {
            if (ok) {
                g_error("a stream cut at %zu of %zu bytes loaded", cut, len);
            }
            g_assert_nonnull(err);
            g_assert_cmpint(dst->post_loads, ==, 0);
            error_free(err);
        }
    }
}

/* Random bytes must never crash the loader (it may accept some). */
static void test_hostile_garbage(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(0x7357);

    for (int iter = 0; iter < 2000; iter++) {
        g_autoptr(Sample) dst = sample_new();
        size_t len = g_rand_int_range(r, 0, 600);
        g_autofree uint8_t *data = g_malloc(len + 1);
        Error *err = NULL;

        for (size_t i = 0; i < len; i++) {
            data[i] = g_rand_int(r);
        }
        if (!load_buf(&vmstate_sample, dst, 3, data, len, NULL, &err)) {
            g_assert_nonnull(err);
            error_free(err);
        }
        g_assert_cmpuint(dst->n_elems, <=, ELEMS_MAX);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vmstate/hostile/counts", test_hostile_counts);
    g_test_add_func("/vmstate/hostile/null-vbuffer", test_hostile_null_vbuffer);
    g_test_add_func("/vmstate/hostile/truncated", test_hostile_truncated);
    g_test_add_func("/vmstate/hostile/garbage", test_hostile_garbage);
    return g_test_run();
}
