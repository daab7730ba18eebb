/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libvmtest: spawn real qemu-system-x86_64 instances, talk QMP over a unix
 * socket, read the guest's serial lines from a pipe, and wait on lines,
 * events and exit with deadlines (never fixed sleeps). Children are killed
 * when a test aborts.
 */
#ifndef LIBVMTEST_H
#define LIBVMTEST_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct VM {
    GPid pid;
    char *name;                 /* for messages: "src", "dst" */
    char *dir;                  /* private temp directory */
    char *qmp_path;
    int qmp_fd;                 /* -1 if the instance has no QMP */
    int serial_fd;              /* guest serial (stdout of the child) */
    int stderr_fd;
    GString *qmp_in;            /* unparsed QMP bytes */
    GString *serial_in;         /* partial serial line */
    GPtrArray *serial_lines;    /* every complete serial line seen */
    guint serial_read_pos;      /* lines already consumed by vm_wait_line() */
    GString *stderr_text;
    GQueue events;              /* JsonNode* QMP events not yet consumed */
    bool exited;
    int exit_status;            /* WEXITSTATUS, or 128+signal */
    int stdin_fd;               /* write end of the child's stdin, or -1 (/dev/null) */
    /*
     * vm_wait_migration: the last x-progress.percent and total-time polled,
     * to check that the percent never decreases within one migration.
     */
    double progress_percent;
    int64_t progress_total_ms;
} VM;

/* Binary under test (env QTEST_QEMU_BINARY, else the build tree's). */
const char *vmtest_binary(void);
/* The workload firmware (env VMTEST_FIRMWARE, else build/tests/guest/workload.elf). */
const char *vmtest_firmware(void);

/*
 * vmtest_require_kvm: true if /dev/kvm is usable. Otherwise skips the
 * current test loudly, or fails it when VMTEST_FAIL_ON_SKIP=1 (CI).
 */
bool vmtest_require_kvm(void);
/* Same policy for any other missing prerequisite. */
void vmtest_skip(const char *reason);
/*
 * vmtest_require_qemu72: the real QEMU 7.2 the tests compare against (env
 * VMTEST_PEER, else /usr/bin/qemu-system-x86_64), or NULL after skipping the
 * current test as vmtest_skip() does when it is not installed; our own binary
 * under that name ("qemu-mig" in its -version) does not count.
 */
const char *vmtest_require_qemu72(void);
/*
 * scripts/analyze-migration.py -f @file -d @mode @extra: its output (free
 * it); the test fails with the script's stderr if it exits non-zero.
 */
char *vmtest_analyze_stream(const char *file, const char *mode, const char *extra);

/*
 * vm_spawn: start @binary with @args (a space-separated string, may contain
 * %s for the firmware path) plus "-qmp unix:DIR/qmp.sock,server=on,wait=off"
 * when @with_qmp. The child's stdout is the guest serial; stderr is kept.
 */
VM *vm_spawn_binary(const char *name, const char *binary, bool with_qmp, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
#define vm_spawn(name, with_qmp, ...) vm_spawn_binary(name, vmtest_binary(), with_qmp, __VA_ARGS__)
/* Start from an argv vector (no QMP added). */
VM *vm_spawn_argv(const char *name, char **argv);
/* Same, with the child's stdin a pipe whose write end is vm->stdin_fd. */
VM *vm_spawn_argv_stdin(const char *name, char **argv);

/* Connects and negotiates QMP (greeting + qmp_capabilities). */
void vm_qmp_connect(VM *vm);
/* Same, but returns false instead of failing if the VM exits first. */
bool vm_try_qmp_connect(VM *vm);
/* Sends a request and returns its reply object ({"return"} or {"error"}). */
JsonNode *vm_qmp(VM *vm, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Like vm_qmp, but NULL if the connection closes (the VM exited). */
JsonNode *vm_try_qmp(VM *vm, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* vm_qmp that asserts success and returns a copy of the "return" member. */
JsonNode *vm_qmp_ok(VM *vm, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Desc of an error reply; asserts the reply is an error. */
char *vm_qmp_error_desc(JsonNode *reply, const char **cls);
/* Sends @cmd (a whole request) and fails the test unless it errs with @part in its desc. */
void vm_qmp_expect_error(VM *vm, const char *cmd, const char *part);
/* Waits for event @name (consumed from the queue); returns its node. */
JsonNode *vm_wait_event(VM *vm, const char *name, int timeout_s);
/* Runs HMP through human-monitor-command and returns its output. */
char *vm_hmp(VM *vm, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* query-status .status */
char *vm_status(VM *vm);
/* Fails @vm's test if @info's x-progress.percent went back within a migration. */
void vm_check_progress(VM *vm, JsonNode *info);
/* Polls query-migrate until status is one of '|'-separated @want; returns the reply. */
JsonNode *vm_wait_migration(VM *vm, const char *want, int timeout_s);

/*
 * vm_wait_line: the next unconsumed serial line starting with @prefix
 * (earlier non-matching lines are consumed). Fails the test on timeout or
 * if the VM exits first. Returned string is owned by the VM.
 */
const char *vm_wait_line(VM *vm, const char *prefix, int timeout_s);
/* Like vm_wait_line but returns NULL instead of failing. */
const char *vm_try_wait_line(VM *vm, const char *prefix, int timeout_s);
/* Count of all serial lines seen so far that start with @prefix. */
guint vm_count_lines(VM *vm, const char *prefix);
/* Collect output without waiting for anything (drain pipes). */
void vm_pump(VM *vm, int timeout_ms);

/* Waits for the process to exit; returns its status (fails on timeout). */
int vm_wait_exit(VM *vm, int timeout_s);
/* SIGKILL (if still running), reap, free. */
void vm_kill(VM *vm);
void vm_free(VM *vm);

/* key=value from a workload line ("PASS n=3 ms=12"), or -1 / NULL. */
int64_t line_get_int(const char *line, const char *key);
double line_get_double(const char *line, const char *key);

/* Helpers for JSON results. */
const char *json_get_str(JsonNode *obj, const char *path);
int64_t json_get_int(JsonNode *obj, const char *path);
bool json_get_bool(JsonNode *obj, const char *path);
/* A number, integer or not. */
double json_get_double(JsonNode *obj, const char *path);
bool json_has(JsonNode *obj, const char *path);

/* A fresh temporary directory removed at exit. */
const char *vmtest_tmpdir(void);
/* A directory in memory (tmpfs) for guest RAM dumps, else vmtest_tmpdir(). */
const char *vmtest_ramdir(void);
/* Where to dump @size bytes of RAM as @name (tmpfs when it has room); removed at abort. */
char *vmtest_ram_dump_path(const char *name, uint64_t size);
void vmtest_ram_dump_unlink(const char *path);

#endif
