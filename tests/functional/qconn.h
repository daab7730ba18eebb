/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qconn: raw clients of a VM's monitor sockets (QMP and HMP) for tests
 * that need every byte under their control, beside the one negotiated QMP
 * connection libvmtest keeps. Every wait has a deadline and pumps the VM.
 */
#ifndef QCONN_H
#define QCONN_H

#include "libvmtest.h"

typedef struct QConn {
    VM *vm;                     /* pumped while we wait */
    int fd;
    GString *in;                /* bytes received, not yet consumed */
    GQueue events;              /* QMP: JsonNode* events seen while waiting for replies */
} QConn;

/* Connects (retrying until the socket exists, 30 s); no bytes are read. */
QConn *qc_connect_unix(VM *vm, const char *path);
QConn *qc_connect_tcp(VM *vm, int port);
void qc_close(QConn *c);
/* Reads what arrives within @timeout_ms into c->in; false at EOF. */
bool qc_read_some(QConn *c, int timeout_ms);
/* Sends all of @data, reading meanwhile so that neither side can block. */
void qc_send(QConn *c, const void *data, size_t len);
void qc_send_str(QConn *c, const char *s);

/* Single quotes outside double-quoted strings become double quotes. */
char *qc_json(const char *s);
/* QMP: the next line as JSON, events included; NULL on timeout or EOF. */
JsonNode *qc_recv(QConn *c, int timeout_ms);
/* QMP: the next reply, queueing events; fails after 60 s. */
JsonNode *qc_reply(QConn *c);
/* QMP: sends @req (qc_json quoting) plus a newline; returns the reply. */
JsonNode *qc_cmd(QConn *c, const char *req);
void qc_cmd_ok(QConn *c, const char *req);
/* QMP: waits for event @name (queued first, then new lines; a reply fails). */
void qc_wait_event(QConn *c, const char *name);
/* QMP: reads the greeting and checks its shape. */
void qc_check_greeting(QConn *c);
/* QMP: greeting + qmp_capabilities. */
void qc_negotiate(QConn *c);
/* Asserts @r is an error of class @cls whose desc contains @desc; frees @r. */
void qmp_assert_error(JsonNode *r, const char *cls, const char *desc);

/* HMP: everything up to the next "(qemu) " prompt, which is consumed too. */
char *qc_hmp_read_prompt(QConn *c, int timeout_s);
/* HMP: the banner before the first prompt, with "\n" line ends. */
char *qc_hmp_banner(QConn *c);
/*
 * HMP: runs one command line and returns its output without the echo,
 * "\r\n" turned into "\n". Checks that the echo is (a prefix of) @cmdline.
 */
char *qc_hmp(QConn *c, const char *cmdline);
/* HMP: the output of @cmdline is exactly @want; else fails the test with both. */
void qc_assert_hmp(QConn *c, const char *cmdline, const char *want);
/* HMP: the output of @cmdline contains @want; else fails the test with both. */
void qc_assert_hmp_has(QConn *c, const char *cmdline, const char *want);

/* A fresh unix socket path in the test's temporary directory. */
char *vmtest_sock_path(const char *what);
/* A TCP port on 127.0.0.1 that was free a moment ago. */
int vmtest_free_tcp_port(void);

/* The verify guest: n of the last PASS line seen, or 0. */
int64_t vm_last_pass(VM *vm);
/* The verify guest is still passing: a PASS newer than any seen so far, no FAIL. */
void vm_assert_progress(VM *vm);
/* Like vm_wait_line, for a line containing @what anywhere (a reset may cut lines short). */
void vm_wait_line_containing(VM *vm, const char *what, int timeout_s);
guint vm_count_lines_containing(VM *vm, const char *what);
/* query-status over the libvmtest connection: status and running. */
void vm_assert_status(VM *vm, const char *want, bool running);

#endif
