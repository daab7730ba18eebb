/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the stream envelope loader (migration/stream/savevm.c) with two
 * fake devices: a stream the saver wrote loads; a section that fails its
 * post_load or is cut short leaves its device as it was; versions are
 * compared unsigned; a section id cannot be given to two sections; the BQL
 * is held while device state changes.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "migration/qemu-file.h"
#include "migration/vmstate.h"
#include "migration/stream/savevm.h"
#include "migration/incoming/loadvm.h"
#include "trace/trace.h"

/* ---- what savevm.c needs from the rest of the system ---- */

bool trace_active;
static int bql_depth;

void trace_event_printf(const char *event, const char *fmt, ...)
{
    g_assert_not_reached();     /* trace_active is false */
}

void bql_lock(void)
{
    g_assert_cmpint(bql_depth, ==, 0);
    bql_depth++;
}

void bql_unlock(void)
{
    g_assert_cmpint(bql_depth, ==, 1);
    bql_depth--;
}

bool bql_locked(void)
{
    return bql_depth > 0;
}

/* ---- two fake devices ---- */

typedef struct Dev {
    uint32_t a;
    uint64_t b;
    uint8_t blob[16];
    int post_loads;             /* not migrated */
} Dev;

static Dev dev0, dev1;

/* Rejects a == 0xbad; checks the load runs under the BQL. */
static bool dev_post_load(void *opaque, int version_id, Error **errp)
{
    Dev *d = opaque;

    g_assert_true(bql_locked());
    d->post_loads++;
    if (d->a == 0xbad) {
        error_setg(errp, "a is bad");
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_dev = {
    .name = "dev",
    .size = sizeof(Dev),
    .version_id = 2,
    .minimum_version_id = 1,
    .post_load = dev_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(a, Dev),
        VMSTATE_UINT64(b, Dev),
        VMSTATE_BUFFER(blob, Dev),
        VMSTATE_END_OF_LIST()
    },
};

static void register_devices_once(void)
{
    static bool done;

    if (!done) {
        savevm_set_machine_type("microvm");
        vmstate_register("dev", 0, &vmstate_dev, &dev0);
        vmstate_register("dev", 1, &vmstate_dev, &dev1);
        done = true;
    }
}

static void set_devices(uint32_t a0, uint32_t a1)
{
    dev0 = (Dev) { .a = a0, .b = 0x1111222233334444ull };
    memset(dev0.blob, 0x5a, sizeof(dev0.blob));
    dev1 = (Dev) { .a = a1, .b = 0x5555666677778888ull };
    memset(dev1.blob, 0xa5, sizeof(dev1.blob));
}

/* A whole stream as the saver writes it, with the devices as they are now. */
static GByteArray *save_stream(void)
{
    QEMUFile *f = qemu_file_new_buffer_output();
    Error *err = NULL;
    GByteArray *out = g_byte_array_new();
    const uint8_t *data;
    size_t len;

    qemu_savevm_state_header(f);
    bql_lock();
    g_assert_true(qemu_savevm_state_devices(f, NULL, &err));
    bql_unlock();
    g_assert_null(err);
    data = qemu_file_buffer_data(f, &len);
    g_byte_array_append(out, data, len);
    qemu_fclose(f);
    return out;
}

static bool load_stream(const uint8_t *data, size_t len, Error **errp)
{
    QEMUFile *f = qemu_file_new_buffer_input(data, len);
    bool ok = qemu_loadvm_state(f, errp);

    qemu_fclose(f);
    g_assert_cmpint(bql_depth, ==, 0);
    return ok;
}

/* Offset of the first byte of @needle in @hay (which must hold it). */
static size_t find_bytes(const GByteArray *hay, const void *needle, size_t n)
{
    for (size_t i = 0; i + n <= hay->len; i++) {
        if (!memcmp(hay->data + i, needle, n)) {
            return i;
        }
    }
    g_assert_not_reached();
}

static void put_be32_at(GByteArray *s, size_t off, uint32_t v)
{
    s->data[off] = v >> 24;
    s->data[off + 1] = v >> 16;
    s->data[off + 2] = v >> 8;
    s->data[off + 3] = v;
}

static void test_round_trip(void)
{
    g_autoptr(GByteArray) s = NULL;
    Error *err = NULL;

    register_devices_once();
    set_devices(7, 8);
    s = save_stream();
    set_devices(0, 0);
    g_assert_true(load_stream(s->data, s->len, &err));
    g_assert_null(err);
    g_assert_cmpuint(dev0.a, ==, 7);
    g_assert_cmpuint(dev1.a, ==, 8);
    g_assert_cmpuint(dev1.b, ==, 0x5555666677778888ull);
}

/* dev1's post_load refuses: dev1 keeps what it had; dev0 (loaded before) took its new state. */
static void test_refused_section_put_back(void)
{
    g_autoptr(GByteArray) s = NULL;
    Error *err = NULL;
    Dev before;

    register_devices_once();
    set_devices(7, 0xbad);
    s = save_stream();
    set_devices(1, 2);
    dev1.b = 42;
    memset(dev1.blob, 0x33, sizeof(dev1.blob));
    before = dev1;
    g_assert_false(load_stream(s->data, s->len, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "a is bad"));
    g_assert_nonnull(strstr(error_get_pretty(err), "device 'dev'"));
    error_free(err);
    g_assert_cmpint(dev1.post_loads, ==, before.post_loads);    /* the whole struct came back */
    g_assert_cmpmem(&dev1, sizeof(dev1), &before, sizeof(before));
    g_assert_cmpuint(dev0.a, ==, 7);
}

/* Where the vmdesc record (0x06, be32 length, JSON to the end) of @s starts. */
static size_t vmdesc_offset(const GByteArray *s)
{
    for (size_t off = s->len - 5; off > 0; off--) {
        if (s->data[off] == 0x06 && s->data[off - 1] == 0x00 &&
            ldl_be_p(s->data + off + 1) == s->len - off - 5) {
            return off;
        }
    }
    g_assert_not_reached();
}

/*
 * Cut inside dev1's fields at every byte: dev1 is never half-loaded. Cut
 * after the EOF byte (only the vmdesc lost), the load stands.
 */
static void test_truncated_section_put_back(void)
{
    g_autoptr(GByteArray) s = NULL;
    static const char idstr[] = "\3dev";
    size_t first, second, vmdesc;
    Dev saved;

    register_devices_once();
    set_devices(7, 9);
    saved = dev1;
    s = save_stream();
    first = find_bytes(s, idstr, 4);
    second = first + 4 + find_bytes(&(GByteArray){ s->data + first + 4, s->len - first - 4 },
                                    idstr, 4);
    vmdesc = vmdesc_offset(s);
    for (size_t cut = second; cut < s->len; cut++) {
        Error *err = NULL;
        Dev before;

        set_devices(1, 2);
        before = dev1;
        if (cut >= vmdesc) {
            g_assert_true(load_stream(s->data, cut, &err));
            g_assert_cmpuint(dev1.a, ==, saved.a);
            g_assert_cmpuint(dev1.b, ==, saved.b);
            g_assert_cmpmem(dev1.blob, sizeof(dev1.blob), saved.blob, sizeof(saved.blob));
            continue;
        }
        g_assert_false(load_stream(s->data, cut, &err));
        g_assert_nonnull(err);
        error_free(err);
        if (dev1.a == saved.a) {
            /* dev1 loaded whole; only its footer, the EOF or the vmdesc was cut. */
            g_assert_cmpuint(dev1.b, ==, saved.b);
            g_assert_cmpmem(dev1.blob, sizeof(dev1.blob), saved.blob, sizeof(saved.blob));
            continue;
        }
        g_assert_cmpmem(&dev1, sizeof(dev1), &before, sizeof(before));
    }
}

/* A version of 2^31 or more is not "older than ours". */
static void test_huge_version_refused(void)
{
    g_autoptr(GByteArray) s = NULL;
    static const char idstr[] = "\3dev";
    Error *err = NULL;
    size_t at;

    register_devices_once();
    set_devices(7, 8);
    s = save_stream();
    at = find_bytes(s, idstr, 4);
    put_be32_at(s, at + 4 + 4, 0x80000001u);   /* after idstr: instance, then version */
    g_assert_false(load_stream(s->data, s->len, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "unsupported version 2147483649"));
    error_free(err);
}

/* Two sections with one id: the second is refused, its device untouched. */
static void test_duplicate_section_id_refused(void)
{
    g_autoptr(GByteArray) s = NULL;
    static const char idstr[] = "\3dev";
    Error *err = NULL;
    size_t first, second;
    uint32_t id;
    Dev before;

    register_devices_once();
    set_devices(7, 8);
    s = save_stream();
    first = find_bytes(s, idstr, 4);
    second = first + 4 + find_bytes(&(GByteArray){ s->data + first + 4, s->len - first - 4 },
                                    idstr, 4);
    memcpy(&id, s->data + first - 4, 4);
    memcpy(s->data + second - 4, &id, 4);
    set_devices(1, 2);
    before = dev1;
    g_assert_false(load_stream(s->data, s->len, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "is already used by"));
    error_free(err);
    g_assert_cmpmem(&dev1, sizeof(dev1), &before, sizeof(before));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/savevm/round-trip", test_round_trip);
    g_test_add_func("/savevm/refused-section-put-back", test_refused_section_put_back);
    g_test_add_func("/savevm/truncated-section-put-back", test_truncated_section_put_back);
    g_test_add_func("/savevm/huge-version-refused", test_huge_version_refused);
    g_test_add_func("/savevm/duplicate-section-id-refused", test_duplicate_section_id_refused);
    return g_test_run();
}
