/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the stream's COMMAND records (migration/stream/savevm-cmd.c and
 * the PACKAGED blob in savevm.c), against a postcopy destination that
 * refuses everything (postcopy-dst-fake.c): each malformed command is
 * refused by the loader's own checks with a clear error, before the
 * destination sees it; a well-formed one reaches it; a package's device
 * sections load from inside the blob.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "migration/qemu-file.h"
#include "migration/vmstate.h"
#include "migration/stream/savevm.h"
#include "migration/incoming/loadvm.h"
#include "migration/stream/savevm-cmd.h"
#include "migration/stream/postcopy.h"
#include "postcopy-dst-fake.h"
#include "trace/trace.h"

bool trace_active;
static int bql_depth;

void trace_event_printf(const char *event, const char *fmt, ...)
{
    g_assert_not_reached();     /* trace_active is false */
}

void bql_lock(void)
{
    bql_depth++;
}

void bql_unlock(void)
{
    bql_depth--;
}

bool bql_locked(void)
{
    return bql_depth > 0;
}

typedef struct Dev {
    uint32_t a;
} Dev;

static Dev dev0;

static const VMStateDescription vmstate_dev = {
    .name = "dev",
    .size = sizeof(Dev),
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(a, Dev),
        VMSTATE_END_OF_LIST()
    },
};

static void register_once(void)
{
    static bool done;

    if (!done) {
        savevm_set_machine_type("microvm");
        vmstate_register("dev", 0, &vmstate_dev, &dev0);
        done = true;
    }
}

/* A stream: the header, then what @put writes (commands, raw bytes). */
static GByteArray *stream_with(void (*put)(QEMUFile *f, const void *arg), const void *arg)
{
    QEMUFile *f = qemu_file_new_buffer_output();
    GByteArray *out = g_byte_array_new();
    const uint8_t *data;
    size_t len;

    qemu_savevm_state_header(f);
    put(f, arg);
    data = qemu_file_buffer_data(f, &len);
    g_byte_array_append(out, data, len);
    qemu_fclose(f);
    return out;
}

/* Loads @s: it must fail with @msg in the error, reaching the fake @calls times. */
static void assert_load_fails(const GByteArray *s, const char *msg, int calls)
{
    QEMUFile *f = qemu_file_new_buffer_input(s->data, s->len);
    Error *err = NULL;
    int before = postcopy_fake_calls;

    g_assert_false(qemu_loadvm_state(f, &err));
    qemu_fclose(f);
    g_assert_nonnull(err);
    if (!strstr(error_get_pretty(err), msg)) {
        g_printerr("error '%s' lacks '%s'\n", error_get_pretty(err), msg);
    }
    g_assert_nonnull(strstr(error_get_pretty(err), msg));
    g_assert_cmpint(postcopy_fake_calls - before, ==, calls);
    error_free(err);
    g_assert_cmpint(bql_depth, ==, 0);
}

/* A raw command: type byte, be16 cmd, be16 len, then @len bytes of @body. */
typedef struct RawCmd {
    uint16_t cmd;
    uint16_t len;
    const uint8_t *body;
    size_t body_len;            /* bytes of body actually written (may differ from len) */
} RawCmd;

static void put_raw(QEMUFile *f, const void *arg)
{
    const RawCmd *c = arg;

    qemu_put_byte(f, QEMU_VM_COMMAND);
    qemu_put_be16(f, c->cmd);
    qemu_put_be16(f, c->len);
    if (c->body_len) {
        qemu_put_buffer(f, c->body, c->body_len);
    }
}

static void test_hostile_commands(void)
{
    static const uint8_t zeros[64];
    static const uint8_t bad_version[] = { 1, 1, 'x', 0, [4 ... 19] = 0 };
    static const uint8_t name_past_end[] = { 0, 200, 'x', 0, [4 ... 19] = 0 };
    static const uint8_t no_nul[] = { 0, 1, 'x', 'y', [4 ... 19] = 0 };
    static const uint8_t odd_pairs[] = { 0, 1, 'x', 0, [4 ... 20] = 0 };
    static const uint8_t bitmap_len[] = { 5, 'a', 'b' };
    static const struct {
        RawCmd c;
        const char *msg;
    } cases[] = {
        { { 0, 0 }, "VM_COMMAND 0x0 out of range" },
        { { MIG_CMD_MAX, 0 }, "out of range" },
        { { 0xffff, 0 }, "VM_COMMAND 0xffff out of range" },
        { { MIG_CMD_PING, 3, zeros, 3 }, "CMD_PING received with bad length - expecting 4, got 3" },
        { { MIG_CMD_POSTCOPY_ADVISE, 8, zeros, 8 }, "expecting 16, got 8" },
        { { MIG_CMD_POSTCOPY_LISTEN, 1, zeros, 1 }, "expecting 0, got 1" },
        { { MIG_CMD_POSTCOPY_RUN, 0 }, "CMD_POSTCOPY_RUN outside the packaged device state" },
        { { MIG_CMD_POSTCOPY_RAM_DISCARD, 3, zeros, 3 }, "CMD_POSTCOPY_RAM_DISCARD invalid" },
        { { MIG_CMD_POSTCOPY_RAM_DISCARD, sizeof(bad_version), bad_version, sizeof(bad_version) },
          "version 1" },
        { { MIG_CMD_POSTCOPY_RAM_DISCARD, sizeof(name_past_end), name_past_end,
            sizeof(name_past_end) }, "invalid length 20 for a name of 200 bytes" },
        { { MIG_CMD_POSTCOPY_RAM_DISCARD, sizeof(no_nul), no_nul, sizeof(no_nul) },
          "invalid length" },
        { { MIG_CMD_POSTCOPY_RAM_DISCARD, sizeof(odd_pairs), odd_pairs, sizeof(odd_pairs) },
          "invalid length 21" },
        { { MIG_CMD_RECV_BITMAP, sizeof(bitmap_len), bitmap_len, sizeof(bitmap_len) },
          "CMD_RECV_BITMAP invalid length 3" },
        { { MIG_CMD_ENABLE_COLO, 0 }, "CMD_ENABLE_COLO is not supported here" },
        { { MIG_CMD_SWITCHOVER_START, 1, zeros, 1 },
          "CMD_SWITCHOVER_START received with bad length - expecting 0, got 1" },
        { { MIG_CMD_PACKAGED, 2, zeros, 2 }, "CMD_PACKAGED received with bad length" },
        /* The body is cut short: a read error, nothing acted on. */
        { { MIG_CMD_PING, 4, zeros, 2 }, "reading CMD_PING failed" },
    };

    register_once();
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GByteArray) s = stream_with(put_raw, &cases[i].c);

        assert_load_fails(s, cases[i].msg, 0);
    }
}

/* Well-formed: the destination gets it (and the fake's refusal is the error). */
static void test_wellformed_reaches_destination(void)
{
    uint8_t advise[16], discard[3 + 1 + 16] = { 0, 1, 'x', 0 }, bitmap[] = { 1, 'x' };
    const struct {
        RawCmd c;
        const char *msg;
    } cases[] = {
        { { MIG_CMD_OPEN_RETURN_PATH, 0 }, "OPEN_RETURN_PATH refused" },
        { { MIG_CMD_POSTCOPY_ADVISE, 16, advise, 16 }, "ADVISE refused" },
        { { MIG_CMD_POSTCOPY_LISTEN, 0 }, "LISTEN refused" },
        { { MIG_CMD_POSTCOPY_RAM_DISCARD, sizeof(discard), discard, sizeof(discard) },
          "DISCARD refused" },
        { { MIG_CMD_RECV_BITMAP, sizeof(bitmap), bitmap, sizeof(bitmap) }, "RECV_BITMAP refused" },
        { { MIG_CMD_POSTCOPY_RESUME, 0 }, "POSTCOPY_RESUME refused" },
    };

    stq_be_p(advise, 4096);
    stq_be_p(advise + 8, 4096);
    register_once();
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GByteArray) s = stream_with(put_raw, &cases[i].c);

        assert_load_fails(s, cases[i].msg, 1);
    }
}

/* QEMU 10.0's switchover-start, empty: taken and passed over; what follows decides. */
static void test_switchover_start_taken(void)
{
    const RawCmd c = { MIG_CMD_SWITCHOVER_START, 0 };
    g_autoptr(GByteArray) s = stream_with(put_raw, &c);

    QEMUFile *f;
    Error *err = NULL;

    register_once();
    f = qemu_file_new_buffer_input(s->data, s->len);
    /* The stream stops after it: the error is the truncation, not the command. */
    g_assert_false(qemu_loadvm_state(f, &err));
    qemu_fclose(f);
    g_test_message("after CMD_SWITCHOVER_START: %s", error_get_pretty(err));
    g_assert_null(strstr(error_get_pretty(err), "SWITCHOVER"));
    g_assert_null(strstr(error_get_pretty(err), "VM_COMMAND"));
    error_free(err);
}

/* Packages: what a blob holds and how it ends. */
typedef enum PkgKind {
    PKG_DEVICES_RUN,            /* the device section, then RUN */
    PKG_NO_RUN,                 /* the device section only */
    PKG_NESTED,                 /* a package inside */
    PKG_EOF,                    /* an EOF inside */
    PKG_TOO_BIG,                /* a length past the limit */
    PKG_TRUNCATED,              /* a length past the stream's end */
} PkgKind;

static void put_package(QEMUFile *f, const void *arg)
{
    PkgKind kind = *(const PkgKind *)arg;
    QEMUFile *pkg = qemu_file_new_buffer_output();
    const uint8_t *blob;
    Error *err = NULL;
    size_t len;

    if (kind == PKG_TOO_BIG || kind == PKG_TRUNCATED) {
        qemu_savevm_send_packaged_header(f, kind == PKG_TOO_BIG ? MAX_VM_CMD_PACKAGED_SIZE + 1
                                                                 : 1000);
        qemu_put_buffer(f, (const uint8_t *)"short", 5);
        qemu_fclose(pkg);
        return;
    }
    bql_lock();
    g_assert_true(qemu_savevm_state_devices_postcopy(pkg, &err));
    bql_unlock();
    if (kind == PKG_DEVICES_RUN) {
        qemu_savevm_send_postcopy_run(pkg);
    } else if (kind == PKG_NESTED) {
        qemu_savevm_send_packaged_header(pkg, 0);
    } else if (kind == PKG_EOF) {
        qemu_put_byte(pkg, 0);
    }
    blob = qemu_file_buffer_data(pkg, &len);
    qemu_savevm_send_packaged_header(f, len);
    qemu_put_buffer(f, blob, len);
    qemu_fclose(pkg);
}

static void test_packages(void)
{
    static const struct {
        PkgKind kind;
        const char *msg;
        int calls;
    } cases[] = {
        /* The fake refuses RUN: proof the blob was read up to it. */
        { PKG_DEVICES_RUN, "RUN refused", 1 },
        { PKG_NO_RUN, "the packaged state ended without CMD_POSTCOPY_RUN", 0 },
        { PKG_NESTED, "CMD_PACKAGED inside a package", 0 },
        { PKG_EOF, "EOF inside the packaged state", 0 },
        { PKG_TOO_BIG, "Unreasonably large packaged state", 0 },
        { PKG_TRUNCATED, "reading the packaged state (1000 bytes) failed", 0 },
    };

    register_once();
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GByteArray) s = NULL;

        dev0.a = 77;
        s = stream_with(put_package, &cases[i].kind);
        dev0.a = 1;
        assert_load_fails(s, cases[i].msg, cases[i].calls);
        if (cases[i].kind == PKG_DEVICES_RUN || cases[i].kind == PKG_NO_RUN) {
            /* The device section inside the blob was loaded. */
            g_assert_cmpuint(dev0.a, ==, 77);
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/savevm-cmd/hostile", test_hostile_commands);
    g_test_add_func("/savevm-cmd/well-formed-reaches-destination",
                    test_wellformed_reaches_destination);
    g_test_add_func("/savevm-cmd/packages", test_packages);
    g_test_add_func("/savevm-cmd/switchover-start", test_switchover_start_taken);
    return g_test_run();
}
