/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libvmtest: real processes, real sockets. Every wait has a deadline and
 * polls the child's pipes and QMP socket together, so a dying child is
 * noticed at once instead of at the timeout.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include "libvmtest.h"

static GPtrArray *live_vms;
static char *tmpdir;
static char *ramdir;
/* The RAM dumps that exist now, for the abort handler (no allocation there). */
static char ram_dumps[8][PATH_MAX];

static void vmtest_kill_all(void)
{
    for (guint i = 0; live_vms && i < live_vms->len; i++) {
        VM *vm = g_ptr_array_index(live_vms, i);
        if (!vm->exited) {
            kill(vm->pid, SIGKILL);
        }
    }
}

static void rm_rf(const char *path);

static void vmtest_abort_handler(int sig)
{
    vmtest_kill_all();
    /*
     * Dumps in tmpfs hold RAM until removed; the logs in tmpdir stay. Only
     * unlink() and rmdir() here: async-signal-safe, unlike rm_rf().
     */
    if (!getenv("VMTEST_KEEP_TMP")) {
        for (size_t i = 0; i < G_N_ELEMENTS(ram_dumps); i++) {
            if (ram_dumps[i][0]) {
                unlink(ram_dumps[i]);
            }
        }
        if (ramdir && strcmp(ramdir, tmpdir)) {
            rmdir(ramdir);
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void rm_rf(const char *path)
{
    GDir *d = g_dir_open(path, 0, NULL);
    const char *e;

    if (d) {
        while ((e = g_dir_read_name(d))) {
            g_autofree char *p = g_build_filename(path, e, NULL);
            if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK)) {
                rm_rf(p);
            } else {
                g_unlink(p);
            }
        }
        g_dir_close(d);
    }
    g_rmdir(path);
}

static void vmtest_cleanup(void)
{
    vmtest_kill_all();
    if (tmpdir && !getenv("VMTEST_KEEP_TMP")) {
        rm_rf(tmpdir);
    }
    if (ramdir && !getenv("VMTEST_KEEP_TMP")) {
        rm_rf(ramdir);
    }
}

const char *vmtest_tmpdir(void)
{
    if (!tmpdir) {
        tmpdir = g_dir_make_tmp("vmtest-XXXXXX", NULL);
        g_assert_nonnull(tmpdir);
        atexit(vmtest_cleanup);
        signal(SIGABRT, vmtest_abort_handler);
        signal(SIGTERM, vmtest_abort_handler);
        signal(SIGINT, vmtest_abort_handler);
        signal(SIGTRAP, vmtest_abort_handler);
        signal(SIGPIPE, SIG_IGN);
    }
    return tmpdir;
}

/*
 * Guest RAM dumps go to tmpfs when there is one: writing and reading back
 * 2 x 512 MiB through the page cache of a virtual disk took most of a
 * migration test's time, and nothing about a dump needs a disk.
 */
const char *vmtest_ramdir(void)
{
    if (!ramdir) {
        vmtest_tmpdir();    /* installs the cleanup */
        if (g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) && access("/dev/shm", W_OK) == 0) {
            ramdir = g_build_filename("/dev/shm", "vmtest-ram-XXXXXX", NULL);
            if (!g_mkdtemp(ramdir)) {
                g_clear_pointer(&ramdir, g_free);
            }
        }
        if (!ramdir) {
            ramdir = g_strdup(tmpdir);
        }
    }
    return ramdir;
}

/*
 * A path for a dump of @size bytes: in vmtest_ramdir() if its file system
 * has room for it and 256 MiB more, else in vmtest_tmpdir(). A small tmpfs
 * must not turn a RAM comparison into ENOSPC.
 */
char *vmtest_ram_dump_path(const char *name, uint64_t size)
{
    const char *dir = vmtest_ramdir();
    struct statvfs sv;
    char *path;

    if (statvfs(dir, &sv) < 0 || (uint64_t)sv.f_bavail * sv.f_frsize < size + (256 << 20)) {
        dir = vmtest_tmpdir();
    }
    path = g_build_filename(dir, name, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(ram_dumps); i++) {
        if (!ram_dumps[i][0] && strlen(path) < sizeof(ram_dumps[i])) {
            strcpy(ram_dumps[i], path);
            break;
        }
    }
    return path;
}

void vmtest_ram_dump_unlink(const char *path)
{
    for (size_t i = 0; i < G_N_ELEMENTS(ram_dumps); i++) {
        if (!strcmp(ram_dumps[i], path)) {
            ram_dumps[i][0] = 0;
        }
    }
    g_unlink(path);
}

const char *vmtest_binary(void)
{
    const char *b = getenv("QTEST_QEMU_BINARY");

    return b ? b : VMTEST_BUILD_DIR "/qemu-system-x86_64";
}

const char *vmtest_firmware(void)
{
    const char *f = getenv("VMTEST_FIRMWARE");

    return f ? f : VMTEST_BUILD_DIR "/tests/guest/workload.elf";
}

void vmtest_skip(const char *reason)
{
    const char *strict = getenv("VMTEST_FAIL_ON_SKIP");

    if (strict && *strict == '1') {
        g_test_message("SKIP NOT ALLOWED (VMTEST_FAIL_ON_SKIP=1): %s", reason);
        g_test_fail();
        return;
    }
    g_printerr("\n*** SKIPPING TEST: %s ***\n", reason);
    g_test_skip(reason);
}

bool vmtest_require_kvm(void)
{
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

    if (fd < 0) {
        g_autofree char *why = g_strdup_printf("/dev/kvm is not usable (%s): this test needs KVM",
                                               g_strerror(errno));
        vmtest_skip(why);
        return false;
    }
    close(fd);
    return true;
}

const char *vmtest_require_qemu72(void)
{
    const char *peer = getenv("VMTEST_PEER") ? getenv("VMTEST_PEER") : "/usr/bin/qemu-system-x86_64";
    g_autofree char *cmd = g_strdup_printf("%s -version", peer);
    g_autofree char *out = NULL;

    if (access(peer, X_OK) != 0 || !g_spawn_command_line_sync(cmd, &out, NULL, NULL, NULL) ||
        strstr(out, "qemu-mig")) {
        vmtest_skip("QEMU 7.2 (Debian package qemu-system-x86) is not installed");
        return NULL;
    }
    return peer;
}

/* In the child: die with the test, whatever way the test dies. */
static void child_setup(gpointer data)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static void set_nonblock(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static VM *vm_spawn_argv_full(const char *name, char **argv, bool with_stdin)
{
    VM *vm = g_new0(VM, 1);
    g_autoptr(GError) gerr = NULL;
    int out_fd, err_fd;

    vmtest_tmpdir();
    vm->name = g_strdup(name);
    vm->qmp_fd = -1;
    vm->stdin_fd = -1;
    vm->qmp_in = g_string_new(NULL);
    vm->serial_in = g_string_new(NULL);
    vm->serial_lines = g_ptr_array_new_with_free_func(g_free);
    vm->stderr_text = g_string_new(NULL);
    g_queue_init(&vm->events);
    if (getenv("VMTEST_VERBOSE")) {
        g_autofree char *cmd = g_strjoinv(" ", argv);
        g_printerr("[%s] %s\n", name, cmd);
    }
    if (!g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, child_setup, NULL,
                                  &vm->pid, with_stdin ? &vm->stdin_fd : NULL, &out_fd,
                                  &err_fd, &gerr)) {
        g_error("cannot start %s: %s", argv[0], gerr->message);
    }
    vm->serial_fd = out_fd;
    vm->stderr_fd = err_fd;
    set_nonblock(out_fd);
    set_nonblock(err_fd);
    if (!live_vms) {
        live_vms = g_ptr_array_new();
    }
    g_ptr_array_add(live_vms, vm);
    return vm;
}

VM *vm_spawn_argv(const char *name, char **argv)
{
    return vm_spawn_argv_full(name, argv, false);
}

VM *vm_spawn_argv_stdin(const char *name, char **argv)
{
    return vm_spawn_argv_full(name, argv, true);
}

VM *vm_spawn_binary(const char *name, const char *binary, bool with_qmp, const char *fmt, ...)
{
    g_autofree char *args = NULL;
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    g_auto(GStrv) parts = NULL;
    va_list ap;
    VM *vm;
    char *dir;

    va_start(ap, fmt);
    args = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    dir = g_strdup_printf("%s/%s-%d", vmtest_tmpdir(), name, g_random_int_range(0, 1 << 30));
    g_mkdir(dir, 0700);
    g_ptr_array_add(argv, g_strdup(binary));
    if (!g_shell_parse_argv(args, NULL, &parts, NULL)) {
        g_error("bad VM arguments: %s", args);
    }
    for (int i = 0; parts[i]; i++) {
        g_ptr_array_add(argv, g_strdup(parts[i]));
    }
    if (with_qmp) {
        g_ptr_array_add(argv, g_strdup("-qmp"));
        g_ptr_array_add(argv, g_strdup_printf("unix:%s/qmp.sock,server=on,wait=off", dir));
    }
    g_ptr_array_add(argv, NULL);
    vm = vm_spawn_argv(name, (char **)argv->pdata);
    vm->dir = dir;
    if (with_qmp) {
        vm->qmp_path = g_strdup_printf("%s/qmp.sock", dir);
        vm_qmp_connect(vm);
    }
    return vm;
}

static void vm_reap(VM *vm, bool block)
{
    int status;
    pid_t r;

    if (vm->exited) {
        return;
    }
    r = waitpid(vm->pid, &status, block ? 0 : WNOHANG);
    if (r == vm->pid) {
        vm->exited = true;
        vm->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
}

static void vm_take_serial(VM *vm, const char *buf, ssize_t n)
{
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            char *line = g_strdup(vm->serial_in->str);
            g_strchomp(line);
            if (getenv("VMTEST_VERBOSE")) {
                g_printerr("[%s serial] %s\n", vm->name, line);
            }
            g_ptr_array_add(vm->serial_lines, line);
            g_string_truncate(vm->serial_in, 0);
        } else {
            g_string_append_c(vm->serial_in, buf[i]);
        }
    }
}

static void vm_take_qmp_events(VM *vm);

/* Polls every fd of @vm once for up to @timeout_ms and absorbs what arrived. */
void vm_pump(VM *vm, int timeout_ms)
{
    struct pollfd pfd[3];
    int n = 0;
    char buf[65536];

    if (vm->serial_fd >= 0) {
        pfd[n++] = (struct pollfd) { .fd = vm->serial_fd, .events = POLLIN };
    }
    if (vm->stderr_fd >= 0) {
        pfd[n++] = (struct pollfd) { .fd = vm->stderr_fd, .events = POLLIN };
    }
    if (vm->qmp_fd >= 0) {
        pfd[n++] = (struct pollfd) { .fd = vm->qmp_fd, .events = POLLIN };
    }
    if (n && poll(pfd, n, timeout_ms) <= 0) {
        vm_reap(vm, false);
        return;
    }
    for (int i = 0; i < n; i++) {
        ssize_t r;

        if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
            continue;
        }
        r = read(pfd[i].fd, buf, sizeof(buf));
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            continue;
        }
        if (r <= 0) {
            if (pfd[i].fd == vm->serial_fd) {
                close(vm->serial_fd);
                vm->serial_fd = -1;
            } else if (pfd[i].fd == vm->stderr_fd) {
                close(vm->stderr_fd);
                vm->stderr_fd = -1;
            } else {
                close(vm->qmp_fd);
                vm->qmp_fd = -1;
            }
            continue;
        }
        if (pfd[i].fd == vm->serial_fd) {
            vm_take_serial(vm, buf, r);
        } else if (pfd[i].fd == vm->stderr_fd) {
            g_string_append_len(vm->stderr_text, buf, r);
            if (getenv("VMTEST_VERBOSE")) {
                g_printerr("[%s stderr] %.*s", vm->name, (int)r, buf);
            }
        } else {
            g_string_append_len(vm->qmp_in, buf, r);
        }
    }
    vm_take_qmp_events(vm);
    vm_reap(vm, false);
}

/* Pops one complete "\r\n"-terminated QMP line, or NULL. */
static JsonNode *vm_qmp_pop_line(VM *vm)
{
    char *nl = memchr(vm->qmp_in->str, '\n', vm->qmp_in->len);
    g_autoptr(JsonParser) p = NULL;
    g_autofree char *line = NULL;
    JsonNode *node;

    if (!nl) {
        return NULL;
    }
    line = g_strndup(vm->qmp_in->str, nl - vm->qmp_in->str);
    g_string_erase(vm->qmp_in, 0, nl - vm->qmp_in->str + 1);
    p = json_parser_new();
    if (!json_parser_load_from_data(p, line, -1, NULL)) {
        g_error("[%s] unparsable QMP line: %s", vm->name, line);
    }
    node = json_node_copy(json_parser_get_root(p));
    return node;
}

static bool json_is_event(JsonNode *n)
{
    return JSON_NODE_HOLDS_OBJECT(n) && json_object_has_member(json_node_get_object(n), "event");
}

/* Moves complete event lines to the event queue; keeps replies in qmp_in. */
static void vm_take_qmp_events(VM *vm)
{
    GString *rest = g_string_new(NULL);
    JsonNode *n;

    while ((n = vm_qmp_pop_line(vm))) {
        if (json_is_event(n)) {
            g_queue_push_tail(&vm->events, n);
        } else {
            g_autofree char *s = json_to_string(n, FALSE);
            g_string_append_printf(rest, "%s\n", s);
            json_node_unref(n);
        }
    }
    g_string_prepend(vm->qmp_in, rest->str);
    g_string_free(rest, TRUE);
}

static gint64 deadline_after(int timeout_s)
{
    return g_get_monotonic_time() + (gint64)timeout_s * G_USEC_PER_SEC;
}

static void vm_fail(VM *vm, const char *what)
{
    vm_pump(vm, 0);
    g_printerr("[%s] %s\n[%s] stderr so far:\n%s\n[%s] last serial lines:\n", vm->name, what,
               vm->name, vm->stderr_text->str, vm->name);
    for (guint i = vm->serial_lines->len > 10 ? vm->serial_lines->len - 10 : 0;
         i < vm->serial_lines->len; i++) {
        g_printerr("  %s\n", (char *)g_ptr_array_index(vm->serial_lines, i));
    }
    g_error("[%s] %s", vm->name, what);
}

bool vm_try_qmp_connect(VM *vm)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    gint64 end = deadline_after(30);
    JsonNode *greeting = NULL, *reply;

    g_strlcpy(un.sun_path, vm->qmp_path, sizeof(un.sun_path));
    while (g_get_monotonic_time() < end) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (connect(fd, (struct sockaddr *)&un, sizeof(un)) == 0) {
            vm->qmp_fd = fd;
            break;
        }
        close(fd);
        vm_pump(vm, 20);
        if (vm->exited) {
            return false;
        }
    }
    if (vm->qmp_fd < 0) {
        vm_fail(vm, "QMP socket never came up");
    }
    while (!(greeting = vm_qmp_pop_line(vm))) {
        if (g_get_monotonic_time() > end) {
            vm_fail(vm, "no QMP greeting");
        }
        vm_pump(vm, 100);
        if (vm->qmp_fd < 0) {
            return false;
        }
    }
    g_assert_true(json_has(greeting, "QMP.version.qemu.major"));
    json_node_unref(greeting);
    /* A VM that exits right after the greeting (a refused stream) is "gone", not a failure. */
    reply = vm_try_qmp(vm, "{'execute': 'qmp_capabilities'}");
    if (!reply) {
        return false;
    }
    g_assert_true(json_has(reply, "return"));
    json_node_unref(reply);
    return true;
}

void vm_qmp_connect(VM *vm)
{
    if (!vm_try_qmp_connect(vm)) {
        vm_fail(vm, "exited before QMP was up");
    }
}

static bool vm_qmp_send(VM *vm, const char *text, bool tolerate_close)
{
    size_t len = strlen(text), done = 0;

    while (done < len) {
        ssize_t n = send(vm->qmp_fd, text + done, len - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (tolerate_close) {
                return false;
            }
            vm_fail(vm, "QMP send failed");
        }
        done += n;
    }
    return true;
}

static JsonNode *vm_qmp_vrequest_full(VM *vm, bool tolerate_close, const char *fmt, va_list ap);

static JsonNode *vm_qmp_vrequest(VM *vm, const char *fmt, va_list ap)
{
    return vm_qmp_vrequest_full(vm, false, fmt, ap);
}

JsonNode *vm_try_qmp(VM *vm, const char *fmt, ...)
{
    va_list ap;
    JsonNode *r;

    va_start(ap, fmt);
    r = vm_qmp_vrequest_full(vm, true, fmt, ap);
    va_end(ap);
    return r;
}

static JsonNode *vm_qmp_vrequest_full(VM *vm, bool tolerate_close, const char *fmt, va_list ap)
{
    g_autofree char *req = g_strdup_vprintf(fmt, ap);
    g_autofree char *line = NULL;
    gint64 end = deadline_after(120);
    JsonNode *reply = NULL;

    /* Tests write single quotes for readability; turn them into JSON outside "strings". */
    for (char *p = req, in_dq = 0; *p; p++) {
        if (*p == '"' && (p == req || p[-1] != '\\')) {
            in_dq = !in_dq;
        } else if (*p == '\'' && !in_dq) {
            *p = '"';
        }
    }
    if (vm->qmp_fd < 0) {
        if (tolerate_close) {
            return NULL;
        }
        vm_fail(vm, "no QMP connection");
    }
    /*
     * One send with the newline: the monitor runs a request at its closing
     * brace, and a command that ends the process (quit, migrate_cancel on a
     * destination) must not make a second send of the newline fail.
     */
    line = g_strconcat(req, "\n", NULL);
    if (!vm_qmp_send(vm, line, tolerate_close)) {
        return NULL;
    }
    for (;;) {
        vm_take_qmp_events(vm);
        reply = vm_qmp_pop_line(vm);
        if (reply) {
            return reply;
        }
        if (vm->qmp_fd < 0) {
            if (tolerate_close) {
                return NULL;
            }
            vm_fail(vm, "QMP connection closed while waiting for a reply");
        }
        if (g_get_monotonic_time() > end) {
            vm_fail(vm, "timeout waiting for a QMP reply");
        }
        vm_pump(vm, 100);
    }
}

JsonNode *vm_qmp(VM *vm, const char *fmt, ...)
{
    va_list ap;
    JsonNode *r;

    va_start(ap, fmt);
    r = vm_qmp_vrequest(vm, fmt, ap);
    va_end(ap);
    return r;
}

JsonNode *vm_qmp_ok(VM *vm, const char *fmt, ...)
{
    va_list ap;
    JsonNode *r, *ret;
    JsonObject *o;

    va_start(ap, fmt);
    r = vm_qmp_vrequest(vm, fmt, ap);
    va_end(ap);
    o = json_node_get_object(r);
    if (!json_object_has_member(o, "return")) {
        g_autofree char *s = json_to_string(r, FALSE);
        g_autofree char *req = g_strdup(fmt);
        g_error("[%s] QMP command %s failed: %s", vm->name, req, s);
    }
    ret = json_node_copy(json_object_get_member(o, "return"));
    json_node_unref(r);
    return ret;
}

char *vm_qmp_error_desc(JsonNode *reply, const char **cls)
{
    JsonObject *o = json_node_get_object(reply);
    JsonObject *e;

    if (!json_object_has_member(o, "error")) {
        g_autofree char *s = json_to_string(reply, FALSE);
        g_error("expected a QMP error, got %s", s);
    }
    e = json_object_get_object_member(o, "error");
    if (cls) {
        *cls = json_object_get_string_member(e, "class");
    }
    return g_strdup(json_object_get_string_member(e, "desc"));
}

void vm_qmp_expect_error(VM *vm, const char *cmd, const char *part)
{
    JsonNode *r = vm_qmp(vm, "%s", cmd);
    g_autofree char *desc = vm_qmp_error_desc(r, NULL);

    if (!strstr(desc, part)) {
        g_error("%s: error '%s' lacks '%s'", cmd, desc, part);
    }
    json_node_unref(r);
}

JsonNode *vm_wait_event(VM *vm, const char *name, int timeout_s)
{
    gint64 end = deadline_after(timeout_s);

    for (;;) {
        for (GList *l = vm->events.head; l; l = l->next) {
            JsonNode *n = l->data;
            if (!strcmp(json_get_str(n, "event"), name)) {
                g_queue_delete_link(&vm->events, l);
                return n;
            }
        }
        if (g_get_monotonic_time() > end) {
            g_autofree char *m = g_strdup_printf("timeout waiting for event %s", name);
            vm_fail(vm, m);
        }
        if (vm->qmp_fd < 0) {
            g_autofree char *m = g_strdup_printf("QMP closed while waiting for event %s", name);
            vm_fail(vm, m);
        }
        vm_pump(vm, 100);
    }
}

char *vm_hmp(VM *vm, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *cmd = NULL;
    g_autofree char *req = NULL;
    JsonNode *r;
    char *out;
    JsonObject *o;

    va_start(ap, fmt);
    cmd = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    {
        JsonNode *s = json_node_new(JSON_NODE_VALUE);
        json_node_set_string(s, cmd);
        req = json_to_string(s, FALSE);
        json_node_unref(s);
    }
    r = vm_qmp(vm, "{\"execute\": \"human-monitor-command\", \"arguments\": {\"command-line\": %s}}",
               req);
    o = json_node_get_object(r);
    g_assert_true(json_object_has_member(o, "return"));
    out = g_strdup(json_object_get_string_member(o, "return"));
    json_node_unref(r);
    return out;
}

char *vm_status(VM *vm)
{
    JsonNode *r = vm_qmp_ok(vm, "{'execute': 'query-status'}");
    char *s = g_strdup(json_get_str(r, "status"));

    json_node_unref(r);
    return s;
}

/*
 * Issue 41: x-progress.percent never runs backwards within a migration. A
 * total-time that went down is a new migration, whose percent starts over.
 */
void vm_check_progress(VM *vm, JsonNode *info)
{
    double pct;
    int64_t total;

    if (!json_has(info, "x-progress.percent") || !json_has(info, "total-time")) {
        return;
    }
    pct = json_get_double(info, "x-progress.percent");
    total = json_get_int(info, "total-time");
    if (total < vm->progress_total_ms) {
        vm->progress_percent = 0;
    }
    if (pct < vm->progress_percent || pct < 0 || pct > 100) {
        g_autofree char *m = g_strdup_printf("x-progress.percent went from %.3f to %.3f",
                                             vm->progress_percent, pct);
        vm_fail(vm, m);
    }
    vm->progress_percent = pct;
    vm->progress_total_ms = total;
}

JsonNode *vm_wait_migration(VM *vm, const char *want, int timeout_s)
{
    gint64 end = deadline_after(timeout_s);
    g_auto(GStrv) states = g_strsplit(want, "|", -1);

    for (;;) {
        JsonNode *r = vm_qmp_ok(vm, "{'execute': 'query-migrate'}");
        g_autofree char *st = g_strdup(json_has(r, "status") ? json_get_str(r, "status") : "none");

        vm_check_progress(vm, r);
        if (g_strv_contains((const char *const *)states, st)) {
            return r;
        }
        json_node_unref(r);
        if (g_get_monotonic_time() > end) {
            g_autofree char *m = g_strdup_printf("migration never reached %s (last %s)", want, st);
            vm_fail(vm, m);
        }
        vm_pump(vm, 50);
    }
}

const char *vm_try_wait_line(VM *vm, const char *prefix, int timeout_s)
{
    gint64 end = deadline_after(timeout_s);

    for (;;) {
        while (vm->serial_read_pos < vm->serial_lines->len) {
            const char *l = g_ptr_array_index(vm->serial_lines, vm->serial_read_pos++);
            if (g_str_has_prefix(l, prefix)) {
                return l;
            }
        }
        if (vm->exited && vm->serial_fd < 0) {
            return NULL;
        }
        if (g_get_monotonic_time() > end) {
            return NULL;
        }
        vm_pump(vm, 100);
    }
}

const char *vm_wait_line(VM *vm, const char *prefix, int timeout_s)
{
    const char *l = vm_try_wait_line(vm, prefix, timeout_s);

    if (!l) {
        g_autofree char *m = g_strdup_printf("no serial line starting with '%s' within %d s%s",
                                             prefix, timeout_s, vm->exited ? " (VM exited)" : "");
        vm_fail(vm, m);
    }
    return l;
}

guint vm_count_lines(VM *vm, const char *prefix)
{
    guint n = 0;

    for (guint i = 0; i < vm->serial_lines->len; i++) {
        if (g_str_has_prefix(g_ptr_array_index(vm->serial_lines, i), prefix)) {
            n++;
        }
    }
    return n;
}

int vm_wait_exit(VM *vm, int timeout_s)
{
    gint64 end = deadline_after(timeout_s);

    while (!vm->exited) {
        if (g_get_monotonic_time() > end) {
            vm_fail(vm, "did not exit in time");
        }
        vm_pump(vm, 50);
    }
    /* Drain what is left in the pipes. */
    while (vm->serial_fd >= 0 || vm->stderr_fd >= 0) {
        vm_pump(vm, 200);
        if (g_get_monotonic_time() > end + 5 * G_USEC_PER_SEC) {
            break;
        }
    }
    return vm->exit_status;
}

void vm_free(VM *vm)
{
    if (!vm) {
        return;
    }
    if (live_vms) {
        g_ptr_array_remove(live_vms, vm);
    }
    if (vm->qmp_fd >= 0) {
        close(vm->qmp_fd);
    }
    if (vm->serial_fd >= 0) {
        close(vm->serial_fd);
    }
    if (vm->stderr_fd >= 0) {
        close(vm->stderr_fd);
    }
    if (vm->stdin_fd >= 0) {
        close(vm->stdin_fd);
    }
    g_queue_clear_full(&vm->events, (GDestroyNotify)json_node_unref);
    g_string_free(vm->qmp_in, TRUE);
    g_string_free(vm->serial_in, TRUE);
    g_string_free(vm->stderr_text, TRUE);
    g_ptr_array_free(vm->serial_lines, TRUE);
    g_spawn_close_pid(vm->pid);
    g_free(vm->qmp_path);
    g_free(vm->dir);
    g_free(vm->name);
    g_free(vm);
}

void vm_kill(VM *vm)
{
    if (!vm) {
        return;
    }
    if (!vm->exited) {
        kill(vm->pid, SIGKILL);
        vm_reap(vm, true);
    }
    vm_free(vm);
}
