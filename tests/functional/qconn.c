/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qconn: raw clients of a VM's monitor sockets (QMP and HMP) for tests
 * that need every byte under their control, plus guest-progress helpers.
 * While a client waits it also pumps its VM, so the guest's serial pipe
 * never fills and stalls the guest.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "qconn.h"

static gint64 deadline(int s)
{
    return g_get_monotonic_time() + (gint64)s * G_USEC_PER_SEC;
}

/* Single quotes outside double-quoted strings become double quotes. */
char *qc_json(const char *s)
{
    char *r = g_strdup(s);

    for (char *p = r, in_dq = 0; *p; p++) {
        if (*p == '"' && (p == r || p[-1] != '\\')) {
            in_dq = !in_dq;
        } else if (*p == '\'' && !in_dq) {
            *p = '"';
        }
    }
    return r;
}

static QConn *qc_new(VM *vm, int fd)
{
    QConn *c = g_new0(QConn, 1);

    c->vm = vm;
    c->fd = fd;
    c->in = g_string_new(NULL);
    g_queue_init(&c->events);
    return c;
}

QConn *qc_connect_unix(VM *vm, const char *path)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    gint64 end = deadline(30);

    g_strlcpy(un.sun_path, path, sizeof(un.sun_path));
    while (g_get_monotonic_time() < end) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (connect(fd, (struct sockaddr *)&un, sizeof(un)) == 0) {
            return qc_new(vm, fd);
        }
        close(fd);
        vm_pump(vm, 20);
        g_assert_false(vm->exited);
    }
    g_error("cannot connect to %s", path);
}

QConn *qc_connect_tcp(VM *vm, int port)
{
    struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    gint64 end = deadline(30);

    while (g_get_monotonic_time() < end) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (connect(fd, (struct sockaddr *)&in, sizeof(in)) == 0) {
            return qc_new(vm, fd);
        }
        close(fd);
        vm_pump(vm, 20);
        g_assert_false(vm->exited);
    }
    g_error("cannot connect to 127.0.0.1:%d", port);
}

void qc_close(QConn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
    }
    g_queue_clear_full(&c->events, (GDestroyNotify)json_node_unref);
    g_string_free(c->in, TRUE);
    g_free(c);
}

/* Reads what is there within @timeout_ms; false at EOF. */
bool qc_read_some(QConn *c, int timeout_ms)
{
    struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
    char buf[65536];
    ssize_t n;

    vm_pump(c->vm, 0);
    if (poll(&pfd, 1, timeout_ms) <= 0) {
        return true;
    }
    n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return true;
    }
    if (n <= 0) {
        return false;
    }
    g_string_append_len(c->in, buf, n);
    return true;
}

/* Sends everything, reading replies meanwhile so neither side blocks. */
void qc_send(QConn *c, const void *data, size_t len)
{
    const char *p = data;
    gint64 end = deadline(120);

    while (len) {
        struct pollfd pfd = { .fd = c->fd, .events = POLLOUT | POLLIN };
        ssize_t n;

        g_assert_cmpint(g_get_monotonic_time(), <, end);
        vm_pump(c->vm, 0);
        if (poll(&pfd, 1, 100) <= 0) {
            continue;
        }
        if (pfd.revents & POLLIN) {
            g_assert_true(qc_read_some(c, 0));
        }
        if (!(pfd.revents & POLLOUT)) {
            continue;
        }
        n = send(c->fd, p, MIN(len, 65536), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            continue;
        }
        g_assert_cmpint(n, >, 0);
        p += n;
        len -= n;
    }
}

void qc_send_str(QConn *c, const char *s)
{
    qc_send(c, s, strlen(s));
}

/* The next complete line as JSON (events included), or NULL on timeout/EOF. */
JsonNode *qc_recv(QConn *c, int timeout_ms)
{
    gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;

    for (;;) {
        char *nl = memchr(c->in->str, '\n', c->in->len);

        if (nl) {
            g_autofree char *line = g_strndup(c->in->str, nl - c->in->str);
            g_autoptr(JsonParser) p = json_parser_new();

            g_string_erase(c->in, 0, nl - c->in->str + 1);
            if (!json_parser_load_from_data(p, line, -1, NULL)) {
                g_error("unparsable QMP line: %s", line);
            }
            return json_node_copy(json_parser_get_root(p));
        }
        if (g_get_monotonic_time() >= end || !qc_read_some(c, 50)) {
            return NULL;
        }
    }
}

static bool is_event(JsonNode *n)
{
    return json_has(n, "event");
}

/* The next reply (events are queued), failing after 60 s. */
JsonNode *qc_reply(QConn *c)
{
    for (;;) {
        JsonNode *n = qc_recv(c, 60000);

        if (!n) {
            g_error("no QMP reply (vm exited: %d)", c->vm->exited);
        }
        if (!is_event(n)) {
            return n;
        }
        g_queue_push_tail(&c->events, n);
    }
}

/* Waits for event @name: queued ones first, then new lines (replies are an error). */
void qc_wait_event(QConn *c, const char *name)
{
    for (;;) {
        JsonNode *n = g_queue_pop_head(&c->events);

        if (!n) {
            n = qc_recv(c, 30000);
            if (!n) {
                g_error("no %s event", name);
            }
            if (!is_event(n)) {
                g_autofree char *s = json_to_string(n, FALSE);
                g_error("expected event %s, got %s", name, s);
            }
        }
        if (!strcmp(json_get_str(n, "event"), name)) {
            json_node_unref(n);
            return;
        }
        json_node_unref(n);
    }
}

JsonNode *qc_cmd(QConn *c, const char *req)
{
    g_autofree char *j = qc_json(req);

    qc_send_str(c, j);
    qc_send_str(c, "\n");
    return qc_reply(c);
}

void qc_cmd_ok(QConn *c, const char *req)
{
    JsonNode *r = qc_cmd(c, req);

    if (!json_has(r, "return")) {
        g_autofree char *s = json_to_string(r, FALSE);
        g_error("%s failed: %s", req, s);
    }
    json_node_unref(r);
}

/* Asserts @r is an error of class @cls whose desc contains @desc; frees @r. */
void qmp_assert_error(JsonNode *r, const char *cls, const char *desc)
{
    const char *got_cls;
    g_autofree char *got = vm_qmp_error_desc(r, &got_cls);

    g_assert_cmpstr(got_cls, ==, cls);
    if (!strstr(got, desc)) {
        g_error("error '%s' does not contain '%s'", got, desc);
    }
    json_node_unref(r);
}

void qc_check_greeting(QConn *c)
{
    JsonNode *g = qc_recv(c, 30000);
    JsonNode *caps;

    g_assert_nonnull(g);
    g_assert_cmpint(json_get_int(g, "QMP.version.qemu.major"), >=, 0);
    g_assert_cmpint(json_get_int(g, "QMP.version.qemu.minor"), >=, 0);
    g_assert_cmpint(json_get_int(g, "QMP.version.qemu.micro"), >=, 0);
    json_get_str(g, "QMP.version.package");
    caps = json_object_get_member(json_object_get_object_member(json_node_get_object(g), "QMP"),
                                  "capabilities");
    g_assert_true(JSON_NODE_HOLDS_ARRAY(caps));
    g_assert_cmpuint(json_array_get_length(json_node_get_array(caps)), ==, 0);
    json_node_unref(g);
}

void qc_negotiate(QConn *c)
{
    qc_check_greeting(c);
    qc_cmd_ok(c, "{'execute': 'qmp_capabilities'}");
}

/* ---- HMP ---- */

/* Reads until the buffer ends with the "(qemu) " prompt; returns and consumes all of it. */
char *qc_hmp_read_prompt(QConn *c, int timeout_s)
{
    gint64 end = deadline(timeout_s);
    char *text;

    while (!g_str_has_suffix(c->in->str, "(qemu) ")) {
        if (g_get_monotonic_time() > end) {
            g_error("no HMP prompt; got so far: '%.300s'", c->in->str);
        }
        if (!qc_read_some(c, 50)) {
            g_error("HMP connection closed; got so far: '%.300s'", c->in->str);
        }
    }
    g_string_truncate(c->in, c->in->len - strlen("(qemu) "));
    text = g_strdup(c->in->str);
    g_string_truncate(c->in, 0);
    return text;
}

/* "\r\n" -> "\n" in place. */
static void crlf_to_lf(char *s)
{
    char *w = s;

    for (char *r = s; *r; r++) {
        if (!(r[0] == '\r' && r[1] == '\n')) {
            *w++ = *r;
        }
    }
    *w = 0;
}

char *qc_hmp(QConn *c, const char *cmdline)
{
    g_autofree char *text = NULL;
    char *nl, *out;

    qc_send_str(c, cmdline);
    qc_send_str(c, "\r\n");
    text = qc_hmp_read_prompt(c, 60);
    /* The echo (cut at the monitor's line limit) ends at the first CR LF. */
    nl = strstr(text, "\r\n");
    if (!nl || strncmp(text, cmdline, nl - text)) {
        g_error("HMP '%.80s': bad echo in '%.300s'", cmdline, text);
    }
    out = g_strdup(nl + 2);
    crlf_to_lf(out);
    return out;
}

void qc_assert_hmp(QConn *c, const char *cmdline, const char *want)
{
    g_autofree char *out = qc_hmp(c, cmdline);

    if (strcmp(out, want)) {
        g_error("HMP '%.60s': got '%s', want '%s'", cmdline, out, want);
    }
}

void qc_assert_hmp_has(QConn *c, const char *cmdline, const char *want)
{
    g_autofree char *out = qc_hmp(c, cmdline);

    if (!strstr(out, want)) {
        g_error("HMP '%.60s': '%s' lacks '%s'", cmdline, out, want);
    }
}

char *qc_hmp_banner(QConn *c)
{
    char *text = qc_hmp_read_prompt(c, 30);

    crlf_to_lf(text);
    return text;
}

/* ---- The guest ---- */

char *vmtest_sock_path(const char *what)
{
    return g_strdup_printf("%s/%s-%u.sock", vmtest_tmpdir(), what, g_random_int());
}

int64_t vm_last_pass(VM *vm)
{
    for (guint i = vm->serial_lines->len; i-- > 0;) {
        const char *l = g_ptr_array_index(vm->serial_lines, i);
        if (g_str_has_prefix(l, "PASS")) {
            return line_get_int(l, "n");
        }
    }
    return 0;
}

/* The verify guest is still passing: a PASS newer than any seen so far, no FAIL. */
void vm_assert_progress(VM *vm)
{
    int64_t before;
    const char *l;

    vm_pump(vm, 0);
    before = vm_last_pass(vm);
    vm->serial_read_pos = vm->serial_lines->len;
    do {
        l = vm_wait_line(vm, "PASS", 30);
    } while (line_get_int(l, "n") <= before);
    g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);
}

void vm_wait_line_containing(VM *vm, const char *what, int timeout_s)
{
    gint64 end = deadline(timeout_s);

    for (;;) {
        while (vm->serial_read_pos < vm->serial_lines->len) {
            if (strstr(g_ptr_array_index(vm->serial_lines, vm->serial_read_pos++), what)) {
                return;
            }
        }
        if (g_get_monotonic_time() > end || vm->exited) {
            g_error("[%s] no serial line containing '%s' within %d s", vm->name, what, timeout_s);
        }
        vm_pump(vm, 100);
    }
}

guint vm_count_lines_containing(VM *vm, const char *what)
{
    guint n = 0;

    for (guint i = 0; i < vm->serial_lines->len; i++) {
        n += strstr(g_ptr_array_index(vm->serial_lines, i), what) != NULL;
    }
    return n;
}

void vm_assert_status(VM *vm, const char *want, bool running)
{
    JsonNode *r = vm_qmp_ok(vm, "{'execute': 'query-status'}");

    g_assert_cmpstr(json_get_str(r, "status"), ==, want);
    g_assert_true(json_node_get_boolean(json_object_get_member(json_node_get_object(r),
                                                               "running")) == running);
    json_node_unref(r);
}

int vmtest_free_tcp_port(void)
{
    struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(in);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int port;

    g_assert_cmpint(bind(fd, (struct sockaddr *)&in, sizeof(in)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&in, &len), ==, 0);
    port = ntohs(in.sin_port);
    close(fd);
    return port;
}
