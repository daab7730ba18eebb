/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The vmstate unit tests' sample device and helpers (vmstate-sample.h). */
#include "vmstate-sample.h"

/* ---- a sample device covering every field kind ---- */

static bool inner_opt_needed(void *opaque)
{
    return ((Inner *)opaque)->a > 100;
}

static const VMStateDescription vmstate_inner_opt = {
    .name = "inner/opt",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = inner_opt_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(opt, Inner),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_inner = {
    .name = "inner",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(a, Inner),
        VMSTATE_UINT32(b, Inner),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_inner_opt,
        NULL
    },
};

const VMStateDescription vmstate_elem = {
    .name = "elem",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(index, Elem),
        VMSTATE_UINT64(data, Elem),
        VMSTATE_END_OF_LIST()
    },
};

static bool sample_extra_needed(void *opaque)
{
    return ((Sample *)opaque)->want_extra;
}

static bool sample_more_needed(void *opaque)
{
    return ((Sample *)opaque)->want_more;
}

static const VMStateDescription vmstate_sample_extra = {
    .name = "sample/extra",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = sample_extra_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(extra, Sample),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_sample_more = {
    .name = "sample/more",
    .version_id = 2,
    .minimum_version_id = 1,
    .needed = sample_more_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(more, Sample),
        VMSTATE_END_OF_LIST()
    },
};

static bool sample_pre_save(void *opaque, Error **errp)
{
    Sample *s = opaque;

    s->pre_saves++;
    if (s->fail_pre_save) {
        error_setg(errp, "pre_save refused");
        return false;
    }
    return true;
}

static bool sample_pre_load(void *opaque, Error **errp)
{
    ((Sample *)opaque)->pre_loads++;
    return true;
}

static bool sample_post_load(void *opaque, int version_id, Error **errp)
{
    Sample *s = opaque;

    s->post_loads++;
    if (s->fail_post_load) {
        error_setg(errp, "post_load refused");
        return false;
    }
    return true;
}

const VMStateDescription vmstate_sample = {
    .name = "sample",
    .version_id = 3,
    .minimum_version_id = 2,
    .pre_save = sample_pre_save,
    .pre_load = sample_pre_load,
    .post_load = sample_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(u8, Sample),
        VMSTATE_UINT16(u16, Sample),
        VMSTATE_UINT32(u32, Sample),
        VMSTATE_UINT64(u64, Sample),
        VMSTATE_INT32(i32, Sample),
        VMSTATE_INT64(i64, Sample),
        VMSTATE_BOOL(flag, Sample),
        VMSTATE_UINT_SIZED(ull, Sample, VMS_UINT64),
        VMSTATE_BUFFER(buf, Sample),
        VMSTATE_UINT32(vlen, Sample),
        VMSTATE_VBUFFER_UINT32(vbuf, Sample, vlen, VBUF_MAX),
        VMSTATE_UINT8_ARRAY(a8, Sample, 3),
        VMSTATE_UINT16_ARRAY(a16, Sample, 2),
        VMSTATE_UINT32_ARRAY(a32, Sample, 2),
        VMSTATE_UINT64_ARRAY(a64, Sample, 2),
        VMSTATE_STRUCT(inner, Sample, vmstate_inner, Inner),
        VMSTATE_STRUCT_ARRAY(inners, Sample, 2, vmstate_inner, Inner),
        VMSTATE_UINT32(n_elems, Sample),
        VMSTATE_STRUCT_VARRAY_UINT32(elems, Sample, n_elems, ELEMS_MAX, vmstate_elem, Elem),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_sample_extra,
        &vmstate_sample_more,
        NULL
    },
};

Sample *sample_new(void)
{
    Sample *s = g_new0(Sample, 1);

    s->vbuf = g_malloc0(VBUF_MAX);
    return s;
}

void sample_free(Sample *s)
{
    if (s) {
        g_free(s->vbuf);
        g_free(s);
    }
}


Sample *sample_filled(bool extra, bool more)
{
    Sample *s = sample_new();

    s->u8 = 0xa1;
    s->u16 = 0xb2c3;
    s->u32 = 0xd4e5f607;
    s->u64 = 0x0123456789abcdefULL;
    s->i32 = -123456;
    s->i64 = -0x123456789abLL;
    s->flag = true;
    s->ull = 0xfedcba9876543210ULL;
    memcpy(s->buf, "\x01\x02\x03\x04\x05", 5);
    s->vlen = 7;
    memcpy(s->vbuf, "vbuffer", 7);
    s->a8[0] = 1, s->a8[1] = 2, s->a8[2] = 3;
    s->a16[0] = 0x1111, s->a16[1] = 0x2222;
    s->a32[0] = 0x33333333, s->a32[1] = 0x44444444;
    s->a64[0] = 0x5555555555555555ULL, s->a64[1] = 0x6666666666666666ULL;
    s->inner = (Inner) { .a = 7, .b = 8 };
    s->inners[0] = (Inner) { .a = 200, .b = 9, .opt = 0xabcdef };   /* sends inner/opt */
    s->inners[1] = (Inner) { .a = 10, .b = 11 };
    s->n_elems = 3;
    for (int i = 0; i < 3; i++) {
        s->elems[i] = (Elem) { .index = 0x100 + i, .data = 0x1000000000ULL * (i + 1) };
    }
    s->extra = 0xe0e0e0e0;
    s->want_extra = extra;
    s->more = 0x7777777777777777ULL;
    s->want_more = more;
    return s;
}

/* ---- helpers ---- */

uint8_t *save_buf(const VMStateDescription *vmsd, void *opaque, VMDescWriter *vmdesc,
                  size_t *len)
{
    QEMUFile *f = qemu_file_new_buffer_output();
    Error *err = NULL;
    const uint8_t *data;
    uint8_t *copy;

    g_assert_true(vmstate_save_state(f, vmsd, opaque, vmdesc, &err));
    g_assert_null(err);
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    data = qemu_file_buffer_data(f, len);
    copy = g_memdup2(data, *len);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    return copy;
}

/* Loads @data[0..len); *@consumed (may be NULL) gets the bytes the loader took. */
bool load_buf(const VMStateDescription *vmsd, void *opaque, int version,
              const uint8_t *data, size_t len, size_t *consumed, Error **errp)
{
    QEMUFile *f = qemu_file_new_buffer_input(data, len);
    bool ok = vmstate_load_state(f, vmsd, opaque, version, errp);

    if (consumed) {
        *consumed = qemu_file_transferred(f);
    }
    qemu_fclose(f);
    return ok;
}

void assert_samples_equal(const Sample *a, const Sample *b, bool extra, bool more)
{
    g_assert_cmphex(a->u8, ==, b->u8);
    g_assert_cmphex(a->u16, ==, b->u16);
    g_assert_cmphex(a->u32, ==, b->u32);
    g_assert_cmphex(a->u64, ==, b->u64);
    g_assert_cmpint(a->i32, ==, b->i32);
    g_assert_cmpint(a->i64, ==, b->i64);
    g_assert_cmpint(a->flag, ==, b->flag);
    g_assert_cmphex(a->ull, ==, b->ull);
    g_assert_cmpmem(a->buf, sizeof(a->buf), b->buf, sizeof(b->buf));
    g_assert_cmpmem(a->vbuf, a->vlen, b->vbuf, b->vlen);
    g_assert_cmpmem(a->a8, sizeof(a->a8), b->a8, sizeof(b->a8));
    g_assert_cmpmem(a->a16, sizeof(a->a16), b->a16, sizeof(b->a16));
    g_assert_cmpmem(a->a32, sizeof(a->a32), b->a32, sizeof(b->a32));
    g_assert_cmpmem(a->a64, sizeof(a->a64), b->a64, sizeof(b->a64));
    g_assert_cmpint(a->inner.a, ==, b->inner.a);
    g_assert_cmpint(a->inner.b, ==, b->inner.b);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpint(a->inners[i].a, ==, b->inners[i].a);
        g_assert_cmpint(a->inners[i].b, ==, b->inners[i].b);
        if (a->inners[i].a > 100) {
            g_assert_cmphex(a->inners[i].opt, ==, b->inners[i].opt);
        }
    }
    g_assert_cmpuint(a->n_elems, ==, b->n_elems);
    g_assert_cmpmem(a->elems, a->n_elems * sizeof(Elem), b->elems, b->n_elems * sizeof(Elem));
    if (extra) {
        g_assert_cmphex(a->extra, ==, b->extra);
    }
    if (more) {
        g_assert_cmphex(a->more, ==, b->more);
    }
}
