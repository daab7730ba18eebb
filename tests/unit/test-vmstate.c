/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/stream/vmstate.c over memory-backed QEMUFiles: every
 * field kind round-trips, the wire bytes are QEMU's, versions and
 * subsections are honoured, hooks' errors stop a load, and the vmdesc
 * JSON describes exactly what was written. Hostile streams are in
 * test-vmstate-hostile.c.
 */
#include <json-glib/json-glib.h>
#include "vmstate-sample.h"

/* ---- round trips ---- */

static void roundtrip(bool extra, bool more)
{
    g_autoptr(Sample) src = sample_filled(extra, more);
    g_autoptr(Sample) dst = sample_new();
    g_autofree uint8_t *data = NULL;
    Error *err = NULL;
    size_t len, consumed;

    data = save_buf(&vmstate_sample, src, NULL, &len);
    g_assert_cmpint(src->pre_saves, ==, 1);
    dst->extra = 0x5a5a5a5a;
    dst->more = 0x5a5a5a5a;
    g_assert_true(load_buf(&vmstate_sample, dst, 3, data, len, &consumed, &err));
    g_assert_null(err);
    g_assert_cmpuint(consumed, ==, len);
    g_assert_cmpint(dst->pre_loads, ==, 1);
    g_assert_cmpint(dst->post_loads, ==, 1);
    assert_samples_equal(src, dst, extra, more);
    /* An absent subsection leaves its fields alone. */
    if (!extra) {
        g_assert_cmphex(dst->extra, ==, 0x5a5a5a5a);
    }
    if (!more) {
        g_assert_cmphex(dst->more, ==, 0x5a5a5a5a);
    }
}

static void test_roundtrip_all(void)
{
    roundtrip(true, true);
}

static void test_roundtrip_no_subsections(void)
{
    roundtrip(false, false);
}

static void test_roundtrip_some_subsections(void)
{
    roundtrip(false, true);
    roundtrip(true, false);
}

static void test_roundtrip_empty_varray(void)
{
    g_autoptr(Sample) src = sample_filled(false, false);
    g_autoptr(Sample) dst = sample_new();
    g_autofree uint8_t *data = NULL;
    size_t len;

    src->n_elems = 0;
    src->vlen = 0;
    data = save_buf(&vmstate_sample, src, NULL, &len);
    dst->n_elems = 5;
    dst->vlen = 5;
    g_assert_true(load_buf(&vmstate_sample, dst, 3, data, len, NULL, &error_abort));
    g_assert_cmpuint(dst->n_elems, ==, 0);
    g_assert_cmpuint(dst->vlen, ==, 0);
    assert_samples_equal(src, dst, false, false);
}

static void test_roundtrip_full_varray(void)
{
    g_autoptr(Sample) src = sample_filled(false, false);
    g_autoptr(Sample) dst = sample_new();
    g_autofree uint8_t *data = NULL;
    size_t len;

    src->n_elems = ELEMS_MAX;
    for (int i = 0; i < ELEMS_MAX; i++) {
        src->elems[i] = (Elem) { .index = i, .data = ~(uint64_t)i };
    }
    src->vlen = VBUF_MAX;
    memset(src->vbuf, 0xee, VBUF_MAX);
    data = save_buf(&vmstate_sample, src, NULL, &len);
    g_assert_true(load_buf(&vmstate_sample, dst, 3, data, len, NULL, &error_abort));
    assert_samples_equal(src, dst, false, false);
}

/* ---- the bytes on the wire ---- */

typedef struct Small {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    int32_t i32;
    bool flag;
    uint8_t buf[3];
    uint32_t sub;
} Small;

static bool small_sub_needed(void *opaque)
{
    return true;
}

static const VMStateDescription vmstate_small_sub = {
    .name = "small/sub",
    .version_id = 5,
    .minimum_version_id = 1,
    .needed = small_sub_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(sub, Small),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_small = {
    .name = "small",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(u8, Small),
        VMSTATE_UINT16(u16, Small),
        VMSTATE_UINT32(u32, Small),
        VMSTATE_UINT64(u64, Small),
        VMSTATE_INT32(i32, Small),
        VMSTATE_BOOL(flag, Small),
        VMSTATE_BUFFER(buf, Small),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_small_sub,
        NULL
    },
};

static void test_wire_format(void)
{
    Small s = {
        .u8 = 0x11, .u16 = 0x2233, .u32 = 0x44556677, .u64 = 0x8899aabbccddeeffULL,
        .i32 = -2, .flag = true, .buf = { 'x', 'y', 'z' }, .sub = 0xcafef00d,
    };
    static const uint8_t expect[] = {
        0x11,
        0x22, 0x33,
        0x44, 0x55, 0x66, 0x77,
        0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
        0xff, 0xff, 0xff, 0xfe,
        0x01,
        'x', 'y', 'z',
        0x05, 9, 's', 'm', 'a', 'l', 'l', '/', 's', 'u', 'b', 0x00, 0x00, 0x00, 0x05,
        0xca, 0xfe, 0xf0, 0x0d,
    };
    g_autofree uint8_t *data = NULL;
    Small back = { 0 };
    size_t len;

    data = save_buf(&vmstate_small, &s, NULL, &len);
    g_assert_cmpmem(data, len, expect, sizeof(expect));
    g_assert_true(load_buf(&vmstate_small, &back, 1, expect, sizeof(expect), NULL, &error_abort));
    g_assert_cmphex(back.u8, ==, s.u8);
    g_assert_cmphex(back.u16, ==, s.u16);
    g_assert_cmphex(back.u32, ==, s.u32);
    g_assert_cmphex(back.u64, ==, s.u64);
    g_assert_cmpint(back.i32, ==, s.i32);
    g_assert_true(back.flag);
    g_assert_cmpmem(back.buf, 3, s.buf, 3);
    g_assert_cmphex(back.sub, ==, s.sub);
}

/* A field QEMU's layout dropped: zeroes out, whatever comes in is skipped. */
static const VMStateDescription vmstate_gap = {
    .name = "gap",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(u8, Small),
        VMSTATE_UNUSED(3),
        VMSTATE_UINT16(u16, Small),
        VMSTATE_END_OF_LIST()
    },
};

static void test_wire_unused(void)
{
    Small s = { .u8 = 0x11, .u16 = 0x2233 }, back = { 0 };
    static const uint8_t expect[] = { 0x11, 0, 0, 0, 0x22, 0x33 };
    static const uint8_t in[] = { 0x44, 0xde, 0xad, 0xff, 0x55, 0x66 };
    g_autoptr(VMDescWriter) b = vmdesc_new();
    g_autofree uint8_t *data = NULL;
    const char *text;
    size_t len, text_len;

    vmdesc_begin_object(b);
    data = save_buf(&vmstate_gap, &s, b, &len);
    vmdesc_end_object(b);
    g_assert_cmpmem(data, len, expect, sizeof(expect));
    text = vmdesc_get_data(b, &text_len);
    g_assert_nonnull(g_strstr_len(text, text_len,
                                  "\"name\":\"unused\",\"type\":\"unused_buffer\",\"size\":3"));
    g_assert_true(load_buf(&vmstate_gap, &back, 1, in, sizeof(in), NULL, &error_abort));
    g_assert_cmphex(back.u8, ==, 0x44);
    g_assert_cmphex(back.u16, ==, 0x5566);
    /* Truncated inside the gap: an error, not a short read passed off as data. */
    g_assert_false(load_buf(&vmstate_gap, &back, 1, in, 3, NULL, NULL));
}

/* QEMU's "uint8 equal": sent as held; a load must bring the value held. */
static const VMStateDescription vmstate_equal = {
    .name = "eq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8_EQUAL(u8, Small),
        VMSTATE_UINT16(u16, Small),
        VMSTATE_END_OF_LIST()
    },
};

static void test_wire_equal(void)
{
    Small s = { .u8 = 2, .u16 = 0x2233 }, back = { .u8 = 2 };
    static const uint8_t expect[] = { 2, 0x22, 0x33 };
    static const uint8_t other[] = { 3, 0x44, 0x55 };
    g_autoptr(VMDescWriter) b = vmdesc_new();
    g_autofree uint8_t *data = NULL;
    Error *err = NULL;
    const char *text;
    size_t len, text_len;

    vmdesc_begin_object(b);
    data = save_buf(&vmstate_equal, &s, b, &len);
    vmdesc_end_object(b);
    g_assert_cmpmem(data, len, expect, sizeof(expect));
    text = vmdesc_get_data(b, &text_len);
    g_assert_nonnull(g_strstr_len(text, text_len,
                                  "\"name\":\"u8\",\"type\":\"uint8 equal\",\"size\":1"));
    g_assert_true(load_buf(&vmstate_equal, &back, 1, expect, sizeof(expect), NULL,
                           &error_abort));
    g_assert_cmphex(back.u16, ==, 0x2233);
    /* Another value: refused with QEMU's words, and the field after it never read. */
    g_assert_false(load_buf(&vmstate_equal, &back, 1, other, sizeof(other), NULL, &err));
    g_assert_cmpstr(error_get_pretty(err), ==, "Failed to load eq:u8: 2 != 3");
    error_free(err);
    err = NULL;
    g_assert_cmphex(back.u8, ==, 2);
    g_assert_cmphex(back.u16, ==, 0x2233);
    /* Nothing at all: the stream's error, not a mismatch with what a short read gave. */
    g_assert_false(load_buf(&vmstate_equal, &back, 1, other, 0, NULL, &err));
    g_assert_null(strstr(error_get_pretty(err), "!="));
    error_free(err);
}

/* A "tmp" field: the bytes of a struct, described inline as QEMU's x86 fpregs are. */
typedef struct TmpInner {
    uint64_t mant;
    uint16_t exp;
} TmpInner;

typedef struct TmpOuter {
    TmpInner t[2];
} TmpOuter;

static const VMStateDescription vmstate_tmp_inner = {
    .name = "inner_tmp",
    .version_id = 0,
    .minimum_version_id = 0,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(mant, TmpInner),
        VMSTATE_UINT16(exp, TmpInner),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_tmp_elem = {
    .name = "elem",
    .version_id = 0,
    .minimum_version_id = 0,
    .fields = (const VMStateField[]) {
        { .name = "tmp", .type = VMS_TMP, .offset = 0, .size = sizeof(TmpInner),
          .vmsd = &vmstate_tmp_inner },
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_tmp_outer = {
    .name = "outer",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(t, TmpOuter, 2, vmstate_tmp_elem, TmpInner),
        VMSTATE_END_OF_LIST()
    },
};

static void test_wire_tmp(void)
{
    TmpOuter s = { .t = { { 0x0102030405060708ULL, 0x090a }, { 1, 2 } } }, back = { 0 };
    static const uint8_t expect[] = {
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
        0, 0, 0, 0, 0, 0, 0, 1, 0, 2,
    };
    g_autoptr(VMDescWriter) b = vmdesc_new();
    g_autofree uint8_t *data = NULL;
    const char *text;
    size_t len, text_len;

    vmdesc_begin_object(b);
    data = save_buf(&vmstate_tmp_outer, &s, b, &len);
    vmdesc_end_object(b);
    g_assert_cmpmem(data, len, expect, sizeof(expect));
    text = vmdesc_get_data(b, &text_len);
    /* QEMU's shape: no "struct" object around the tmp's description. */
    g_assert_nonnull(g_strstr_len(text, text_len,
                                  "\"struct\":{\"vmsd_name\":\"elem\",\"version\":0,\"fields\":"
                                  "[{\"name\":\"tmp\",\"type\":\"tmp\",\"vmsd_name\":\"inner_tmp\","
                                  "\"version\":0,\"fields\":[{\"name\":\"mant\",\"type\":\"uint64\","
                                  "\"size\":8},{\"name\":\"exp\",\"type\":\"uint16\",\"size\":2}],"
                                  "\"size\":10}]},\"size\":10}"));
    g_assert_nonnull(g_strstr_len(text, text_len, "\"name\":\"t\",\"array_len\":2,"));
    g_assert_true(load_buf(&vmstate_tmp_outer, &back, 1, expect, sizeof(expect), NULL,
                           &error_abort));
    g_assert_cmphex(back.t[0].mant, ==, s.t[0].mant);
    g_assert_cmphex(back.t[0].exp, ==, s.t[0].exp);
    g_assert_cmphex(back.t[1].mant, ==, 1);
    g_assert_cmphex(back.t[1].exp, ==, 2);
    g_assert_false(load_buf(&vmstate_tmp_outer, &back, 1, expect, sizeof(expect) - 1, NULL, NULL));
}

/* ---- versions ---- */

static void test_version_newer_refused(void)
{
    g_autoptr(Sample) src = sample_filled(true, true);
    g_autoptr(Sample) dst = sample_new();
    g_autofree uint8_t *data = NULL;
    Error *err = NULL;
    size_t len;

    data = save_buf(&vmstate_sample, src, NULL, &len);
    g_assert_false(load_buf(&vmstate_sample, dst, 4, data, len, NULL, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "newer than ours"));
    g_clear_pointer(&err, error_free);
    g_assert_false(load_buf(&vmstate_sample, dst, 1, data, len, NULL, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "older than the oldest"));
    g_clear_pointer(&err, error_free);
    g_assert_cmpint(dst->pre_loads, ==, 0);
    g_assert_cmpint(dst->post_loads, ==, 0);
}

static void test_version_subsection_newer_refused(void)
{
    Small s = { .sub = 1 };
    g_autofree uint8_t *data = NULL;
    Error *err = NULL;
    size_t len;

    data = save_buf(&vmstate_small, &s, NULL, &len);
    /* The subsection's be32 version is the 4 bytes before its last field. */
    data[len - 5] = 6;
    g_assert_false(load_buf(&vmstate_small, &s, 1, data, len, NULL, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "small/sub"));
    error_free(err);
}

typedef struct Versioned {
    uint32_t a;
    uint32_t added;             /* exists since version 2 */
    uint32_t b;
} Versioned;

static const VMStateDescription vmstate_versioned_v1 = {
    .name = "versioned",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(a, Versioned),
        VMSTATE_UINT32(b, Versioned),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_versioned_v2 = {
    .name = "versioned",
    .version_id = 2,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(a, Versioned),
        { .name = "added", .type = VMS_UINT32, .offset = offsetof(Versioned, added),
          .size = sizeof(uint32_t), .version_id = 2 },
        VMSTATE_UINT32(b, Versioned),
        VMSTATE_END_OF_LIST()
    },
};

static void test_version_field_skipped(void)
{
    Versioned v1 = { .a = 1, .added = 2, .b = 3 };
    Versioned back = { .added = 0xdead };
    g_autofree uint8_t *data1 = NULL, *data2 = NULL;
    size_t len1, len2, consumed;

    /* A v1 stream into the v2 description: "added" is not in it. */
    data1 = save_buf(&vmstate_versioned_v1, &v1, NULL, &len1);
    g_assert_cmpuint(len1, ==, 8);
    g_assert_true(load_buf(&vmstate_versioned_v2, &back, 1, data1, len1, &consumed,
                           &error_abort));
    g_assert_cmpuint(consumed, ==, 8);
    g_assert_cmpuint(back.a, ==, 1);
    g_assert_cmphex(back.added, ==, 0xdead);
    g_assert_cmpuint(back.b, ==, 3);

    /* A v2 stream has it. */
    data2 = save_buf(&vmstate_versioned_v2, &v1, NULL, &len2);
    g_assert_cmpuint(len2, ==, 12);
    memset(&back, 0, sizeof(back));
    g_assert_true(load_buf(&vmstate_versioned_v2, &back, 2, data2, len2, NULL, &error_abort));
    g_assert_cmpmem(&back, sizeof(back), &v1, sizeof(v1));
}

/* ---- subsections ---- */

static void test_subsection_unknown_refused(void)
{
    g_autoptr(Sample) src = sample_filled(false, false);
    g_autoptr(Sample) dst = sample_new();
    g_autofree uint8_t *data = NULL;
    g_autoptr(GByteArray) bad = g_byte_array_new();
    static const char name[] = "sample/bogus";
    uint8_t tail[] = { 0x05, sizeof(name) - 1 };
    uint8_t ver_val[] = { 0, 0, 0, 1, 0, 0, 0, 0 };
    Error *err = NULL;
    size_t len;

    data = save_buf(&vmstate_sample, src, NULL, &len);
    g_byte_array_append(bad, data, len);
    g_byte_array_append(bad, tail, sizeof(tail));
    g_byte_array_append(bad, (const uint8_t *)name, sizeof(name) - 1);
    g_byte_array_append(bad, ver_val, sizeof(ver_val));
    g_assert_false(load_buf(&vmstate_sample, dst, 3, bad->data, bad->len, NULL, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "unknown subsection 'sample/bogus'"));
    g_assert_cmpint(dst->post_loads, ==, 0);
    error_free(err);
}

static void test_subsection_foreign_left_alone(void)
{
    g_autoptr(Sample) src = sample_filled(true, false);
    g_autoptr(Sample) dst = sample_new();
    g_autofree uint8_t *data = NULL;
    g_autoptr(GByteArray) s = g_byte_array_new();
    static const uint8_t foreign[] = { 0x05, 7, 'o', 't', 'h', 'e', 'r', '/', 'x', 0, 0, 0, 1 };
    size_t len, consumed;

    /* A subsection of another description (a parent's) ends ours. */
    data = save_buf(&vmstate_sample, src, NULL, &len);
    g_byte_array_append(s, data, len);
    g_byte_array_append(s, foreign, sizeof(foreign));
    g_assert_true(load_buf(&vmstate_sample, dst, 3, s->data, s->len, &consumed, &error_abort));
    g_assert_cmpuint(consumed, ==, len);
    assert_samples_equal(src, dst, true, false);
}

static void test_subsection_marker_truncated(void)
{
    g_autoptr(Sample) src = sample_filled(false, false);
    g_autoptr(Sample) dst = sample_new();
    g_autofree uint8_t *data = NULL;
    g_autofree uint8_t *bad = NULL;
    Error *err = NULL;
    size_t len;

    /* Fields, then a lone subsection marker: a cut stream, not "no subsections". */
    data = save_buf(&vmstate_sample, src, NULL, &len);
    bad = g_malloc(len + 1);
    memcpy(bad, data, len);
    bad[len] = 0x05;
    g_assert_false(load_buf(&vmstate_sample, dst, 3, bad, len + 1, NULL, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "truncated subsection"));
    error_free(err);
}

/* ---- hooks ---- */

static void test_hooks_errors(void)
{
    g_autoptr(Sample) src = sample_filled(true, false);
    g_autoptr(Sample) dst = sample_new();
    g_autofree uint8_t *data = NULL;
    QEMUFile *f;
    Error *err = NULL;
    size_t len;

    src->fail_pre_save = true;
    f = qemu_file_new_buffer_output();
    g_assert_false(vmstate_save_state(f, &vmstate_sample, src, NULL, &err));
    g_assert_cmpstr(error_get_pretty(err), ==, "sample: pre_save refused");
    g_clear_pointer(&err, error_free);
    qemu_fclose(f);

    src->fail_pre_save = false;
    data = save_buf(&vmstate_sample, src, NULL, &len);
    dst->fail_post_load = true;
    g_assert_false(load_buf(&vmstate_sample, dst, 3, data, len, NULL, &err));
    g_assert_cmpstr(error_get_pretty(err), ==, "sample: post_load refused");
    g_assert_cmpint(dst->pre_loads, ==, 1);
    g_assert_cmpint(dst->post_loads, ==, 1);
    error_free(err);
}

/* ---- vmdesc ---- */

static JsonObject *field_at(JsonArray *fields, guint i, const char *name)
{
    JsonObject *o = json_array_get_object_element(fields, i);

    g_assert_cmpstr(json_object_get_string_member(o, "name"), ==, name);
    return o;
}

static void assert_field(JsonObject *o, const char *type, gint64 size)
{
    g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, type);
    g_assert_cmpint(json_object_get_int_member(o, "size"), ==, size);
}

static void assert_no_array(JsonObject *o)
{
    g_assert_false(json_object_has_member(o, "array_len"));
    g_assert_false(json_object_has_member(o, "index"));
}

/* A scalar array: one entry standing for all elements (QEMU's shape). */
static void assert_scalar_array(JsonObject *o, gint64 len)
{
    g_assert_cmpint(json_object_get_int_member(o, "array_len"), ==, len);
    g_assert_false(json_object_has_member(o, "index"));
}

/* One element of a struct array whose elements may differ: an entry per element with its index. */
static void assert_struct_elem(JsonObject *o, gint64 index)
{
    g_assert_false(json_object_has_member(o, "array_len"));
    g_assert_cmpint(json_object_get_int_member(o, "index"), ==, index);
}

static void test_vmdesc(void)
{
    g_autoptr(Sample) src = sample_filled(true, false);
    g_autoptr(VMDescWriter) b = vmdesc_new();
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autofree uint8_t *data = NULL;
    const char *text;
    GError *gerr = NULL;
    JsonObject *top, *o, *st, *sub;
    JsonArray *fields, *subs, *sf;
    guint i = 0;
    size_t len, text_len;

    vmdesc_begin_object(b);
    data = save_buf(&vmstate_sample, src, b, &len);
    vmdesc_end_object(b);
    /* Through text and back, as a stream analyzer would see it. */
    text = vmdesc_get_data(b, &text_len);
    g_assert_true(json_parser_load_from_data(parser, text, text_len, &gerr));
    g_assert_no_error(gerr);
    top = json_node_get_object(json_parser_get_root(parser));

    g_assert_cmpstr(json_object_get_string_member(top, "vmsd_name"), ==, "sample");
    g_assert_cmpint(json_object_get_int_member(top, "version"), ==, 3);
    fields = json_object_get_array_member(top, "fields");

    o = field_at(fields, i++, "u8");
    assert_field(o, "uint8", 1);
    assert_no_array(o);
    assert_field(field_at(fields, i++, "u16"), "uint16", 2);
    assert_field(field_at(fields, i++, "u32"), "uint32", 4);
    assert_field(field_at(fields, i++, "u64"), "uint64", 8);
    assert_field(field_at(fields, i++, "i32"), "int32", 4);
    assert_field(field_at(fields, i++, "i64"), "int64", 8);
    assert_field(field_at(fields, i++, "flag"), "bool", 1);
    assert_field(field_at(fields, i++, "ull"), "uint64", 8);
    o = field_at(fields, i++, "buf");
    assert_field(o, "buffer", 5);
    assert_no_array(o);
    assert_field(field_at(fields, i++, "vlen"), "uint32", 4);
    o = field_at(fields, i++, "vbuf");
    assert_field(o, "buffer", 7);
    assert_no_array(o);
    o = field_at(fields, i++, "a8");
    assert_field(o, "uint8", 1);
    assert_scalar_array(o, 3);
    o = field_at(fields, i++, "a16");
    assert_field(o, "uint16", 2);
    assert_scalar_array(o, 2);
    assert_scalar_array(field_at(fields, i++, "a32"), 2);
    assert_scalar_array(field_at(fields, i++, "a64"), 2);

    /* A nested struct: its own description, and the bytes it took. */
    o = field_at(fields, i++, "inner");
    assert_field(o, "struct", 2 + 4);
    assert_no_array(o);
    st = json_object_get_object_member(o, "struct");
    g_assert_cmpstr(json_object_get_string_member(st, "vmsd_name"), ==, "inner");
    g_assert_cmpint(json_object_get_int_member(st, "version"), ==, 1);
    sf = json_object_get_array_member(st, "fields");
    g_assert_cmpuint(json_array_get_length(sf), ==, 2);
    assert_field(field_at(sf, 0, "a"), "uint16", 2);
    assert_field(field_at(sf, 1, "b"), "uint32", 4);
    g_assert_false(json_object_has_member(st, "subsections"));

    /* inners[0] carries its subsection inner/opt: 0x05, "inner/opt", version, u64. */
    o = field_at(fields, i++, "inners");
    assert_struct_elem(o, 0);
    assert_field(o, "struct", 2 + 4 + 1 + 1 + 9 + 4 + 8);
    st = json_object_get_object_member(o, "struct");
    subs = json_object_get_array_member(st, "subsections");
    g_assert_cmpuint(json_array_get_length(subs), ==, 1);
    sub = json_array_get_object_element(subs, 0);
    g_assert_cmpstr(json_object_get_string_member(sub, "vmsd_name"), ==, "inner/opt");
    assert_field(field_at(json_object_get_array_member(sub, "fields"), 0, "opt"), "uint64", 8);
    o = field_at(fields, i++, "inners");
    assert_struct_elem(o, 1);
    assert_field(o, "struct", 6);

    /* Elements without subsections look alike: one entry for all, as QEMU writes it. */
    assert_field(field_at(fields, i++, "n_elems"), "uint32", 4);
    o = field_at(fields, i++, "elems");
    assert_field(o, "struct", 12);
    g_assert_cmpint(json_object_get_int_member(o, "array_len"), ==, 3);
    g_assert_false(json_object_has_member(o, "index"));
    st = json_object_get_object_member(o, "struct");
    g_assert_cmpstr(json_object_get_string_member(st, "vmsd_name"), ==, "elem");
    g_assert_cmpuint(json_array_get_length(fields), ==, i);

    /* Only the subsection that was sent. */
    subs = json_object_get_array_member(top, "subsections");
    g_assert_cmpuint(json_array_get_length(subs), ==, 1);
    sub = json_array_get_object_element(subs, 0);
    g_assert_cmpstr(json_object_get_string_member(sub, "vmsd_name"), ==, "sample/extra");
    g_assert_cmpint(json_object_get_int_member(sub, "version"), ==, 1);
    assert_field(field_at(json_object_get_array_member(sub, "fields"), 0, "extra"), "uint32", 4);
}

static void test_vmdesc_no_subsections(void)
{
    g_autoptr(Sample) src = sample_filled(false, false);
    g_autoptr(VMDescWriter) b = vmdesc_new();
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autofree uint8_t *data = NULL;
    const char *text;
    GError *gerr = NULL;
    size_t len, text_len;

    vmdesc_begin_object(b);
    data = save_buf(&vmstate_sample, src, b, &len);
    vmdesc_end_object(b);
    text = vmdesc_get_data(b, &text_len);
    g_assert_true(json_parser_load_from_data(parser, text, text_len, &gerr));
    g_assert_no_error(gerr);
    g_assert_false(json_object_has_member(json_node_get_object(json_parser_get_root(parser)),
                                          "subsections"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vmstate/roundtrip/all", test_roundtrip_all);
    g_test_add_func("/vmstate/roundtrip/no-subsections", test_roundtrip_no_subsections);
    g_test_add_func("/vmstate/roundtrip/some-subsections", test_roundtrip_some_subsections);
    g_test_add_func("/vmstate/roundtrip/empty-varray", test_roundtrip_empty_varray);
    g_test_add_func("/vmstate/roundtrip/full-varray", test_roundtrip_full_varray);
    g_test_add_func("/vmstate/wire-format", test_wire_format);
    g_test_add_func("/vmstate/wire-unused", test_wire_unused);
    g_test_add_func("/vmstate/wire-tmp", test_wire_tmp);
    g_test_add_func("/vmstate/wire-equal", test_wire_equal);
    g_test_add_func("/vmstate/version/newer-refused", test_version_newer_refused);
    g_test_add_func("/vmstate/version/subsection-newer-refused",
                    test_version_subsection_newer_refused);
    g_test_add_func("/vmstate/version/field-skipped", test_version_field_skipped);
    g_test_add_func("/vmstate/subsection/unknown-refused", test_subsection_unknown_refused);
    g_test_add_func("/vmstate/subsection/foreign-left-alone", test_subsection_foreign_left_alone);
    g_test_add_func("/vmstate/subsection/marker-truncated", test_subsection_marker_truncated);
    g_test_add_func("/vmstate/hooks/errors", test_hooks_errors);
    g_test_add_func("/vmstate/vmdesc/sample", test_vmdesc);
    g_test_add_func("/vmstate/vmdesc/no-subsections", test_vmdesc_no_subsections);
    return g_test_run();
}
