/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Postcopy between real instances: the guest dirties memory faster than
 * precopy could ever send it (downtime-limit 1 ms), and the migration is
 * switched to postcopy either at once or after the first pass. Either the
 * destination runs the verify firmware, which checks every page it reads
 * (each one it touches before it arrived is a page request), or it stays
 * paused (-S) and its RAM is compared byte for byte with the stopped
 * source's once everything arrived. Each dirty-log mode, unix and tcp,
 * QMP and HMP, two vCPUs, a guest in two KVM slots.
 */
#include <stdio.h>
#include <string.h>
#include "libvmtest.h"
#include "migtest.h"

typedef struct PostcopyCase {
    const char *name;
    const char *transport;      /* "unix" or "tcp" */
    const char *append;
    const char *mem;
    bool dst_paused;            /* -S on the destination, compare RAM */
    bool hmp;                   /* drive both sides through HMP */
    bool after_first_pass;      /* else switch as soon as pages flow */
    const char *extra;          /* more arguments for both sides, NULL = none */
    uint64_t below_4g;          /* -machine max-ram-below-4g, 0 = default */
    bool preempt;               /* postcopy-preempt too */
    bool blocktime;             /* postcopy-blocktime on the destination */
} PostcopyCase;

#define VERIFY "mode=verify mem=192"
/*
 * report_ms=250: a mode=dirty guest's STAT lines are what the source's start and
 * migtest_assert_guest_continues wait for; 250 ms apart they say the same as a
 * second apart (the guest paces its writes per write, not per period).
 */
#define DIRTY "mode=dirty mem=192 rate=600 pattern=random report_ms=250"
#define DIRTY320 "mode=dirty mem=320 rate=600 pattern=random report_ms=250"

static const PostcopyCase cases[] = {
    { "verify-after-first-pass", "unix", VERIFY, "256M", false, false, true },
    { "verify-at-once", "unix", VERIFY, "256M", false, false, false },
    { "dirty-identical-at-once", "unix", DIRTY, "256M", true, false, false },
    { "dirty-identical-after-first-pass", "tcp", DIRTY, "256M", true, false, true },
    { "hmp-tcp-verify", "tcp", VERIFY, "256M", false, true, true },
    { "get-log-dirty-identical", "unix", DIRTY, "256M", true, false, true,
      "-accel kvm,x-dirty-log=get" },
    { "ring-verify", "unix", VERIFY, "256M", false, false, true, "-accel kvm,dirty-ring-size=4096" },
    { "ring-dirty-identical", "unix", DIRTY, "256M", true, false, false,
      "-accel kvm,dirty-ring-size=4096" },
    { "smp2-verify", "unix", VERIFY, "256M", false, false, true, "-smp 2" },
    { "two-slots-dirty-identical", "unix", DIRTY320, "384M",
      true, false, true, "-machine max-ram-below-4g=256M", 256ULL << 20 },
    { "preempt-verify-at-once", "unix", VERIFY, "256M", false, false, false, NULL, 0, true },
    { "preempt-verify-after-first-pass", "tcp", VERIFY, "256M", false, false, true, NULL, 0,
      true },
    { "preempt-dirty-identical", "unix", DIRTY, "256M", true, false, false, NULL, 0, true },
    { "hmp-preempt-ring-verify", "unix", VERIFY, "256M", false, true, true,
      "-accel kvm,dirty-ring-size=4096", 0, true },
    { "preempt-get-log-smp2-verify", "tcp", VERIFY, "256M", false, false, false,
      "-accel kvm,x-dirty-log=get -smp 2", 0, true },
    { "blocktime-smp2-verify", "unix", VERIFY, "256M", false, false, false, "-smp 2", 0, false,
      true },
    { "hmp-blocktime-preempt-verify", "unix", VERIFY, "256M", false, true, false, NULL, 0, true,
      true },
};

static void enable_postcopy(VM *vm, const PostcopyCase *c)
{
    if (c->hmp) {
        g_autofree char *out = vm_hmp(vm, "migrate_set_capability postcopy-ram on");

        g_assert_cmpstr(out, ==, "");
        if (c->preempt) {
            g_autofree char *out2 = vm_hmp(vm, "migrate_set_capability postcopy-preempt on");

            g_assert_cmpstr(out2, ==, "");
        }
    } else {
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                  "{'capabilities': [{'capability': 'postcopy-ram', "
                                  "'state': true}, {'capability': 'postcopy-preempt', "
                                  "'state': %s}]}}", c->preempt ? "true" : "false"));
    }
}

/* Migrate without any hope of converging, and switch to postcopy when the case says. */
static void migrate_then_postcopy(VM *src, const PostcopyCase *c, const char *uri)
{
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 134217728, 'downtime-limit': 1}}"));
    if (c->hmp) {
        g_autofree char *out = vm_hmp(src, "migrate -d %s", uri);

        g_assert_cmpstr(out, ==, "");
    } else {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}",
                                  uri));
    }
    if (c->after_first_pass) {
        migtest_wait_ram_progress(src, "ram.dirty-sync-count", 1);
    } else {
        migtest_wait_ram_progress(src, "ram.transferred", 4 * 1024 * 1024);
    }
    if (c->hmp) {
        g_autofree char *out = vm_hmp(src, "migrate_start_postcopy");

        g_assert_cmpstr(out, ==, "");
    } else {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-start-postcopy'}"));
    }
}

/* The destination's own view of a finished postcopy. */
static void check_destination(VM *dst, const PostcopyCase *c)
{
    JsonNode *info = vm_wait_migration(dst, "completed|postcopy-paused|failed", 120);

    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    g_assert_true(json_has(info, "x-postcopy"));
    g_assert_cmpint(json_get_int(info, "x-postcopy.pages-placed"), >, 0);
    g_assert_cmpint(json_get_int(info, "x-postcopy.requests-answered"), <=,
                    json_get_int(info, "x-postcopy.page-requests"));
    if (!c->dst_paused) {
        /* A running guest touched pages that were not there yet. */
        g_assert_cmpint(json_get_int(info, "x-postcopy.page-requests"), >, 0);
        g_assert_true(json_has(info, "postcopy-latency"));
    }
    if (c->blocktime) {
        JsonArray *per_vcpu = json_object_get_array_member(json_node_get_object(info),
                                                           "postcopy-vcpu-blocktime");
        JsonArray *lat = json_object_get_array_member(json_node_get_object(info),
                                                      "postcopy-vcpu-latency");
        int64_t all = json_get_int(info, "postcopy-blocktime");
        int nvcpus = c->extra && strstr(c->extra, "-smp 2") ? 2 : 1;

        g_assert_cmpint(json_array_get_length(per_vcpu), ==, nvcpus);
        g_assert_cmpint(json_array_get_length(lat), ==, nvcpus);
        /* The boot vCPU runs the firmware: it waited for pages, for a while on average. */
        g_assert_cmpint(json_array_get_int_element(lat, 0), >, 0);
        /* All blocked at once is never longer than one of them blocked. */
        g_assert_cmpint(all, <=, json_array_get_int_element(per_vcpu, 0));
        g_assert_cmpint(json_array_get_length(json_object_get_array_member(
                            json_node_get_object(info), "postcopy-latency-dist")), ==, 24);
    }
    json_node_unref(info);
    if (c->hmp && c->blocktime) {
        g_autofree char *out = vm_hmp(dst, "info migrate");

        g_assert_nonnull(strstr(out, "postcopy blocktime: "));
        g_assert_nonnull(strstr(out, "postcopy vcpu blocktime: ["));
    }
    if (c->hmp && !c->dst_paused) {
        g_autofree char *out = vm_hmp(dst, "info migrate");

        g_assert_nonnull(strstr(out, "postcopy request latency: p50"));
        g_assert_nonnull(strstr(out, "postcopy request latency histogram (us):"));
    }
}

static void test_postcopy(gconstpointer data)
{
    const PostcopyCase *c = data;
    g_autofree char *uri = migtest_uri(c->transport);
    const char *extra = c->extra ? c->extra : "";
    JsonNode *info;
    int pass_before;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra(c->mem, c->append, extra);
    pass_before = migtest_last_pass(src);
    dst = migtest_start_dest_extra(c->mem, c->append, c->dst_paused, uri, extra);
    enable_postcopy(dst, c);
    enable_postcopy(src, c);
    if (c->blocktime) {
        json_node_unref(vm_qmp_ok(dst, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                  "{'capabilities': [{'capability': 'postcopy-blocktime', "
                                  "'state': true}]}}"));
    }
    migrate_then_postcopy(src, c, uri);
    info = vm_wait_migration(src, "completed|failed|postcopy-paused", 300);
    if (strcmp(json_get_str(info, "status"), "completed")) {
        g_autofree char *s = json_to_string(info, TRUE);

        g_printerr("%s\n", s);
    }
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    g_assert_cmpint(json_get_int(info, "ram.postcopy-bytes"), >, 0);
    /* The source's side of the requests: each one it got, answered. */
    g_assert_cmpint(json_get_int(info, "x-postcopy.page-requests"), ==,
                    json_get_int(info, "ram.postcopy-requests"));
    g_assert_cmpint(json_get_int(info, "x-postcopy.requests-answered"), <=,
                    json_get_int(info, "x-postcopy.page-requests") * 64);
    if (!c->dst_paused) {
        g_assert_cmpint(json_get_int(info, "ram.postcopy-requests"), >, 0);
        g_assert_cmpint(json_get_int(info, "x-postcopy.requests-answered"), >, 0);
    }
    json_node_unref(info);
    if (c->hmp) {
        g_autofree char *out = vm_hmp(src, "info migrate");

        g_assert_nonnull(strstr(out, "postcopy ram: "));
    }
    {
        g_autofree char *st = vm_status(src);

        g_assert_cmpstr(st, ==, "postmigrate");
    }
    check_destination(dst, c);
    if (c->dst_paused) {
        migtest_assert_ram_identical_split(src, dst, c->mem, c->below_4g ? c->below_4g
                                                                        : 3ULL << 30);
        json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    }
    migtest_assert_guest_continues(dst, c->append, pass_before);
    vm_kill(src);
    vm_kill(dst);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path = g_strdup_printf("/postcopy/%s", cases[i].name);

        g_test_add_data_func(path, &cases[i], test_postcopy);
    }
    return g_test_run();
}
