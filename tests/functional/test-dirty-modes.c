/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every dirty-tracking mode under heavy random dirtying: get-log, clear-log
 * with small and huge chunks, and the dirty ring. With -S on the
 * destination the RAM of both sides must be byte-identical, and the verify
 * firmware must carry on with no FAIL. With max-ram-below-4g=400M one
 * RAMBlock lands in two KVM slots; clear-bitmap-shift 16 (256 MiB chunks)
 * makes the chunk at 256 MiB span both, so chunk boundaries are not slot
 * boundaries. And a migration beside a second client of the dirty log
 * (calc-dirty-rate's dirty-bitmap mode).
 */
#include <stdio.h>
#include <string.h>
#include "libvmtest.h"
#include "migtest.h"

typedef struct ModeCase {
    const char *name;
    const char *accel;          /* -accel ... */
    const char *mode;           /* expected x-dirty-log.mode */
    int shift;                  /* x-clear-bitmap-shift, 0 = default */
    const char *mem;
    uint64_t below_4g;          /* -machine max-ram-below-4g, 0 = default */
    const char *append;
} ModeCase;

/*
 * report_ms=250: a mode=dirty guest's STAT lines are what the source's start and
 * migtest_assert_guest_continues wait for; 250 ms apart they say the same as a
 * second apart (the guest paces its writes per write, not per period).
 */
#define DIRTY384 "mode=dirty mem=384 rate=0 pattern=random report_ms=250"
#define DIRTY800 "mode=dirty mem=800 rate=0 pattern=random report_ms=250"
static const ModeCase cases[] = {
    { "get-random", "kvm,x-dirty-log=get", "get-log", 0, "512M", 0,
      DIRTY384 },
    { "clear-random-shift6", "kvm,x-dirty-log=clear", "clear-log", 6, "512M", 0,
      DIRTY384 },
    { "clear-random-shift14", "kvm,x-dirty-log=clear", "clear-log", 14, "512M", 0,
      DIRTY384 },
    { "ring-random", "kvm,dirty-ring-size=4096", "dirty-ring", 0, "512M", 0,
      DIRTY384 },
    { "clear-verify", "kvm,x-dirty-log=clear", "clear-log", 12, "512M", 0, "mode=verify mem=384" },
    { "ring-verify", "kvm,dirty-ring-size=65536", "dirty-ring", 0, "512M", 0, "mode=verify mem=384" },
    { "clear-twoslots-shift16", "kvm,x-dirty-log=clear", "clear-log", 16, "1G", 400 << 20,
      DIRTY800 },
    { "get-twoslots", "kvm,x-dirty-log=get", "get-log", 0, "1G", 400 << 20,
      "mode=verify mem=800" },
};

static void test_mode(gconstpointer data)
{
    const ModeCase *c = data;
    g_autofree char *accel = c->below_4g ?
        g_strdup_printf("-accel %s -machine max-ram-below-4g=%" PRIu64, c->accel, c->below_4g) :
        g_strdup_printf("-accel %s", c->accel);
    g_autofree char *uri = migtest_uri("unix");
    JsonNode *info;
    int pass;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra(c->mem, c->append, accel);
    pass = migtest_last_pass(src);
    if (c->shift) {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                                  "{'x-clear-bitmap-shift': %d}}", c->shift));
    }
    dst = migtest_start_dest_extra(c->mem, c->append, true, uri, accel);
    migtest_slow_then_fast(src, uri, false);
    info = vm_wait_migration(src, "completed|failed", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    g_assert_cmpstr(json_get_str(info, "x-dirty-log.mode"), ==, c->mode);
    g_assert_cmpint(json_get_int(info, "ram.dirty-sync-count"), >=, 2);
    if (!strcmp(c->mode, "clear-log")) {
        g_assert_cmpint(json_get_int(info, "x-dirty-log.clears"), >, 0);
        g_assert_cmpint(json_get_int(info, "x-dirty-log.clear-bitmap-shift"), ==, c->shift);
    } else if (!strcmp(c->mode, "dirty-ring")) {
        g_assert_cmpint(json_get_int(info, "x-dirty-log.ring-harvests"), >, 0);
    }
    json_node_unref(info);
    migtest_wait_incoming_done(dst);
    migtest_assert_ram_identical_split(src, dst, c->mem, c->below_4g ? c->below_4g : 3ULL << 30);
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    migtest_assert_guest_continues(dst, c->append, pass);
    vm_kill(src);
    vm_kill(dst);
}

/*
 * Two clients of the KVM dirty log at once: calc-dirty-rate's dirty-bitmap
 * mode measures (syncs, re-arms all of RAM, syncs again) over and over
 * while a migration in @accel's mode tracks the same slots; the
 * migration must lose no page (RAM identical, the verify firmware goes on).
 */
static void test_beside_calc_dirty_rate(gconstpointer data)
{
    const char *accel = data;
    const char *append = "mode=verify mem=128";
    g_autofree char *extra = g_strdup_printf("-accel %s", accel);
    g_autofree char *uri = migtest_uri("unix");
    JsonNode *info;
    int pass, measured = 0;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra("256M", append, extra);
    pass = migtest_last_pass(src);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'x-clear-bitmap-shift': 6, 'max-bandwidth': 67108864, "
                              "'downtime-limit': 1}}"));
    dst = migtest_start_dest_extra("256M", append, true, uri, extra);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    while (measured < 3) {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'calc-dirty-rate', 'arguments': "
                                  "{'calc-time': 200, 'calc-time-unit': 'millisecond', "
                                  "'mode': 'dirty-bitmap'}}"));
        for (;;) {
            info = vm_qmp_ok(src, "{'execute': 'query-dirty-rate'}");
            if (!strcmp(json_get_str(info, "status"), "measured")) {
                break;
            }
            json_node_unref(info);
            vm_pump(src, 50);
        }
        g_assert_cmpint(json_get_int(info, "dirty-rate"), >, 0);
        json_node_unref(info);
        measured++;
        info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
        g_assert_cmpstr(json_get_str(info, "status"), ==, "active");
        json_node_unref(info);
    }
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 4294967296, 'downtime-limit': 30000}}"));
    info = vm_wait_migration(src, "completed|failed", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    migtest_wait_incoming_done(dst);
    migtest_assert_ram_identical(src, dst, "256M");
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    migtest_assert_guest_continues(dst, append, pass);
    vm_kill(src);
    vm_kill(dst);
}

static void test_bad_ring_options(void)
{
    static const struct {
        const char *accel;
        const char *expect;
    } bad[] = {
        { "kvm,dirty-ring-size=1000", "must be a power of two" },
        { "kvm,dirty-ring-size=8388608", "too big" },
        { "kvm,dirty-ring-size=4096,x-dirty-log=clear", "are exclusive" },
        { "kvm,x-dirty-log=sometimes", "x-dirty-log" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        VM *vm = vm_spawn("bad", false, "-accel %s -nodefaults -kernel %s", bad[i].accel,
                          vmtest_firmware());
        g_assert_cmpint(vm_wait_exit(vm, 30), ==, 1);
        g_assert_nonnull(strstr(vm->stderr_text->str, bad[i].expect));
        vm_kill(vm);
    }
}

static void test_bad_shift(void)
{
    VM *vm;
    JsonNode *r;
    g_autofree char *desc = NULL;
    g_autofree char *out = NULL;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("shift", true, MIGTEST_BASE_ARGS "-m 64M -kernel %s -append 'mode=idle mem=8'",
                  vmtest_firmware());
    r = vm_qmp(vm, "{'execute': 'migrate-set-parameters', 'arguments': {'x-clear-bitmap-shift': 5}}");
    desc = vm_qmp_error_desc(r, NULL);
    g_assert_nonnull(strstr(desc, "x-clear-bitmap-shift"));
    json_node_unref(r);
    out = vm_hmp(vm, "migrate_set_parameter x-clear-bitmap-shift 32");
    g_assert_nonnull(strstr(out, "x-clear-bitmap-shift"));
    g_clear_pointer(&out, g_free);
    out = vm_hmp(vm, "migrate_set_parameter x-clear-bitmap-shift 27");
    g_assert_cmpstr(out, ==, "");
    r = vm_qmp_ok(vm, "{'execute': 'query-migrate-parameters'}");
    g_assert_cmpint(json_get_int(r, "x-clear-bitmap-shift"), ==, 27);
    json_node_unref(r);
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path = g_strdup_printf("/dirty-modes/%s", cases[i].name);
        g_test_add_data_func(path, &cases[i], test_mode);
    }
    g_test_add_data_func("/dirty-modes/clear-beside-calc-dirty-rate", "kvm,x-dirty-log=clear",
                         test_beside_calc_dirty_rate);
    g_test_add_data_func("/dirty-modes/get-beside-calc-dirty-rate", "kvm,x-dirty-log=get",
                         test_beside_calc_dirty_rate);
    g_test_add_func("/dirty-modes/bad-ring-options", test_bad_ring_options);
    g_test_add_func("/dirty-modes/bad-shift", test_bad_shift);
    return g_test_run();
}
