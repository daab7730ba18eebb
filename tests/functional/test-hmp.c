/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * HMP, the human monitor, on a unix socket, on a -chardev/-mon pair and on
 * stdio with stdin a pipe: banner and prompt, readline-style echo, the
 * info commands, run state, memory dumps checked against the verify
 * guest's work area, help, errors (the prompt always comes back), and
 * quit. A QMP connection on the side cross-checks state and events.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "qconn.h"

#define ARGS "-M microvm -enable-kvm -nodefaults -m 128M -kernel %s " \
             "-append 'mode=verify mem=32' "
#define WORK_BASE 0x400000

/* A VM with serial on stdout, QMP for libvmtest and an HMP socket; returns the HMP client. */
static QConn *start_with_monitor(VM **vmp, const char *name, const char *extra)
{
    g_autofree char *path = vmtest_sock_path("hmp");
    g_autofree char *banner = NULL;
    QConn *c;

    *vmp = vm_spawn(name, true, ARGS "-serial stdio -monitor unix:%s,server=on,wait=off %s",
                    vmtest_firmware(), path, extra);
    c = qc_connect_unix(*vmp, path);
    banner = qc_hmp_banner(c);
    g_assert_true(g_regex_match_simple("^QEMU [0-9]+\\.[0-9]+\\.[0-9]+ monitor - "
                                       "type 'help' for more information\n$", banner, 0, 0));
    return c;
}

/* Sends raw bytes and expects exactly @want (echo included, "\r\n" line ends) before the prompt. */
static void assert_raw(QConn *c, const char *send, const char *want)
{
    g_autofree char *out = NULL;

    qc_send_str(c, send);
    out = qc_hmp_read_prompt(c, 30);
    g_assert_cmpstr(out, ==, want);
}

static void test_info(void)
{
    g_autofree char *version = NULL;
    g_autofree char *cpus = NULL;
    JsonNode *v;
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    c = start_with_monitor(&vm, "info", "-name hmp-guest -smp 2");
    qc_assert_hmp(c, "info status", "VM status: running\n");
    v = vm_qmp_ok(vm, "{'execute': 'query-version'}");
    version = g_strdup_printf("%" PRId64 ".%" PRId64 ".%" PRId64 " %s\n",
                              json_get_int(v, "qemu.major"), json_get_int(v, "qemu.minor"),
                              json_get_int(v, "qemu.micro"), json_get_str(v, "package"));
    json_node_unref(v);
    qc_assert_hmp(c, "info version", version);
    qc_assert_hmp(c, "info kvm", "kvm support: enabled\n");
    qc_assert_hmp(c, "info name", "hmp-guest\n");
    cpus = qc_hmp(c, "info cpus");
    g_assert_true(g_regex_match_simple("^\\* CPU #0: thread_id=[0-9]+\n"
                                       "  CPU #1: thread_id=[0-9]+\n$", cpus, 0, 0));
    /* Extra spaces and tabs around words are fine. */
    qc_assert_hmp(c, "   info \t status  ", "VM status: running\n");
    /* "info" alone lists its subcommands. */
    qc_assert_hmp_has(c, "info", "info status  -- show the current VM status");
    qc_assert_hmp_has(c, "info", "info migrate_parameters");
    qc_close(c);
    vm_kill(vm);
}

static void test_run_state(void)
{
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    c = start_with_monitor(&vm, "runstate", "");
    vm_wait_line(vm, "READY", 60);
    qc_assert_hmp(c, "stop", "");
    json_node_unref(vm_wait_event(vm, "STOP", 30));
    qc_assert_hmp(c, "info status", "VM status: paused\n");
    vm_assert_status(vm, "paused", false);
    qc_assert_hmp(c, "cont", "");
    json_node_unref(vm_wait_event(vm, "RESUME", 30));
    qc_assert_hmp(c, "info status", "VM status: running\n");
    vm_assert_progress(vm);
    qc_assert_hmp(c, "stop", "");
    qc_assert_hmp(c, "c", "");
    json_node_unref(vm_wait_event(vm, "RESUME", 30));
    vm_assert_status(vm, "running", true);

    qc_assert_hmp(c, "system_reset", "");
    json_node_unref(vm_wait_event(vm, "RESET", 30));
    /* The reset may cut the line being printed, so READY may not start its line. */
    vm_wait_line_containing(vm, "READY mode=verify", 60);
    vm_wait_line(vm, "PASS n=1 ", 60);
    qc_assert_hmp(c, "info status", "VM status: running\n");
    qc_close(c);
    vm_kill(vm);
}

/* xp and pmemsave show the address words the verify guest keeps at offset 8 of each page. */
static void test_memory(void)
{
    g_autofree char *file = g_strdup_printf("%s/hmp-page.bin", vmtest_tmpdir());
    g_autofree char *cmd = NULL;
    g_autofree char *out = NULL;
    g_autofree char *data = NULL;
    g_autofree char *want = NULL;
    g_auto(GStrv) lines = NULL;
    uint64_t words[4];
    gsize len;
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    c = start_with_monitor(&vm, "memory", "");
    vm_wait_line(vm, "PASS", 60);
    qc_assert_hmp(c, "stop", "");
    for (int k = 0; k < 8; k++) {
        uint64_t page = WORK_BASE + k * 4096;
        g_autofree char *q = g_strdup_printf("xp /1xg 0x%" PRIx64, page + 8);
        g_autofree char *w = g_strdup_printf("%016" PRIx64 ": 0x%016" PRIx64 "\n",
                                             page + 8, page);
        qc_assert_hmp(c, q, w);
    }
    /* Four words from 0x400008: the address word, then the pass's random fill. */
    out = qc_hmp(c, "xp /4xg 0x400008");
    lines = g_strsplit(out, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    g_assert_cmpstr(lines[2], ==, "");
    g_assert_cmpint(sscanf(lines[0], "0000000000400008: 0x%" SCNx64 " 0x%" SCNx64,
                           &words[0], &words[1]), ==, 2);
    g_assert_cmpint(sscanf(lines[1], "0000000000400018: 0x%" SCNx64 " 0x%" SCNx64,
                           &words[2], &words[3]), ==, 2);
    g_assert_cmphex(words[0], ==, WORK_BASE);

    cmd = g_strdup_printf("pmemsave 0x400000 4096 %s", file);
    qc_assert_hmp(c, cmd, "");
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    g_assert_cmpuint(len, ==, 4096);
    /* Stopped: the dump and xp agree word for word. */
    g_assert_cmpmem(data + 8, 32, words, 32);
    g_assert_cmpuint(*(uint64_t *)data, >, 0);

    /* Other formats over the same bytes. */
    want = g_strdup_printf("0000000000400008: 0x%08x 0x%08x\n",
                           (uint32_t)words[0], (uint32_t)(words[0] >> 32));
    qc_assert_hmp(c, "xp /2xw 0x400008", want);
    g_clear_pointer(&want, g_free);
    qc_assert_hmp(c, "xp /2xb 0x400009", "0000000000400009: 0x00 0x40\n");
    want = g_strdup_printf("0000000000400008: %24d\n", WORK_BASE);
    qc_assert_hmp(c, "xp /1ug 0x400008", want);
    /* Outside RAM. */
    qc_assert_hmp_has(c, "xp /1xg 0xfffffffff000", "Cannot access memory");
    qc_assert_hmp(c, "c", "");
    vm_assert_progress(vm);
    qc_close(c);
    vm_kill(vm);
}

static void test_help(void)
{
    static const char *const cmds[] = {
        "help|?", "info", "stop", "cont|c", "quit|q", "system_reset", "xp", "pmemsave",
        "migrate", "migrate_incoming", "migrate_cancel", "migrate_set_capability",
        "migrate_set_parameter",
    };
    g_autofree char *out = NULL;
    g_autofree char *with_nl = NULL;
    g_autofree char *via_qmp = NULL;
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    c = start_with_monitor(&vm, "help", "");
    out = qc_hmp(c, "help");
    with_nl = g_strdup_printf("\n%s", out);
    for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
        g_autofree char *line = g_strdup_printf("\n%s ", cmds[i]);
        if (!strstr(with_nl, line)) {
            g_error("help lacks %s:\n%s", cmds[i], out);
        }
    }
    qc_assert_hmp_has(c, "?", "pmemsave addr size file -- ");
    qc_assert_hmp(c, "help xp", "xp /fmt addr -- physical memory dump starting at 'addr'\n");
    qc_assert_hmp(c, "help c", "cont|c  -- resume emulation\n");
    qc_assert_hmp_has(c, "help info", "info kvm  -- show KVM information\n");
    qc_assert_hmp(c, "help nosuch", "unknown command: 'nosuch'\n");
    qc_close(c);
    /* Through human-monitor-command: once crashed on the absent optional argument. */
    via_qmp = vm_hmp(vm, "help");
    g_assert_nonnull(strstr(via_qmp, "\nmigrate_set_parameter "));
    vm_kill(vm);
}

/* Bad input of every kind: an error line, then the prompt again. */
static void test_errors(void)
{
    g_autofree char *longline = NULL;
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    c = start_with_monitor(&vm, "errors", "");
    qc_assert_hmp(c, "foo", "unknown command: 'foo'\n");
    qc_assert_hmp(c, "foo bar baz", "unknown command: 'foo'\n");
    qc_assert_hmp(c, "info foo", "unknown command: 'info foo'\n");
    qc_assert_hmp(c, "xp /4x notanumber", "xp: invalid number 'notanumber' for 'addr'\n");
    qc_assert_hmp(c, "xp /4x 0x", "xp: invalid number '0x' for 'addr'\n");
    qc_assert_hmp(c, "xp /4x 99999999999999999999999", "xp: invalid number "
                  "'99999999999999999999999' for 'addr'\n");
    qc_assert_hmp(c, "xp", "xp: missing argument 'fmt'\n");
    qc_assert_hmp(c, "xp /4x", "xp: missing argument 'addr'\n");
    qc_assert_hmp(c, "xp 0x400000", "xp: expected /FMT\n");
    qc_assert_hmp(c, "xp /4z 0x400000", "invalid format '/4z'\n");
    qc_assert_hmp(c, "xp /0x 0x400000", "invalid format '/0x'\n");
    qc_assert_hmp(c, "xp /99999999x 0x400000", "invalid format '/99999999x'\n");
    qc_assert_hmp(c, "pmemsave 0 4096", "pmemsave: missing argument 'filename'\n");
    qc_assert_hmp_has(c, "pmemsave 0 4096 /nonexistent/dir/file", "Error: Could not open");
    qc_assert_hmp_has(c, "pmemsave 0 -1 /dev/null", "Error: ");
    qc_assert_hmp(c, "pmemsave 0 4096 \"unterminated", "pmemsave: unterminated string\n");
    qc_assert_hmp(c, "stop now", "stop: extraneous characters at the end of line\n");
    qc_assert_hmp(c, "", "");
    qc_assert_hmp(c, "    ", "");
    /* Control characters are dropped, not echoed. */
    assert_raw(c, "info\x01 status\x1b\r\n", "info status\r\nVM status: running\r\n");

    /* Longer than the monitor's line: refused whole, the echo stops at the limit. */
    longline = g_strnfill(10000, 'x');
    qc_assert_hmp(c, longline, "command line too long (at most 4096 characters)\n");
    g_clear_pointer(&longline, g_free);
    longline = g_strdup_printf("info status%*s", 4096 - 11, "");
    qc_assert_hmp(c, longline, "VM status: running\n");

    /* Backspace edits the line (echoed as "\b \b"). */
    assert_raw(c, "info statux\x7fs\r\n", "info statux\b \bs\r\nVM status: running\r\n");

    /* CR and LF arriving in separate reads still end one line: no extra prompt. */
    assert_raw(c, "info kvm\r", "info kvm\r\nkvm support: enabled\r\n");
    qc_send_str(c, "\n");
    qc_assert_hmp(c, "info status", "VM status: running\n");
    /* A bare LF ends a line; CR CR LF is two lines. */
    assert_raw(c, "info status\n", "info status\r\nVM status: running\r\n");
    assert_raw(c, "\r", "\r\n");
    assert_raw(c, "\r\n", "\r\n");

    /* Several lines in one write: one answer and one prompt each, in order. */
    qc_send_str(c, "info kvm\r\ninfo status\r\n");
    {
        static const char want[] = "info kvm\r\nkvm support: enabled\r\n(qemu) "
                                   "info status\r\nVM status: running\r\n(qemu) ";
        gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

        while (c->in->len < strlen(want) && g_get_monotonic_time() < end) {
            g_assert_true(qc_read_some(c, 50));
        }
        g_assert_cmpstr(c->in->str, ==, want);
        g_string_truncate(c->in, 0);
    }
    qc_assert_hmp(c, "info status", "VM status: running\n");
    vm_assert_progress(vm);
    qc_close(c);
    vm_kill(vm);
}

static void test_quit(void)
{
    static const char *const forms[] = { "quit", "q" };

    if (!vmtest_require_kvm()) {
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(forms); i++) {
        VM *vm;
        QConn *c = start_with_monitor(&vm, "quit", "");
        JsonNode *ev;

        qc_send_str(c, forms[i]);
        qc_send_str(c, "\r\n");
        ev = vm_wait_event(vm, "SHUTDOWN", 30);
        g_assert_cmpstr(json_get_str(ev, "data.reason"), ==, "host-qmp-quit");
        json_node_unref(ev);
        g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
        qc_close(c);
        vm_kill(vm);
    }
}

/* -chardev socket + -mon mode=readline; a client that leaves and one that comes back. */
static void test_chardev_mon(void)
{
    g_autofree char *path = vmtest_sock_path("hmpchr");
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("chrmon", true, ARGS "-serial stdio "
                  "-chardev socket,id=h0,path=%s,server=on,wait=off -mon chardev=h0,mode=readline",
                  vmtest_firmware(), path);
    for (int round = 0; round < 3; round++) {
        g_autofree char *banner = NULL;

        c = qc_connect_unix(vm, path);
        banner = qc_hmp_banner(c);
        g_assert_true(g_str_has_suffix(banner, "monitor - type 'help' for more information\n"));
        qc_assert_hmp(c, "info status", "VM status: running\n");
        qc_assert_hmp(c, "stop", "");
        qc_assert_hmp(c, "info status", "VM status: paused\n");
        qc_assert_hmp(c, "c", "");
        /* Leave with half a line typed: the next client starts clean. */
        qc_send_str(c, "info sta");
        qc_close(c);
    }
    c = qc_connect_unix(vm, path);
    g_free(qc_hmp_banner(c));
    qc_assert_hmp(c, "info kvm", "kvm support: enabled\n");
    vm_assert_progress(vm);
    qc_send_str(c, "q\r\n");
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    qc_close(c);
    vm_kill(vm);
}

/*
 * -monitor stdio with stdin a pipe: commands go to the child's stdin, the
 * monitor's answers come back on its stdout (libvmtest's "serial" lines),
 * and the guest serial goes to a file.
 */
static VM *spawn_stdio_monitor(const char *name, char **serial_path)
{
    g_autofree char *qmp = vmtest_sock_path("qmp");
    g_autofree char *qmp_arg = g_strdup_printf("unix:%s,server=on,wait=off", qmp);
    g_autofree char *serial_arg = NULL;
    VM *vm;

    *serial_path = g_strdup_printf("%s/%s-%u.serial", vmtest_tmpdir(), name, g_random_int());
    serial_arg = g_strdup_printf("file:%s", *serial_path);
    {
        const char *argv[] = {
            vmtest_binary(), "-M", "microvm", "-enable-kvm", "-nodefaults",
            "-m", "128M", "-kernel", vmtest_firmware(), "-append", "mode=verify mem=32",
            "-serial", serial_arg, "-monitor", "stdio", "-qmp", qmp_arg, NULL,
        };
        vm = vm_spawn_argv_stdin(name, (char **)argv);
    }
    vm->qmp_path = g_strdup(qmp);
    vm_qmp_connect(vm);
    return vm;
}

static void stdin_write(VM *vm, const char *s)
{
    g_assert_cmpint(write(vm->stdin_fd, s, strlen(s)), ==, strlen(s));
}

static void test_stdio(void)
{
    g_autofree char *serial = NULL;
    g_autofree char *text = NULL;
    const char *l;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = spawn_stdio_monitor("stdio", &serial);
    l = vm_wait_line(vm, "QEMU ", 30);
    g_assert_nonnull(strstr(l, "monitor - type 'help' for more information"));
    stdin_write(vm, "info status\n");
    /* The echo follows the prompt; the answer has a line of its own. */
    vm_wait_line(vm, "(qemu) info status", 30);
    g_assert_cmpstr(vm_wait_line(vm, "VM status:", 30), ==, "VM status: running");
    stdin_write(vm, "stop\ninfo status\n");
    g_assert_cmpstr(vm_wait_line(vm, "VM status:", 30), ==, "VM status: paused");
    vm_assert_status(vm, "paused", false);
    stdin_write(vm, "cont\ninfo kvm\ninfo status\n");
    g_assert_cmpstr(vm_wait_line(vm, "kvm support:", 30), ==, "kvm support: enabled");
    g_assert_cmpstr(vm_wait_line(vm, "VM status:", 30), ==, "VM status: running");
    stdin_write(vm, "nosuch\n");
    vm_wait_line(vm, "unknown command: 'nosuch'", 30);
    /* The guest runs meanwhile, its serial going to the file. */
    {
        gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

        while (!text || !strstr(text, "PASS n=2 ")) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            g_clear_pointer(&text, g_free);
            vm_pump(vm, 50);
            g_assert_true(g_file_get_contents(serial, &text, NULL, NULL));
        }
        g_assert_true(g_str_has_prefix(text, "READY mode=verify"));
    }
    /* stdin at EOF: the monitor goes quiet, the VM keeps running. */
    close(vm->stdin_fd);
    vm->stdin_fd = -1;
    vm_assert_status(vm, "running", true);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
    vm_assert_status(vm, "running", true);
    json_node_unref(vm_try_qmp(vm, "{'execute': 'quit'}"));
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    vm_kill(vm);

    /* quit typed on stdin. */
    g_clear_pointer(&serial, g_free);
    vm = spawn_stdio_monitor("stdio-quit", &serial);
    vm_wait_line(vm, "QEMU ", 30);
    stdin_write(vm, "quit\n");
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/hmp/info", test_info);
    g_test_add_func("/hmp/run-state", test_run_state);
    g_test_add_func("/hmp/memory", test_memory);
    g_test_add_func("/hmp/help", test_help);
    g_test_add_func("/hmp/errors", test_errors);
    g_test_add_func("/hmp/quit", test_quit);
    g_test_add_func("/hmp/chardev-mon", test_chardev_mon);
    g_test_add_func("/hmp/stdio", test_stdio);
    return g_test_run();
}
