/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Run-state transitions and the requests (shutdown, reset, stop) that other
 * threads post to the main loop. Everything here runs with the BQL held.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-events.h"
#include "qemu/main-loop.h"
#include "system/runstate.h"
#include "system/cpus.h"

struct VMChangeStateEntry {
    VMChangeStateHandler *cb;
    void *opaque;
};

typedef struct ResetEntry {
    QEMUResetHandler *fn;
    void *opaque;
} ResetEntry;

/* All protected by the BQL. */
static RunState current_run_state = RUN_STATE_PRELAUNCH;
static GList *vm_change_state_handlers;
static GList *reset_handlers;
static bool shutdown_done;
static int shutdown_status;
/* -no-shutdown and -no-reboot; set while parsing the command line. */
static bool no_shutdown, no_reboot;

void qemu_set_no_shutdown(bool on)
{
    no_shutdown = on;
}

void qemu_set_no_reboot(bool on)
{
    no_reboot = on;
}

RunState runstate_get(void)
{
    return current_run_state;
}

bool runstate_check(RunState state)
{
    return current_run_state == state;
}

void runstate_set(RunState state)
{
    current_run_state = state;
}

bool runstate_is_running(void)
{
    return current_run_state == RUN_STATE_RUNNING;
}

VMChangeStateEntry *qemu_add_vm_change_state_handler(VMChangeStateHandler *cb, void *opaque)
{
    VMChangeStateEntry *e = g_new0(VMChangeStateEntry, 1);

    e->cb = cb;
    e->opaque = opaque;
    vm_change_state_handlers = g_list_append(vm_change_state_handlers, e);
    return e;
}

void qemu_del_vm_change_state_handler(VMChangeStateEntry *e)
{
    vm_change_state_handlers = g_list_remove(vm_change_state_handlers, e);
    g_free(e);
}

static bool shutdown_caused_by_guest(ShutdownCause cause)
{
    return cause >= SHUTDOWN_CAUSE_GUEST_SHUTDOWN && cause != SHUTDOWN_CAUSE_SUBSYSTEM_RESET;
}

static void vm_state_notify(bool running, RunState state)
{
    /* Starting: notify in order; stopping: in reverse, like device teardown. */
    if (running) {
        for (GList *l = vm_change_state_handlers; l; l = l->next) {
            VMChangeStateEntry *e = l->data;
            e->cb(e->opaque, running, state);
        }
    } else {
        for (GList *l = g_list_last(vm_change_state_handlers); l; l = l->prev) {
            VMChangeStateEntry *e = l->data;
            e->cb(e->opaque, running, state);
        }
    }
}

void vm_start(void)
{
    assert(bql_locked());
    if (runstate_is_running()) {
        return;
    }
    runstate_set(RUN_STATE_RUNNING);
    vm_state_notify(true, RUN_STATE_RUNNING);
    resume_all_vcpus();
    qapi_event_send_resume();
}

static int do_vm_stop(RunState state, bool send_stop)
{
    assert(bql_locked());
    if (runstate_is_running()) {
        pause_all_vcpus();
        runstate_set(state);
        vm_state_notify(false, state);
        if (send_stop) {
            qapi_event_send_stop();
        }
    }
    return 0;
}

int vm_stop(RunState state)
{
    return do_vm_stop(state, true);
}

int vm_stop_force_state(RunState state)
{
    if (runstate_is_running()) {
        return vm_stop(state);
    }
    /* Already stopped: vCPUs may still be running if prelaunch never ran them. */
    pause_all_vcpus();
    runstate_set(state);
    return 0;
}

static void vmstop_bh(void *opaque)
{
    vm_stop((RunState)GPOINTER_TO_INT(opaque));
}

void qemu_system_vmstop_request(RunState state)
{
    qemu_bh_schedule_oneshot(vmstop_bh, GINT_TO_POINTER(state));
}

static void shutdown_bh(void *opaque)
{
    ShutdownCause cause = GPOINTER_TO_INT(opaque);

    if (shutdown_done) {
        return;
    }
    if (no_shutdown && shutdown_caused_by_guest(cause)) {
        /*
         * -no-shutdown, like QEMU: the guest's shutdown stops the VM in
         * "shutdown" (SHUTDOWN, then STOP); system_reset makes it
         * runnable again, quit ends it.
         */
        qapi_event_send_shutdown(true, cause);
        vm_stop(RUN_STATE_SHUTDOWN);
        runstate_set(RUN_STATE_SHUTDOWN);
        return;
    }
    shutdown_done = true;
    shutdown_status = 0;
    pause_all_vcpus();
    if (runstate_is_running()) {
        vm_state_notify(false, RUN_STATE_SHUTDOWN);
    }
    runstate_set(RUN_STATE_SHUTDOWN);
    qapi_event_send_shutdown(shutdown_caused_by_guest(cause), cause);
    qemu_main_loop_quit();
}

void qemu_system_shutdown_request(ShutdownCause cause)
{
    qemu_bh_schedule_oneshot(shutdown_bh, GINT_TO_POINTER(cause));
}

void qemu_register_reset(QEMUResetHandler *fn, void *opaque)
{
    ResetEntry *e = g_new0(ResetEntry, 1);

    e->fn = fn;
    e->opaque = opaque;
    reset_handlers = g_list_append(reset_handlers, e);
}

void qemu_system_reset(ShutdownCause cause)
{
    bool was_running = runstate_is_running();
    RunState st = runstate_get();

    assert(bql_locked());
    pause_all_vcpus();
    for (GList *l = reset_handlers; l; l = l->next) {
        ResetEntry *e = l->data;
        e->fn(e->opaque);
    }
    if (cause != SHUTDOWN_CAUSE_NONE) {
        qapi_event_send_reset(shutdown_caused_by_guest(cause), cause);
    }
    if (was_running) {
        resume_all_vcpus();
    } else if (st == RUN_STATE_SHUTDOWN || st == RUN_STATE_GUEST_PANICKED ||
               st == RUN_STATE_INTERNAL_ERROR) {
        /* Reset is what these states wait for: the guest may be continued now. */
        runstate_set(RUN_STATE_PAUSED);
    }
}

static void reset_bh(void *opaque)
{
    ShutdownCause cause = GPOINTER_TO_INT(opaque);

    if (no_reboot && shutdown_caused_by_guest(cause)) {
        /* -no-reboot: the guest's reset is a shutdown. */
        shutdown_bh(opaque);
        return;
    }
    qemu_system_reset(cause);
}

void qemu_system_reset_request(ShutdownCause cause)
{
    qemu_bh_schedule_oneshot(reset_bh, GINT_TO_POINTER(cause));
}

void qemu_system_exit_now(int status)
{
    fflush(stdout);
    fflush(stderr);
    exit(status);
}

bool qemu_shutdown_requested(int *status)
{
    if (status) {
        *status = shutdown_status;
    }
    return shutdown_done;
}
