/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line's options that take parameters, each parsed and
 * checked into the Config (nothing is created here): -machine, -accel,
 * -cpu, -m, -smp, -uuid, -overcommit, -rtc, -boot, -msg, -audiodev,
 * -name, -display, -global. vl.c dispatches to them; what cannot be
 * honoured is refused with the reason.
 */
#include "qemu/osdep.h"
#include "system/memory.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/option.h"
#include "hw/boards.h"
#include "migration/misc.h"
#include "monitor/monitor.h"
#include "system/kvm.h"
#include "system/runstate.h"
#include "vl-config.h"
#include "vl-parse.h"
#include "vl-devices.h"
#include "cmdline-opts.h"
#include <sys/prctl.h>

static void machine_help(void)
{
    printf("Supported machines are:\n"
           "microvm              microvm (i386) (default)\n");
}

/*
 * -machine accel=A[:B...]: QEMU's list of accelerators to try in order.
 * Ours is KVM; "tcg" is taken only for -machine none, which runs no guest
 * (libvirt probes with none,accel=tcg too), and means no KVM at all.
 * Checked against the machine type in validate_config().
 */
static bool parse_accel_list(Config *cfg, const char *list, Error **errp)
{
    g_auto(GStrv) names = g_strsplit(list, ":", 0);

    if (!names[0]) {
        error_setg(errp, "invalid accelerator %s", list);
        return false;
    }
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], "kvm") && strcmp(names[i], "tcg")) {
            error_setg(errp, "invalid accelerator %s", names[i]);
            error_append_hint(errp, "This binary supports only the kvm accelerator\n");
            return false;
        }
    }
    g_free(cfg->machine_accel);
    cfg->machine_accel = g_strdup(names[0]);
    return true;
}

bool vl_parse_machine(Config *cfg, const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse_keyval(arg, "type", errp);
    const char *type;

    if (!opts) {
        return false;
    }
    type = qemu_opt_get(opts, "type");
    if (type && !strcmp(type, "help")) {
        machine_help();
        exit(0);
    }
    if (type && strcmp(type, MACHINE_TYPE_NAME) && strcmp(type, "none")) {
        error_setg(errp, "unsupported machine type");
        error_append_hint(errp, "Use -machine help to list supported machines\n");
        return false;
    }
    if (!cmdline_check_params(opts, "machine", errp)) {
        return false;
    }
    if (type) {
        cfg->machine_none = !strcmp(type, "none");
    }
    if (qemu_opt_get(opts, "accel") && !parse_accel_list(cfg, qemu_opt_get(opts, "accel"), errp)) {
        return false;
    }
    if (qemu_opt_get(opts, "memory-backend")) {
        g_free(cfg->machine.memory_backend);
        cfg->machine.memory_backend = g_strdup(qemu_opt_get(opts, "memory-backend"));
    }
    for (int i = 0; i < 2; i++) {
        /* QEMU's OnOffAuto properties; auto is on (ioapic2 follows acpi). */
        const char *name = i ? "ioapic2" : "acpi";
        const char *v = qemu_opt_get(opts, name);
        OnOffAuto *dst = i ? &cfg->machine.ioapic2 : &cfg->machine.acpi;

        if (!v) {
            continue;
        }
        if (strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "auto")) {
            error_setg(errp, "Parameter '%s' does not accept value '%s'", name, v);
            return false;
        }
        *dst = !strcmp(v, "on") ? ON_OFF_AUTO_ON :
               !strcmp(v, "off") ? ON_OFF_AUTO_OFF : ON_OFF_AUTO_AUTO;
    }
    if (qemu_opt_get(opts, "max-ram-below-4g")) {
        uint64_t v;

        if (!qemu_opt_get_size(opts, "max-ram-below-4g", 0, &v, errp)) {
            return false;
        }
        if (v > 4 * GiB) {
            error_setg(errp, "Machine option 'max-ram-below-4g=%" PRIu64
                       "' expects size less than or equal to 4G", v);
            return false;
        }
        if (v < 16 * MiB || v % (2 * MiB)) {
            error_setg(errp, "Machine option 'max-ram-below-4g=%" PRIu64
                       "' expects a multiple of 2M, at least 16M", v);
            return false;
        }
        cfg->machine.max_ram_below_4g = v;
    }
    if (qemu_opt_get(opts, "aux-ram-share")) {
        bool on;

        if (!qemu_opt_get_bool(opts, "aux-ram-share", false, &on, errp)) {
            return false;
        }
        /* Before any RAM block is made (qemu_init creates them after parsing). */
        ram_set_aux_share(on);
    }
    return true;
}

bool vl_parse_accel(Config *cfg, const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "accel", errp);
    const char *accel, *mode;
    uint64_t ring;

    if (!opts) {
        return false;
    }
    accel = qemu_opt_get(opts, "accel");
    if (accel && !strcmp(accel, "help")) {
        printf("Accelerators supported in QEMU binary:\nkvm\n");
        exit(0);
    }
    if (!accel || strcmp(accel, "kvm")) {
        error_setg(errp, "invalid accelerator %s", accel ? accel : "");
        error_append_hint(errp, "This binary supports only the kvm accelerator\n");
        return false;
    }
    if (!cmdline_check_params(opts, "accel", errp) ||
        !qemu_opt_get_number(opts, "dirty-ring-size", 0, &ring, errp)) {
        return false;
    }
    if (ring > UINT32_MAX || (ring & (ring - 1))) {
        error_setg(errp, "Invalid value for parameter dirty-ring-size: must be a power of two");
        return false;
    }
    cfg->accel.dirty_ring_size = ring;
    mode = qemu_opt_get(opts, "x-dirty-log");
    if (mode) {
        if (strcmp(mode, "auto") && strcmp(mode, "get") && strcmp(mode, "clear")) {
            error_setg(errp, "Parameter 'x-dirty-log' expects 'auto', 'get' or 'clear'");
            return false;
        }
        cfg->accel.dirty_log = g_intern_string(mode);
    }
    return true;
}

bool vl_parse_cpu(const char *arg, Error **errp)
{
    g_auto(GStrv) parts = g_strsplit(arg, ",", -1);

    if (!strcmp(parts[0], "help")) {
        printf("Available CPUs:\nx86 host\nx86 max\n");
        exit(0);
    }
    if (strcmp(parts[0], "host") && strcmp(parts[0], "max")) {
        error_setg(errp, "unable to find CPU model '%s'", parts[0]);
        return false;
    }
    for (int i = 1; parts[i]; i++) {
        const char *p = parts[i];
        g_autofree char *name = NULL;
        bool on = true;
        char *eq;

        if (p[0] == '+' || p[0] == '-') {
            on = p[0] == '+';
            name = g_strdup(p + 1);
        } else if ((eq = strchr(p, '='))) {
            name = g_strndup(p, eq - p);
            if (!qemu_parse_bool(eq + 1, &on)) {
                error_setg(errp, "Parameter '%s' expects 'on' or 'off'", name);
                return false;
            }
        } else {
            name = g_strdup(p);
        }
        if (!kvm_cpu_set_feature(name, on, errp)) {
            return false;
        }
    }
    return true;
}

bool vl_parse_memory_size(Config *cfg, const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "size", errp);
    const char *size;
    uint64_t sz;

    if (!opts || !cmdline_check_params(opts, "memory", errp)) {
        return false;
    }
    size = qemu_opt_get(opts, "size");
    if (!size) {
        error_setg(errp, "missing 'size' option value");
        return false;
    }
    if (qemu_strtosz_MiB(size, NULL, &sz) < 0) {
        error_setg(errp, "Parameter 'size' expects a non-negative number below 2^64");
        error_append_hint(errp, "Optional suffix k, M, G, T, P or E means kilo-, mega-, giga-, "
                          "tera-, peta-\nand exabytes, respectively.\n");
        return false;
    }
    if (sz < TARGET_PAGE_SIZE || sz != QEMU_ALIGN_UP(sz, TARGET_PAGE_SIZE) || sz > 1024 * GiB) {
        error_setg(errp, "Invalid RAM size %s (must be a multiple of 4 KiB, at most 1 TiB)", size);
        return false;
    }
    cfg->machine.ram_size = sz;
    cfg->machine.ram_size_given = true;
    return true;
}

bool vl_parse_smp(Config *cfg, const char *arg, Error **errp)
{
    static const char *const topo[] = { "sockets", "dies", "clusters", "cores", "threads" };
    g_autoptr(QemuOpts) opts = qemu_opts_parse_keyval(arg, "cpus", errp);
    uint64_t cpus, product = 1, maxcpus;
    bool any_topo = false;

    if (!opts || !cmdline_check_params(opts, "smp-opts", errp) ||
        !qemu_opt_get_number(opts, "cpus", 0, &cpus, errp) ||
        !qemu_opt_get_number(opts, "maxcpus", 0, &maxcpus, errp)) {
        return false;
    }
    for (size_t i = 0; i < ARRAY_SIZE(topo); i++) {
        uint64_t v;
        if (!qemu_opt_get_number(opts, topo[i], 1, &v, errp)) {
            return false;
        }
        any_topo |= qemu_opt_has(opts, topo[i]);
        product *= v ? v : 1;
    }
    if (!cpus) {
        cpus = any_topo ? product : 1;
    }
    if (cpus > 1024 || (any_topo && product < cpus)) {
        error_setg(errp, "Invalid CPU topology: product of the hierarchy must match maxcpus");
        return false;
    }
    if (maxcpus && maxcpus != cpus) {
        error_setg(errp, "CPU hotplug is not supported: maxcpus must equal cpus");
        return false;
    }
    cfg->machine.smp_cpus = cpus;
    return true;
}

/* -uuid: the VM's UUID, in the 8-4-4-4-12 hex form; kept for query-uuid. */
bool vl_parse_uuid(Config *cfg, const char *arg, Error **errp)
{
    if (!g_uuid_string_is_valid(arg)) {
        error_setg(errp, "Fail to parse UUID string. Wrong format.");
        return false;
    }
    qemu_set_uuid(arg);
    return true;
}

/* -overcommit mem-lock=on|off[,cpu-pm=off]: mem-lock=on locks all guest memory in RAM. */
bool vl_parse_overcommit(Config *cfg, const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, NULL, errp);
    bool cpu_pm;

    if (!opts || !cmdline_check_params(opts, "overcommit", errp) ||
        !qemu_opt_get_bool(opts, "mem-lock", cfg->mem_lock, &cfg->mem_lock, errp) ||
        !qemu_opt_get_bool(opts, "cpu-pm", false, &cpu_pm, errp)) {
        return false;
    }
    if (cpu_pm) {
        error_setg(errp, "cpu-pm=on is not supported: vCPUs always exit to KVM on HLT/MWAIT");
        return false;
    }
    return true;
}

/*
 * -rtc: the guest's clock is the host's, in UTC (kvmclock and the PIT);
 * any other base or clock is refused rather than ignored.
 *
 * driftfix=slew is QEMU's answer to a guest that counts periodic RTC
 * interrupts to keep time: when the host delays some, the CMOS RTC model
 * delivers the missed ones later, faster, until the count is right again.
 * This machine has no CMOS RTC (nothing at ports 0x70-0x71), so no
 * periodic RTC interrupt is ever raised or missed; the guest reads
 * kvmclock, which is the host's clock and cannot fall behind. There is
 * nothing to slew: slew and none both mean what we already do. libvirt
 * asks for slew with <timer name='rtc' tickpolicy='catchup'/>, which
 * virt-install writes for every x86 guest.
 */
bool vl_parse_rtc(const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, NULL, errp);
    const char *base, *clock, *drift;

    if (!opts || !cmdline_check_params(opts, "rtc", errp)) {
        return false;
    }
    base = qemu_opt_get(opts, "base");
    clock = qemu_opt_get(opts, "clock");
    drift = qemu_opt_get(opts, "driftfix");
    if (base && strcmp(base, "utc")) {
        error_setg(errp, "rtc base=%s is not supported: the guest clock is the host's UTC", base);
        return false;
    }
    if (clock && strcmp(clock, "host")) {
        error_setg(errp, "rtc clock=%s is not supported: the guest clock is the host's", clock);
        return false;
    }
    if (drift && strcmp(drift, "none") && strcmp(drift, "slew")) {
        /* QEMU 7.2's and 10.0's words for a value outside none|slew. */
        error_setg(errp, "invalid option value '%s'", drift);
        return false;
    }
    return true;
}

/* -boot: the guest boots its -kernel (PVH), so there is no device order to keep strictly. */
bool vl_parse_boot(const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, NULL, errp);
    bool strict;

    return opts && cmdline_check_params(opts, "boot-opts", errp) &&
           qemu_opt_get_bool(opts, "strict", false, &strict, errp);
}

bool vl_parse_msg(const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, NULL, errp);
    bool ts;

    if (!opts || !cmdline_check_params(opts, "msg", errp) ||
        !qemu_opt_get_bool(opts, "timestamp", false, &ts, errp)) {
        return false;
    }
    error_set_timestamps(ts);
    return true;
}

/*
 * -audiodev: there is no sound device, so the only backend is none.
 * QEMU parses it with keyval, not QemuOpts as -device and -object: a
 * short-form boolean ("in.mixing-engine") is an error there, not a
 * deprecated spelling, so ours refuses it with QEMU's words.
 */
bool vl_parse_audiodev(const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = arg[0] == '{' ?
        vl_opts_parse_json_or_keyval(arg, "driver", errp) :
        qemu_opts_parse_keyval(arg, "driver", errp);
    const char *driver;

    if (!opts || !cmdline_check_params(opts, "audiodev", errp)) {
        return false;
    }
    driver = qemu_opt_get(opts, "driver");
    if (!qemu_opt_get(opts, "id")) {
        error_setg(errp, "Parameter 'id' is missing");
        return false;
    }
    if (!driver || strcmp(driver, "none")) {
        error_setg(errp, "audiodev driver '%s' is not supported (only none)", driver ? driver : "");
        return false;
    }
    return true;
}

bool vl_parse_name(const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "guest", errp);
    const char *proc;

    if (!opts || !cmdline_check_params(opts, "name", errp)) {
        return false;
    }
    if (qemu_opt_get(opts, "guest")) {
        qemu_set_name(qemu_opt_get(opts, "guest"));
    }
    proc = qemu_opt_get(opts, "process");
    if (proc) {
        prctl(PR_SET_NAME, proc);
    }
    return true;
}

bool vl_parse_display(Config *cfg, const char *arg, Error **errp)
{
    if (!strcmp(arg, "none") || g_str_has_prefix(arg, "none,")) {
        cfg->display_none = true;
        return true;
    }
    if (!strcmp(arg, "help")) {
        printf("Available display backend types:\nnone\n");
        exit(0);
    }
    error_setg(errp, "Display '%s' is not available", arg);
    return false;
}

bool vl_parse_global(const char *arg, Error **errp)
{
    const char *eq = strchr(arg, '=');
    g_autofree char *key = eq ? g_strndup(arg, eq - arg) : NULL;

    if (!key || !strchr(key, '.')) {
        error_setg(errp, "Invalid 'global' option: expected DRIVER.PROPERTY=VALUE");
        return false;
    }
    if (g_str_has_prefix(key, "migration.")) {
        return migration_set_global_property(key + strlen("migration."), eq + 1, errp);
    }
    /*
     * QEMU's microvm transports are legacy (version 1) unless told
     * otherwise; ours are always virtio 1.x, so the line a QEMU guest is
     * started with (force-legacy=false) means what we do anyway.
     */
    if (!strcmp(key, "virtio-mmio.force-legacy")) {
        if (!strcmp(eq + 1, "false") || !strcmp(eq + 1, "off")) {
            return true;
        }
        error_setg(errp, "virtio-mmio.force-legacy=%s: only modern (version 2) virtio-mmio "
                   "transports are supported; use force-legacy=false", eq + 1);
        return false;
    }
    /*
     * libvirt's <pm>: S3 and S4 switches of a PIIX4 function microvm never
     * has (its one sleep state is S5), taken as QEMU takes them on microvm.
     */
    if (!strcmp(key, "PIIX4_PM.disable_s3") || !strcmp(key, "PIIX4_PM.disable_s4")) {
        char *end;
        unsigned long v = strtoul(eq + 1, &end, 0);

        if (!eq[1] || *end || v > UINT8_MAX) {
            error_setg(errp, "Parameter '%s' expects uint8_t", strchr(key, '.') + 1);
            return false;
        }
        return true;
    }
    if (g_str_has_prefix(key, "PIIX4_PM.")) {
        error_setg(errp, "Property '%s' not found", key);
        return false;
    }
    error_setg(errp, "can't apply global %s=%s: driver '%.*s' not found", key, eq + 1,
               (int)(strchr(key, '.') - key), key);
    return false;
}
