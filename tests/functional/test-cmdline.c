/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Bad command lines: every one must exit with status 1 and one clear,
 * QEMU-style message on stderr, and never crash. Good ones that QEMU 7.2
 * users and libvirt pass: taken without a word. And every option that
 * takes no argument, one row each: it does what it says and nothing else
 * (-no-user-config once fell through to -no-reboot).
 */
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include "libvmtest.h"

typedef struct BadCase {
    const char *args;           /* %s = firmware */
    const char *expect;         /* substring of stderr */
} BadCase;

static const BadCase bad_cases[] = {
    { "-nonsense", "-nonsense: invalid option\nqemu-system-x86_64: this binary implements a "
      "subset of QEMU's options: see README.md, \"Works and refused\"" },
    { "-m", "-m: requires an argument" },
    /* QEMU 7.2 parses these with keyval: no short-form booleans. */
    { "-machine microvm,dump-guest-core -kernel %s",
      "-machine microvm,dump-guest-core: Expected '=' after parameter 'dump-guest-core'" },
    { "-smp 1,x -kernel %s", "-smp 1,x: Expected '=' after parameter 'x'" },
    { "-m 2X -kernel %s", "-m 2X: Parameter 'size' expects a non-negative number below 2^64" },
    { "-m 0 -kernel %s", "-m 0: Invalid RAM size" },
    { "-smp foo -kernel %s", "-smp foo: Parameter 'cpus' expects a number" },
    { "-M pc -kernel %s", "-M pc: unsupported machine type" },
    { "-accel tcg -kernel %s", "-accel tcg: invalid accelerator tcg" },
    { "-accel kvm,dirty-ring-size=1000 -kernel %s", "must be a power of two" },
    { "-cpu host,+nonexistent -kernel %s", "Property 'host-x86_64-cpu.nonexistent' not found" },
    { "-cpu pentium -kernel %s", "unable to find CPU model 'pentium'" },
    { "-device e1000 -kernel %s", "-device e1000: 'e1000' is not a valid device model name" },
    { "-object memory-backend-ram,id=m0 -kernel %s", "can't create backend with size 0" },
    { "-object memory-backend-foo,id=m0,size=1G -kernel %s",
      "Parameter 'qom-type' does not accept value 'memory-backend-foo'" },
    { "-object memory-backend-ram,id=m0,size=1G,share=maybe -kernel %s",
      "Parameter 'share' expects 'on' or 'off'" },
    { "-machine memory-backend=nope -kernel %s", "Memory backend 'nope' not found" },
    { "-machine max-ram-below-4g=5G -kernel %s", "expects size less than or equal to 4G" },
    { "-machine max-ram-below-4g=1M -kernel %s", "expects a multiple of 2M, at least 16M" },
    { "-kernel /nonexistent/kernel", "could not open kernel file '/nonexistent/kernel'" },
    { "-kernel /etc/passwd", "could not load kernel '/etc/passwd': not an ELF file" },
    { "-m 1M -kernel %s", "but -m is only" },
    { "-serial bogus:x -kernel %s", "-serial bogus:x: 'bogus:x' is not a valid char driver" },
    { "-qmp unix:/nonexistent-dir/q.sock,server=on,wait=off -kernel %s", "Failed to bind socket" },
    { "-mon chardev=missing -kernel %s", "chardev 'missing' not found" },
    { "-display gtk -kernel %s", "Display 'gtk' is not available" },
    { "-global foo.bar=1 -kernel %s", "driver 'foo' not found" },
    { "-global migration.x-lazy-restore=maybe -kernel %s",
      "Property 'migration.x-lazy-restore' expects on or off" },
    { "-global migration.x-mapped-ram=on -global migration.x-xbzrle=on -kernel %s",
      "Mapped-ram migration is incompatible with xbzrle" },
    { "somefile.img", "disk images are not supported" },
    /* -drive and -blockdev, with QEMU 7.2's words (its binary checked on each). */
    { "-drive file=/nonexistent.img,if=none,id=d0 -kernel %s",
      "-drive file=/nonexistent.img,if=none,id=d0: Could not open '/nonexistent.img': "
      "No such file or directory" },
    { "-drive file=/x.img,if=none,format=bogus -kernel %s", "Unknown driver 'bogus'" },
    { "-drive file=/x.img,if=none,cache=bogus -kernel %s", "invalid cache option" },
    { "-drive file=/x.img,if=none,werror=bogus -kernel %s", "'bogus' invalid write error action" },
    { "-drive file=/x.img,if=virtio -kernel %s", "No 'PCI' bus found for device 'virtio-blk-pci'" },
    { "-drive file=/x.img,if=none,format=raw,aio=native -kernel %s",
      "aio=native was specified, but it requires cache.direct=on, which was not specified." },
    { "-drive file=/x.img,if=none,id=#d -kernel %s", "Parameter 'id' expects an identifier" },
    { "-drive file=/,if=none,format=raw,readonly=on -kernel %s",
      "'file' driver requires '/' to be a regular file" },
    { "-blockdev driver=bogus,node-name=n0 -kernel %s",
      "Parameter 'driver' does not accept value 'bogus'" },
    { "-blockdev driver=file,filename=/x.img -kernel %s",
      "'node-name' must be specified for the root node" },
    { "-blockdev driver=raw,node-name=n0,file=nope -kernel %s",
      "Cannot find device='nope' nor node-name='nope'" },
    { "-blockdev driver=raw,node-name=n0,file.driver=file,file.filename=/x.img,file.foo=1 "
      "-kernel %s", "Parameter 'file.foo' is unexpected" },
    { "-blockdev '{\"driver\":\"raw\",\"node-name\":\"n0\",\"file\":\"nope\"}' -kernel %s",
      "Cannot find device='nope' nor node-name='nope'" },
    /* QEMU 7.2 and 10.0 take driftfix=none|slew and say only this of the rest. */
    { "-rtc driftfix=bogus -kernel %s", "invalid option value 'bogus'" },
    /* -audiodev is keyval in QEMU 7.2: its short-form booleans are errors, not warnings. */
    { "-audiodev none,id=a0,in.mixing-engine -kernel %s",
      "-audiodev none,id=a0,in.mixing-engine: Expected '=' after parameter 'in.mixing-engine'" },
    /* A -chardev error names the whole argument, as QEMU's does. */
    { "-chardev socket,id=c0,path=/nonexistent-dir/c.sock -kernel %s",
      "-chardev socket,id=c0,path=/nonexistent-dir/c.sock: Failed to connect to "
      "'/nonexistent-dir/c.sock': No such file or directory" },
    /* QEMU would speak telnet on these; ours are raw sockets, so they are refused. */
    { "-chardev socket,id=c0,host=127.0.0.1,port=0,server=on,wait=off,telnet=on -kernel %s",
      "telnet=on is not supported by this build; use a raw socket" },
    { "-serial tcp:127.0.0.1:0,server,nowait,telnet -kernel %s",
      "telnet=on is not supported by this build; use a raw socket" },
    { "-serial telnet:127.0.0.1:0,server=on,wait=off -kernel %s",
      "telnet=on is not supported by this build; use a raw socket (tcp:127.0.0.1:0," },
};

static void test_bad_cmdline(gconstpointer data)
{
    const BadCase *c = data;
    g_autofree char *args = g_strdup_printf(c->args, vmtest_firmware());
    VM *vm = vm_spawn("bad", false, "-nodefaults %s", args);
    int status = vm_wait_exit(vm, 60);

    if (status != 1 || !strstr(vm->stderr_text->str, c->expect) ||
        !g_str_has_prefix(vm->stderr_text->str, "qemu-system-x86_64: ")) {
        g_printerr("args: %s\nstatus: %d\nstderr: %s\n", args, status, vm->stderr_text->str);
    }
    g_assert_cmpint(status, ==, 1);
    g_assert_true(g_str_has_prefix(vm->stderr_text->str, "qemu-system-x86_64: "));
    g_assert_nonnull(strstr(vm->stderr_text->str, c->expect));
    vm_kill(vm);
}

static void test_help_and_version(void)
{
    VM *vm = vm_spawn("version", false, "-version");

    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    vm_kill(vm);
    vm = vm_spawn("mhelp", false, "-M help");
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    g_assert_cmpuint(vm_count_lines(vm, "microvm"), ==, 1);
    vm_kill(vm);
}

/* A machine with the default serial port (on stdout) and a QMP socket. */
#define NOARG_BASE "-M microvm -accel kvm -cpu host -m 64M -display none "

/*
 * Options taken as QEMU 7.2 takes them, one row each: the VM starts,
 * paused, and nothing is said on stderr (no refusal, no warning).
 */
static const char *const good_cases[] = {
    /* libvirt's <timer name='rtc' tickpolicy='catchup'/>: nothing to slew here. */
    "-rtc base=utc,driftfix=slew",
    "-rtc driftfix=none",
    "-audiodev none,id=a0",
    "-audiodev '{\"id\":\"a0\",\"driver\":\"none\"}'",
    /* telnet=off is a raw socket, which is all the socket chardev speaks. */
    "-chardev socket,id=c0,host=127.0.0.1,port=0,server=on,wait=off,telnet=off",
};

static void test_good_cmdline(gconstpointer data)
{
    const char *option = data;
    VM *vm;
    g_autofree char *st = NULL;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("good", true, NOARG_BASE "-nodefaults -S -kernel %s %s",
                  vmtest_firmware(), option);
    st = vm_status(vm);
    vm_pump(vm, 100);
    if (strcmp(st, "prelaunch") || *vm->stderr_text->str) {
        g_printerr("option: %s\nstatus: %s\nstderr: %s\n", option, st, vm->stderr_text->str);
    }
    g_assert_cmpstr(st, ==, "prelaunch");
    g_assert_cmpstr(vm->stderr_text->str, ==, "");
    vm_kill(vm);
}

/* What a VM started with an option is asked to live through. */
typedef enum Probe {
    PROBE_GUEST_RESET,          /* the firmware resets through the GED (ged_reset=1) */
    PROBE_POWERDOWN,            /* system_powerdown: the firmware powers off */
    PROBE_COUNT,
} Probe;

/*
 * What @probe does to a VM started with @option: "reset" (RESET), "exit"
 * (the process ends), "stop:STATUS" (SHUTDOWN, then still there in STATUS,
 * as with -no-shutdown) or "running" (nothing happened: no GED to reset
 * through or to press, as with -no-acpi).
 */
static char *guest_outcome(const char *option, Probe probe)
{
    VM *vm = vm_spawn("probe", true, NOARG_BASE "-serial stdio -S -kernel %s "
                      "-append 'mode=idle mem=16%s' %s", vmtest_firmware(),
                      probe == PROBE_GUEST_RESET ? " ged_reset=1" : "", option);
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    gint64 quiet_from = 0, shutdown_at = 0;
    char *outcome = NULL;

    json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
    if (probe == PROBE_POWERDOWN) {
        vm_wait_line(vm, "READY", 60);
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'system_powerdown'}"));
        quiet_from = g_get_monotonic_time();
    }
    while (!outcome && g_get_monotonic_time() < end) {
        for (GList *l = vm->events.head; l; l = l->next) {
            const char *ev = json_get_str(l->data, "event");

            if (!strcmp(ev, "RESET")) {
                outcome = g_strdup("reset");
            } else if (!strcmp(ev, "SHUTDOWN") && !shutdown_at) {
                shutdown_at = g_get_monotonic_time();
            }
        }
        vm_pump(vm, 100);
        if (outcome) {
            break;
        }
        if (vm->exited) {
            outcome = g_strdup("exit");
        } else if (shutdown_at && g_get_monotonic_time() - shutdown_at > 3 * G_USEC_PER_SEC) {
            /* Still here three seconds after SHUTDOWN: it stopped instead. */
            g_autofree char *st = vm_status(vm);

            outcome = g_strdup_printf("stop:%s", st);
        } else if (!shutdown_at && !quiet_from && vm_count_lines(vm, "READY")) {
            /* Booted with ged_reset=1 and did not reset: nothing to reset through. */
            quiet_from = g_get_monotonic_time();
        } else if (!shutdown_at && quiet_from &&
                   g_get_monotonic_time() - quiet_from > 3 * G_USEC_PER_SEC) {
            g_autofree char *st = vm_status(vm);

            outcome = g_strdup(st);
        }
    }
    g_assert_nonnull(outcome);
    vm_kill(vm);
    return outcome;
}

/* The outcomes without any of the options, once. */
static const char *base_outcome(Probe probe)
{
    static char *base[PROBE_COUNT];

    if (!base[probe]) {
        base[probe] = guest_outcome("", probe);
    }
    return base[probe];
}

typedef struct NoArgCase {
    const char *option;
    const char *status;         /* query-status once started */
    bool serial0;               /* the default serial port exists (on stdout) */
    /* What each probe does, NULL: the same as without the option. */
    const char *outcome[PROBE_COUNT];
} NoArgCase;

static const NoArgCase noarg_cases[] = {
    { "", "running", true, { "reset", "exit" } },
    { "-enable-kvm", "running", true, { NULL, NULL } },
    { "-nographic", "running", true, { NULL, NULL } },
    { "-nodefaults", "running", false, { NULL, NULL } },
    /* Once fell through to -no-reboot: a guest's reset ended the process. */
    { "-no-user-config", "running", true, { NULL, NULL } },
    { "-S", "prelaunch", true, { NULL, NULL } },
    { "-no-reboot", "running", true, { "exit", NULL } },
    { "-no-shutdown", "running", true, { NULL, "stop:shutdown" } },
    /* No ACPI: no GED to reset through, no power button to press. */
    { "-no-acpi", "running", true, { "running", "running" } },
};

static void test_noarg_option(gconstpointer data)
{
    const NoArgCase *c = data;
    VM *vm;
    JsonNode *devs;
    JsonArray *arr;
    bool serial0 = false;
    g_autofree char *st = NULL;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("noarg", true, NOARG_BASE "-kernel %s -append 'mode=idle mem=16' %s",
                  vmtest_firmware(), c->option);
    if (!strcmp(c->status, "running") && c->serial0) {
        vm_wait_line(vm, "READY", 60);
    }
    st = vm_status(vm);
    g_assert_cmpstr(st, ==, c->status);
    devs = vm_qmp_ok(vm, "{'execute': 'query-chardev'}");
    arr = json_node_get_array(devs);
    for (guint i = 0; i < json_array_get_length(arr); i++) {
        JsonObject *o = json_array_get_object_element(arr, i);

        if (!strcmp(json_object_get_string_member(o, "label"), "serial0")) {
            serial0 = true;
            g_assert_cmpstr(json_object_get_string_member(o, "filename"), ==, "stdio");
        }
    }
    g_assert_cmpint(serial0, ==, c->serial0);
    json_node_unref(devs);
    g_assert_null(strstr(vm->stderr_text->str, "qemu-system-x86_64:"));
    vm_kill(vm);

    /* A guest's reset and a power button: what the option says, nothing else. */
    for (Probe p = 0; p < PROBE_COUNT; p++) {
        g_autofree char *got = *c->option ? guest_outcome(c->option, p) : NULL;

        g_assert_cmpstr(got ? got : base_outcome(p), ==,
                        c->outcome[p] ? c->outcome[p] : base_outcome(p));
    }
}

/* -h, -help, -version print and exit 0; -daemonize leaves a running VM behind. */
static void test_noarg_exits(void)
{
    static const struct { const char *option, *line; } exits[] = {
        { "-h", "usage: qemu-system-x86_64" },
        { "-help", "usage: qemu-system-x86_64" },
        { "-version", "QEMU emulator version" },
    };
    g_autofree char *pidfile = NULL;
    g_autofree char *pid_text = NULL;
    VM *vm;

    for (size_t i = 0; i < G_N_ELEMENTS(exits); i++) {
        vm = vm_spawn("exits", false, "%s", exits[i].option);
        g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
        g_assert_cmpuint(vm_count_lines(vm, exits[i].line), ==, 1);
        vm_kill(vm);
    }
    if (!vmtest_require_kvm()) {
        return;
    }
    pidfile = g_strdup_printf("%s/daemon.pid", vmtest_tmpdir());
    vm = vm_spawn("daemon", false, NOARG_BASE "-nodefaults -kernel %s -append 'mode=idle mem=16' "
                  "-daemonize -pidfile %s", vmtest_firmware(), pidfile);
    g_assert_cmpint(vm_wait_exit(vm, 60), ==, 0);
    vm_kill(vm);
    g_assert_true(g_file_get_contents(pidfile, &pid_text, NULL, NULL));
    g_assert_cmpint(kill(atoi(pid_text), 0), ==, 0);
    g_assert_cmpint(kill(atoi(pid_text), SIGTERM), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        g_autofree char *name = g_strdup_printf("/cmdline/bad/%zu", i);
        g_test_add_data_func(name, &bad_cases[i], test_bad_cmdline);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(good_cases); i++) {
        g_autofree char *name = g_strdup_printf("/cmdline/good/%zu", i);
        g_test_add_data_func(name, good_cases[i], test_good_cmdline);
    }
    g_test_add_func("/cmdline/help-version", test_help_and_version);
    for (size_t i = 0; i < G_N_ELEMENTS(noarg_cases); i++) {
        g_autofree char *name = g_strdup_printf("/cmdline/noarg/%s",
                                                *noarg_cases[i].option ?
                                                noarg_cases[i].option + 1 : "none");
        g_test_add_data_func(name, &noarg_cases[i], test_noarg_option);
    }
    g_test_add_func("/cmdline/noarg/exits", test_noarg_exits);
    return g_test_run();
}
