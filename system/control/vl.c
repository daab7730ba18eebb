/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Command line parsing and the explicit initialisation order. Options are
 * parsed into a Config first (nothing is created), validated, and only then
 * are chardevs, backends, KVM, the machine and the monitors created, in the
 * one order written down in qemu_init().
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/cpr-fd.h"
#include "qemu/fdset.h"
#include "qemu/option.h"
#include "qemu/main-loop.h"
#include "chardev/char.h"
#include "block/block.h"
#include "block/job.h"
#include "hw/boards.h"
#include "hw/virtio/virtio-net.h"
#include "monitor/monitor.h"
#include "migration/misc.h"
#include "migration/cpr-exec.h"
#include "net/net.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "system/os-posix.h"
#include "system/runstate.h"
#include "system/system.h"
#include "system/user-objects.h"
#include "trace/trace.h"
#include "ui/console.h"
#include "vl-config.h"
#include "vl-devices.h"
#include "vl-parse.h"
#include "cmdline-opts.h"
#include <sys/mman.h>
#include <glib-unix.h>

typedef enum {
    OPT_HELP, OPT_VERSION, OPT_MACHINE, OPT_ACCEL, OPT_ENABLE_KVM, OPT_CPU, OPT_M, OPT_SMP,
    OPT_KERNEL, OPT_APPEND, OPT_INITRD, OPT_OBJECT, OPT_SERIAL, OPT_NOGRAPHIC, OPT_DISPLAY,
    OPT_NODEFAULTS, OPT_NO_USER_CONFIG, OPT_S, OPT_NAME, OPT_PIDFILE, OPT_DAEMONIZE, OPT_QMP,
    OPT_QMP_PRETTY, OPT_MONITOR, OPT_CHARDEV, OPT_MON, OPT_DEVICE, OPT_INCOMING, OPT_TRACE,
    OPT_NO_REBOOT, OPT_NO_SHUTDOWN, OPT_GLOBAL, OPT_VGA, OPT_NET, OPT_NIC, OPT_NETDEV,
    OPT_UUID, OPT_OVERCOMMIT, OPT_RTC, OPT_NO_ACPI, OPT_BOOT, OPT_MSG, OPT_AUDIODEV,
    OPT_ADD_FD, OPT_DRIVE, OPT_BLOCKDEV, OPT_LOGFILE,
} OptIndex;

typedef struct QemuOption {
    const char *name;
    bool has_arg;
    OptIndex index;
} QemuOption;

static const QemuOption qemu_options[] = {
    { "h", false, OPT_HELP }, { "help", false, OPT_HELP },
    { "version", false, OPT_VERSION },
    { "M", true, OPT_MACHINE }, { "machine", true, OPT_MACHINE },
    { "accel", true, OPT_ACCEL }, { "enable-kvm", false, OPT_ENABLE_KVM },
    { "cpu", true, OPT_CPU }, { "m", true, OPT_M }, { "smp", true, OPT_SMP },
    { "kernel", true, OPT_KERNEL }, { "append", true, OPT_APPEND },
    { "initrd", true, OPT_INITRD }, { "object", true, OPT_OBJECT },
    { "serial", true, OPT_SERIAL }, { "nographic", false, OPT_NOGRAPHIC },
    { "display", true, OPT_DISPLAY }, { "nodefaults", false, OPT_NODEFAULTS },
    { "no-user-config", false, OPT_NO_USER_CONFIG }, { "S", false, OPT_S },
    { "name", true, OPT_NAME }, { "pidfile", true, OPT_PIDFILE },
    { "daemonize", false, OPT_DAEMONIZE }, { "qmp", true, OPT_QMP },
    { "qmp-pretty", true, OPT_QMP_PRETTY }, { "monitor", true, OPT_MONITOR },
    { "chardev", true, OPT_CHARDEV }, { "mon", true, OPT_MON },
    { "device", true, OPT_DEVICE }, { "incoming", true, OPT_INCOMING },
    { "trace", true, OPT_TRACE }, { "no-reboot", false, OPT_NO_REBOOT },
    { "no-shutdown", false, OPT_NO_SHUTDOWN }, { "global", true, OPT_GLOBAL },
    { "vga", true, OPT_VGA }, { "net", true, OPT_NET }, { "nic", true, OPT_NIC },
    { "netdev", true, OPT_NETDEV }, { "uuid", true, OPT_UUID },
    { "overcommit", true, OPT_OVERCOMMIT }, { "rtc", true, OPT_RTC },
    { "no-acpi", false, OPT_NO_ACPI }, { "boot", true, OPT_BOOT }, { "msg", true, OPT_MSG },
    { "audiodev", true, OPT_AUDIODEV }, { "add-fd", true, OPT_ADD_FD },
    { "drive", true, OPT_DRIVE }, { "blockdev", true, OPT_BLOCKDEV },
    { "D", true, OPT_LOGFILE },
};

static void version(void)
{
    printf("QEMU emulator version %s (qemu-mig)\n"
           "Copyright (c) 2026 the qemu-mig authors\n", QEMU_VERSION);
}

static void help(void)
{
    version();
    printf("usage: qemu-system-x86_64 [options]\n\n"
           "-M microvm[,memory-backend=ID]   machine (microvm is the only one)\n"
           "-accel kvm[,dirty-ring-size=N][,x-dirty-log=auto|get|clear]\n"
           "-enable-kvm                      same as -accel kvm\n"
           "-cpu host[,+feature|-feature]    CPU model (host passthrough)\n"
           "-m SIZE                          guest RAM (default unit MiB)\n"
           "-smp N                           number of vCPUs\n"
           "-kernel FILE / -append STR / -initrd FILE   PVH ELF boot\n"
           "-object memory-backend-{ram,memfd,file},id=ID,size=SIZE[,share=on][,mem-path=P][,prealloc=on]\n"
           "-object secret|tls-creds-{x509,psk,anon}|authz-{simple,list,listfile},id=ID[,...]\n"
           "                                 objects by name (also in JSON: -object '{...}')\n"
           "-serial stdio|null|pty|mon:stdio|file:PATH|unix:PATH[,server=on,wait=off]|tcp:H:P[,...]|chardev:ID\n"
           "-nographic / -display none / -nodefaults / -no-user-config\n"
           "-S                               start paused (prelaunch)\n"
           "-name NAME / -pidfile FILE / -daemonize / -D LOGFILE (a daemon's stderr)\n"
           "-qmp DEV / -monitor DEV / -chardev BACKEND,id=ID,... / -mon chardev=ID,mode=control|readline\n"
           "-device isa-debug-exit,iobase=0xf4,iosize=0x04\n"
           "-device virtio-net-device[,netdev=ID][,mac=MAC][,id=ID]\n"
           "-device isa-vga[,vgamem_mb=N][,id=ID] / -vga std|none   Bochs VBE display\n"
           "-netdev user,id=ID[,net=ADDR[/MASK]][,host=ADDR][,hostfwd=[tcp|udp]:[HADDR]:HPORT-[GADDR]:GPORT]...\n"
           "-nic user[,model=virtio-net-device][,mac=MAC][,netdev user options]\n"
"-drive file=FILE,if=none,id=ID[,format=raw|qcow2][,cache=MODE][,aio=threads|io_uring|native]\n"
           "       [,readonly=on][,discard=ignore|unmap][,detect-zeroes=off|on|unmap][,werror=,rerror=]\n"
           "-blockdev driver=DRV,node-name=NAME[,file.driver=file,file.filename=FILE|file=NODE][,...]\n"
           "                                 a block node (also in JSON: -blockdev '{...}')\n"
           "-incoming URI|defer              wait for an incoming migration\n"
           "-trace [enable=]PATTERN[,file=PATH]  trace points matching PATTERN (help: list)\n");
}

static void add_monitor(Config *cfg, const char *spec, const char *chardev_id, bool qmp,
                        bool pretty)
{
    MonitorConfig *mc = g_new0(MonitorConfig, 1);

    mc->spec = g_strdup(spec);
    mc->chardev_id = g_strdup(chardev_id);
    mc->qmp = qmp;
    mc->pretty = pretty;
    g_ptr_array_add(cfg->monitors, mc);
}

static bool parse_mon(Config *cfg, const char *arg, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "chardev", errp);
    const char *chardev, *mode;
    bool pretty;

    if (!opts || !cmdline_check_params(opts, "mon", errp) ||
        !qemu_opt_get_bool(opts, "pretty", false, &pretty, errp)) {
        return false;
    }
    chardev = qemu_opt_get(opts, "chardev");
    mode = qemu_opt_get(opts, "mode");
    if (!chardev) {
        error_setg(errp, "Parameter 'chardev' is missing");
        return false;
    }
    if (mode && strcmp(mode, "control") && strcmp(mode, "readline")) {
        error_setg(errp, "Parameter 'mode' does not accept value '%s'", mode);
        return false;
    }
    add_monitor(cfg, NULL, chardev, mode && !strcmp(mode, "control"), pretty);
    return true;
}

static bool handle_option(Config *cfg, OptIndex idx, const char *arg, Error **errp)
{
    switch (idx) {
    case OPT_HELP:
        help();
        exit(0);
    case OPT_VERSION:
        version();
        exit(0);
    case OPT_MACHINE:
        return vl_parse_machine(cfg, arg, errp);
    case OPT_ACCEL:
        return vl_parse_accel(cfg, arg, errp);
    case OPT_ENABLE_KVM:
        return true;
    case OPT_CPU:
        return vl_parse_cpu(arg, errp);
    case OPT_M:
        return vl_parse_memory_size(cfg, arg, errp);
    case OPT_SMP:
        return vl_parse_smp(cfg, arg, errp);
    case OPT_KERNEL:
        g_free(cfg->machine.kernel_filename);
        cfg->machine.kernel_filename = g_strdup(arg);
        return true;
    case OPT_APPEND:
        g_free(cfg->machine.kernel_cmdline);
        cfg->machine.kernel_cmdline = g_strdup(arg);
        return true;
    case OPT_INITRD:
        g_free(cfg->machine.initrd_filename);
        cfg->machine.initrd_filename = g_strdup(arg);
        return true;
    case OPT_OBJECT:
        return vl_parse_object(cfg, arg, errp);
    case OPT_SERIAL:
        if (cfg->serial_spec) {
            error_setg(errp, "microvm has a single serial port");
            return false;
        }
        cfg->serial_spec = g_strdup(arg);
        if (g_str_has_prefix(arg, "mon:")) {
            /* The UART and an HMP monitor share the mux qemu_chr_new() makes of it. */
            add_monitor(cfg, NULL, "serial0", false, false);
        }
        return true;
    case OPT_NOGRAPHIC:
        cfg->nographic = true;
        cfg->display_none = true;
        return true;
    case OPT_DISPLAY:
        return vl_parse_display(cfg, arg, errp);
    case OPT_NIC:
    case OPT_NETDEV:
        return net_client_parse(cfg->netdevs, arg, idx == OPT_NIC, errp);
    case OPT_VGA:
        /* microvm has no PCI: the standard VGA is the ISA one, with the same VBE. */
        if (!strcmp(arg, "std")) {
            g_autoptr(QemuOpts) opts = qemu_opts_parse("isa-vga", "driver", errp);

            return opts && isa_vga_parse(opts, &cfg->machine.vga, errp);
        }
        /* fall through */
    case OPT_NET:
        if (strcmp(arg, "none")) {
            error_setg(errp, "microvm has no such devices; only 'none' is accepted");
            return false;
        }
        return true;
    case OPT_NODEFAULTS:
        cfg->nodefaults = true;
        return true;
    case OPT_NO_USER_CONFIG:
        return true;            /* we read no user configuration files anyway */
    case OPT_NO_REBOOT:
        qemu_set_no_reboot(true);
        return true;
    case OPT_NO_SHUTDOWN:
        qemu_set_no_shutdown(true);
        return true;
    case OPT_UUID:
        return vl_parse_uuid(cfg, arg, errp);
    case OPT_OVERCOMMIT:
        return vl_parse_overcommit(cfg, arg, errp);
    case OPT_RTC:
        return vl_parse_rtc(arg, errp);
    case OPT_NO_ACPI:
        /*
         * acpi=off, as QEMU 7.2 makes of it (no acpi-ged in its qtree): libvirt
         * passes it for a domain without <features><acpi/>, and the machine,
         * its sections and its power button must be what QEMU's would be.
         */
        cfg->machine.acpi = ON_OFF_AUTO_OFF;
        return true;
    case OPT_BOOT:
        return vl_parse_boot(arg, errp);
    case OPT_MSG:
        return vl_parse_msg(arg, errp);
    case OPT_AUDIODEV:
        return vl_parse_audiodev(arg, errp);
    case OPT_S:
        cfg->start_paused = true;
        return true;
    case OPT_NAME:
        return vl_parse_name(arg, errp);
    case OPT_PIDFILE:
        g_free(cfg->pidfile);
        cfg->pidfile = g_strdup(arg);
        return true;
    case OPT_DAEMONIZE:
        cfg->daemonize = true;
        return true;
    case OPT_QMP:
        add_monitor(cfg, arg, NULL, true, false);
        return true;
    case OPT_QMP_PRETTY:
        add_monitor(cfg, arg, NULL, true, true);
        return true;
    case OPT_MONITOR:
        if (strcmp(arg, "none")) {
            add_monitor(cfg, arg, NULL, false, false);
        }
        return true;
    case OPT_CHARDEV: {
        QemuOpts *opts = qemu_opts_parse(arg, "backend", errp);
        if (!opts) {
            return false;
        }
        g_ptr_array_add(cfg->chardev_opts, opts);
        g_ptr_array_add(cfg->chardev_args, g_strdup(arg));
        return true;
    }
    case OPT_MON:
        return parse_mon(cfg, arg, errp);
    case OPT_DEVICE:
        return vl_parse_device(cfg, arg, errp);
    case OPT_INCOMING: {
        /* Given twice for a live update, as QEMU 10.0: the main channel and the cpr one. */
        bool is_cpr;
        char **dst = &cfg->incoming;

        if (!migration_incoming_check(arg, &is_cpr, errp)) {
            return false;
        }
        if (is_cpr) {
            dst = &cfg->cpr_incoming;
        }
        g_free(*dst);
        *dst = g_strdup(arg);
        return true;
    }
    case OPT_TRACE:
        return trace_parse_option(arg, errp);
    case OPT_GLOBAL:
        return vl_parse_global(arg, errp);
    case OPT_DRIVE:
        /* Opened once -incoming is known: a destination opens its images inactive. */
        g_ptr_array_add(cfg->drive_args, g_strdup(arg));
        return true;
    case OPT_BLOCKDEV:
        g_ptr_array_add(cfg->blockdev_args, g_strdup(arg));
        return true;
    case OPT_LOGFILE:
        return os_set_logfile(arg, errp);
    case OPT_ADD_FD:
        /* Now, as QEMU does: the fds must be in their sets before anything opens a file. */
        return qemu_fdset_add_option(arg, errp);
    }
    return true;
}

static const QemuOption *lookup_option(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(qemu_options); i++) {
        if (!strcmp(qemu_options[i].name, name)) {
            return &qemu_options[i];
        }
    }
    return NULL;
}

static void parse_command_line(Config *cfg, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *name = arg + 1;
        const QemuOption *opt;
        const char *optarg = NULL;
        Error *err = NULL;

        if (arg[0] != '-') {
            /* QEMU treats a bare argument as a disk image; we have no disks. */
            error_report("%s: disk images are not supported", arg);
            exit(1);
        }
        if (name[0] == '-') {
            name++;             /* --option is the same as -option */
        }
        opt = lookup_option(name);
        if (!opt) {
            error_report("%s: invalid option", arg);
            error_report("this binary implements a subset of QEMU's options: "
                         "see README.md, \"Works and refused\"");
            exit(1);
        }
        if (opt->has_arg) {
            if (i + 1 >= argc) {
                error_report("%s: requires an argument", arg);
                exit(1);
            }
            optarg = argv[++i];
        }
        loc_set_cmdline(name, optarg);
        if (!handle_option(cfg, opt->index, optarg, &err)) {
            error_report_err(err);
            exit(1);
        }
        loc_clear();
    }
}

static void validate_config(Config *cfg)
{
    if (cfg->machine_accel && !strcmp(cfg->machine_accel, "tcg") && !cfg->machine_none) {
        error_report("-machine accel=tcg: invalid accelerator tcg");
        fprintf(stderr, "This binary supports only the kvm accelerator\n");
        exit(1);
    }
    if (cfg->machine_none) {
        /* Nothing of a guest: refused, not ignored. */
        const char *what = cfg->machine.ram_size_given ? "-m" :
                           cfg->machine.smp_cpus ? "-smp" :
                           cfg->machine.kernel_filename ? "-kernel" :
                           cfg->machine.memory_backend ? "memory-backend=" :
                           cfg->machine.debug_exit.present || cfg->machine.vga.present ||
                           cfg->virtio_order->len ? "-device" :
                           cfg->object_opts->len ? "-object" :
                           cfg->netdevs->len ? "-netdev" :
                           cfg->incoming ? "-incoming" : NULL;

        if (what) {
            error_report("-machine none: %s needs a machine with a guest (-machine %s)", what,
                         MACHINE_TYPE_NAME);
            exit(1);
        }
    }
    if (cfg->daemonize) {
        /* Like QEMU: only if -nographic would put a default port on stdio. */
        if (cfg->nographic && !cfg->nodefaults && !cfg->serial_spec) {
            error_report("-nographic cannot be used with -daemonize");
            exit(1);
        }
        if (cfg->serial_spec && (!strcmp(cfg->serial_spec, "stdio") ||
                                 !strcmp(cfg->serial_spec, "mon:stdio"))) {
            error_report("cannot use stdio with -daemonize");
            exit(1);
        }
        for (guint i = 0; i < cfg->monitors->len; i++) {
            MonitorConfig *mc = g_ptr_array_index(cfg->monitors, i);
            if (mc->spec && !strcmp(mc->spec, "stdio")) {
                error_report("cannot use stdio with -daemonize");
                exit(1);
            }
        }
    }
    if (cfg->nographic && !cfg->serial_spec && !cfg->nodefaults && !cfg->monitors->len) {
        /*
         * QEMU's -nographic with no monitor given: the serial port and an
         * HMP monitor share stdio, C-a c between them, C-a x to quit.
         */
        cfg->serial_spec = g_strdup("mon:stdio");
        add_monitor(cfg, NULL, "serial0", false, false);
    }
    if (!cfg->serial_spec && !cfg->nodefaults && !cfg->daemonize) {
        /* No GUI here: the default serial port goes to stdio, as with -nographic. */
        cfg->serial_spec = g_strdup("stdio");
    }
    if (!cfg->machine.smp_cpus) {
        cfg->machine.smp_cpus = 1;
    }
    if (!cfg->machine.ram_size_given) {
        cfg->machine.ram_size = 512 * MiB;
    }
    if (cfg->cpr_incoming && !cfg->incoming) {
        error_report("-incoming: a cpr channel needs a main channel too "
                     "(-incoming URI, a JSON main channel, or defer)");
        exit(1);
    }
}

static gboolean terminate_on_signal(gpointer data)
{
    error_report("terminating on signal %d", GPOINTER_TO_INT(data));
    qemu_system_shutdown_request(SHUTDOWN_CAUSE_HOST_SIGNAL);
    return G_SOURCE_CONTINUE;
}

static void create_monitors(Config *cfg)
{
    guint compat = 0;           /* QEMU numbers only the monitors -monitor/-qmp make */

    for (guint i = 0; i < cfg->monitors->len; i++) {
        MonitorConfig *mc = g_ptr_array_index(cfg->monitors, i);
        g_autofree char *label = mc->chardev_id ? NULL
                                 : g_strdup_printf("compat_monitor%u", compat++);
        Error *err = NULL;
        Chardev *chr;
        Monitor *mon;

        if (mc->chardev_id) {
            chr = qemu_chr_find(mc->chardev_id);
            if (!chr) {
                error_report("-mon: chardev '%s' not found", mc->chardev_id);
                exit(1);
            }
        } else {
            chr = qemu_chr_new(label, mc->spec, &err);
            if (!chr) {
                if (err) {
                    error_prepend(&err, "%s %s: ", mc->qmp ? "-qmp" : "-monitor", mc->spec);
                    error_report_err(err);
                    exit(1);
                }
                continue;
            }
        }
        mon = monitor_new(chr, &err);
        if (!mon) {
            error_report_err(err);
            exit(1);
        }
        if (mc->qmp) {
            monitor_qmp_init(mon, mc->pretty);
        } else {
            monitor_hmp_init(mon);
        }
    }
}

/*
 * At exit, however it comes (quit, a guest's shutdown, isa-debug-exit): the
 * images get what was written, formats their cached metadata, as QEMU's
 * close. The layer stays allocated: device threads are not joined.
 */
static void flush_drives_at_exit(void)
{
    int ret;

    if (!current_machine || !current_machine->block) {
        return;
    }
    ret = bdrv_flush_all(current_machine->block);
    if (ret < 0) {
        error_report("Failed to flush the images at exit: %s", strerror(-ret));
    }
}

/* The images, into the machine's block layer; a failure exits as QEMU does. */
static void open_drives(Config *cfg)
{
    Error *err = NULL;

    cfg->machine.block = block_layer_new();
    block_layer_register_handover(cfg->machine.block);
    block_jobs_register_qmp(cfg->machine.block);
    atexit(flush_drives_at_exit);
    if (cfg->incoming) {
        block_layer_set_incoming(cfg->machine.block);
    }
    for (guint i = 0; i < cfg->blockdev_args->len; i++) {
        const char *arg = g_ptr_array_index(cfg->blockdev_args, i);

        loc_set_cmdline("blockdev", arg);
        if (!blockdev_parse(cfg->machine.block, arg, &err)) {
            error_report_err(err);
            exit(1);
        }
        loc_clear();
    }
    for (guint i = 0; i < cfg->drive_args->len; i++) {
        const char *arg = g_ptr_array_index(cfg->drive_args, i);

        loc_set_cmdline("drive", arg);
        if (!drive_parse(cfg->machine.block, arg, &err)) {
            error_report_err(err);
            exit(1);
        }
        loc_clear();
    }
}

void qemu_init(int argc, char **argv)
{
    Config cfg;
    Error *err = NULL;

    vl_config_init(&cfg);
    error_set_progname(argv[0]);
    migration_options_init();
    migration_set_argv(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    /* First: what fails after it (options included) sends the guest back to the old binary. */
    if (!getenv(CPR_EXEC_PROBE_ENV) && !cpr_exec_incoming_adopt(&err)) {
        error_report_err(err);
        exit(1);
    }

    /*
     * 1. Parse and validate everything before creating anything but the
     * registry's objects (-object secret, tls-creds-*, authz-*), which
     * are made as they are parsed: they only read files.
     */
    user_objects_init();
    parse_command_line(&cfg, argc, argv);
    validate_config(&cfg);
    if (getenv(CPR_EXEC_PROBE_ENV)) {
        /* cpr-exec's check of the new binary, before the old one stops the guest. */
        if (!cfg.incoming) {
            error_report("cpr-exec: the new process needs -incoming (the migrate URI's file)");
            exit(1);
        }
        exit(0);
    }
    if (cpr_fd_received() && !cfg.cpr_incoming && !cfg.incoming) {
        error_report("cpr-exec: the new process needs -incoming (the migrate URI's file)");
        exit(1);
    }
    if (cfg.daemonize) {
        os_daemonize();
    }
    if (cfg.pidfile && !pidfile_create(cfg.pidfile, &err)) {
        error_prepend(&err, "cannot create PID file: ");
        error_report_err(err);
        exit(1);
    }

    /* 2. Main loop and BQL: chardevs register watches in it. */
    qemu_main_loop_init();
    atexit(qemu_chr_cleanup_all);
    g_unix_signal_add(SIGINT, terminate_on_signal, GINT_TO_POINTER(SIGINT));
    g_unix_signal_add(SIGTERM, terminate_on_signal, GINT_TO_POINTER(SIGTERM));
    g_unix_signal_add(SIGHUP, terminate_on_signal, GINT_TO_POINTER(SIGHUP));

    /*
     * A live update's new process waits here for the old one's memory, as
     * QEMU's does: every RAM block made below maps what the old one had.
     */
    /* (After a cpr-exec the memory came with the exec: a cpr channel there is stale.) */
    if (cfg.cpr_incoming && !cpr_fd_received() && !cpr_incoming_receive(cfg.cpr_incoming, &err)) {
        error_prepend(&err, "-incoming %s: ", cfg.cpr_incoming);
        error_report_err(err);
        exit(1);
    }


    /* 3. Chardevs, memory backends (-object), network backends (-netdev, -nic). */
    for (guint i = 0; i < cfg.chardev_opts->len; i++) {
        if (!qemu_chr_new_from_opts(g_ptr_array_index(cfg.chardev_opts, i), &err)) {
            error_prepend(&err, "-chardev %s: ",
                          (char *)g_ptr_array_index(cfg.chardev_args, i));
            error_report_err(err);
            exit(1);
        }
    }
    if (cfg.serial_spec) {
        cfg.machine.serial = qemu_chr_new("serial0", cfg.serial_spec, &err);
        if (err) {
            error_prepend(&err, "-serial %s: ", cfg.serial_spec);
            error_report_err(err);
            exit(1);
        }
    }
    for (guint i = 0; i < cfg.object_opts->len; i++) {
        if (!vl_create_memory_backend(g_ptr_array_index(cfg.object_opts, i), &err)) {
            error_prepend(&err, "-object %s: ", qemu_opt_get(g_ptr_array_index(cfg.object_opts, i), "id"));
            error_report_err(err);
            exit(1);
        }
    }
    /* Before the machine: its devices take their drives (QEMU: -blockdev, then -drive). */
    open_drives(&cfg);
    /* Before the machine: its NICs find their backends by id. */
    if (!net_clients_create(cfg.netdevs, &err)) {
        error_report_err(err);
        exit(1);
    }
    vl_create_virtio_devices(&cfg, cfg.machine.block);

    /*
     * 4. The accelerator, then the machine (RAM, memslots, irqchip, vCPUs,
     * devices). -machine none has neither (KVM only to say it is there,
     * unless accel=tcg asked for none).
     */
    if (!cfg.machine_none || strcmp(cfg.machine_accel ? cfg.machine_accel : "kvm", "tcg")) {
        kvm_state = kvm_init(&cfg.accel, &err);
        if (!kvm_state) {
            error_prepend(&err, "failed to initialize kvm: ");
            error_report_err(err);
            exit(1);
        }
    }
    if (!cfg.machine_none) {
        if (!kvm_dirty_log_init(kvm_state, &err)) {
            error_report_err(err);
            exit(1);
        }
        current_machine = g_new(MachineState, 1);
        *current_machine = cfg.machine;
        current_machine->incoming = cfg.incoming != NULL;
        if (!microvm_machine_init(current_machine, &err) || !net_clients_check(&err) ||
            !display_init(!cfg.display_none, &err)) {
            error_report_err(err);
            exit(1);
        }
        drive_check_orphans(current_machine->block);
    }
    /* What the old process had and this one does not is not this one's to keep. */
    if (cpr_fd_close_unused()) {
        warn_report("cpr: the old process handed over memory that no RAM block here took");
    }
    if (cfg.mem_lock && mlockall(MCL_CURRENT | MCL_FUTURE) < 0) {
        error_report("locking memory failed: %s", strerror(errno));
        exit(1);
    }

    /* 5. Migration, monitors, then the run state. */
    migration_init(MACHINE_TYPE_NAME);
    create_monitors(&cfg);
    if (cfg.incoming) {
        runstate_set(RUN_STATE_INMIGRATE);
        migration_set_autostart(!cfg.start_paused);
        if (!migration_incoming_start(cfg.incoming, &err)) {
            error_prepend(&err, "-incoming %s: ", cfg.incoming);
            error_report_err(err);
            exit(1);
        }
    } else if (!cfg.start_paused) {
        vm_start();
    }
    os_setup_post();
    vl_config_free(&cfg);
}
