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

/* A reset or powerdown handler and the instance it works on. */
typedef struct HandlerEntry {
    QEMUResetHandler *fn;
    void *opaque;
} HandlerEntry;

/*
 * The machine's run state: one per process. Every field is the BQL's: the
 * functions below assert it or are called with it (the bottom halves run
 * in the main loop, which holds it).
 */
typedef struct RunStateCtl {
    /* BQL: vm_start, vm_stop, runstate_set write; everyone with the BQL reads. */
    RunState state;
    /* BQL: devices add and remove (machine init, hot-unplug); vm_state_notify reads. */
    GList *change_handlers;
    /* BQL: qemu_register_reset appends; qemu_system_reset reads. */
    GList *reset_handlers;
    /* BQL: qemu_register_powerdown appends (machine init); qemu_system_powerdown reads. */
    GList *powerdown_handlers;
    /* BQL: shutdown_bh writes once; main() reads after the main loop returned. */
    bool shutdown_done;
    int shutdown_status;
    /*
     * -no-shutdown and -no-reboot: vl.c writes while parsing; the bottom
     * halves read. As in QEMU 7.2 (observed with its events): -no-reboot
     * turns every reset but a subsystem's into a shutdown with the reset's
     * reason, and -no-shutdown stops the VM on every shutdown but quit and
     * a signal (shutdown_ends_process).
     */
    bool no_shutdown, no_reboot;
    /*
     * BQL: the VM clock. Running, it reads get_clock_ns() + clock_offset;
     * stopped, clock_frozen (what it read at the stop).
     */
    int64_t clock_offset;
    int64_t clock_frozen;
} RunStateCtl;

static RunStateCtl rs = { .state = RUN_STATE_PRELAUNCH };

/* What a request's bottom half gets: the state, and the request's argument. */
typedef struct RunStateRequest {
    RunStateCtl *rs;
    int arg;                    /* a RunState or a ShutdownCause */
} RunStateRequest;

/* Any thread: runs @fn(@arg) in the main loop, with the BQL. */
static void rs_request(RunStateCtl *r, void (*fn)(void *), int arg)
{
    RunStateRequest *req = g_new(RunStateRequest, 1);

    req->rs = r;
    req->arg = arg;
    qemu_bh_schedule_oneshot(fn, req);
}

void qemu_set_no_shutdown(bool on)
{
    rs.no_shutdown = on;
}

void qemu_set_no_reboot(bool on)
{
    rs.no_reboot = on;
}

RunState runstate_get(void)
{
    return rs.state;
}

bool runstate_check(RunState state)
{
    return rs.state == state;
}

void runstate_set(RunState state)
{
    rs.state = state;
}

bool runstate_is_running(void)
{
    return rs.state == RUN_STATE_RUNNING;
}

int64_t vm_clock_ns(void)
{
    return runstate_is_running() ? get_clock_ns() + rs.clock_offset : rs.clock_frozen;
}

void vm_clock_set_ns(int64_t ns)
{
    assert(!runstate_is_running());
    rs.clock_frozen = ns;
}

VMChangeStateEntry *qemu_add_vm_change_state_handler(VMChangeStateHandler *cb, void *opaque)
{
    VMChangeStateEntry *e = g_new0(VMChangeStateEntry, 1);

    e->cb = cb;
    e->opaque = opaque;
    rs.change_handlers = g_list_append(rs.change_handlers, e);
    return e;
}

void qemu_del_vm_change_state_handler(VMChangeStateEntry *e)
{
    rs.change_handlers = g_list_remove(rs.change_handlers, e);
    g_free(e);
}

static bool shutdown_caused_by_guest(ShutdownCause cause)
{
    return cause >= SHUTDOWN_CAUSE_GUEST_SHUTDOWN && cause != SHUTDOWN_CAUSE_SUBSYSTEM_RESET;
}

/* With -no-shutdown, only these end the process; the rest leave it in "shutdown". */
static bool shutdown_ends_process(ShutdownCause cause)
{
    return cause == SHUTDOWN_CAUSE_HOST_QMP_QUIT || cause == SHUTDOWN_CAUSE_HOST_SIGNAL;
}

static void vm_state_notify(RunStateCtl *r, bool running, RunState state)
{
    /* Starting: notify in order; stopping: in reverse, like device teardown. */
    if (running) {
        for (GList *l = r->change_handlers; l; l = l->next) {
            VMChangeStateEntry *e = l->data;
            e->cb(e->opaque, running, state);
        }
    } else {
        for (GList *l = g_list_last(r->change_handlers); l; l = l->prev) {
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
    rs.clock_offset = rs.clock_frozen - get_clock_ns();
    runstate_set(RUN_STATE_RUNNING);
    vm_state_notify(&rs, true, RUN_STATE_RUNNING);
    resume_all_vcpus();
    qapi_event_send_resume();
}

static int do_vm_stop(RunState state, bool send_stop)
{
    assert(bql_locked());
    if (runstate_is_running()) {
        pause_all_vcpus();
        rs.clock_frozen = get_clock_ns() + rs.clock_offset;
        runstate_set(state);
        vm_state_notify(&rs, false, state);
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
    RunStateRequest *req = opaque;
    RunState state = req->arg;

    g_free(req);
    vm_stop(state);
}

void qemu_system_vmstop_request(RunState state)
{
    rs_request(&rs, vmstop_bh, state);
}

static void do_shutdown(RunStateCtl *r, ShutdownCause cause)
{
    if (r->shutdown_done) {
        return;
    }
    if (r->no_shutdown && !shutdown_ends_process(cause)) {
        /*
         * -no-shutdown, like QEMU: the shutdown stops the VM in
         * "shutdown" (SHUTDOWN, then STOP); system_reset makes it
         * runnable again, quit ends it.
         */
        qapi_event_send_shutdown(shutdown_caused_by_guest(cause), cause);
        vm_stop(RUN_STATE_SHUTDOWN);
        runstate_set(RUN_STATE_SHUTDOWN);
        return;
    }
    r->shutdown_done = true;
    r->shutdown_status = 0;
    pause_all_vcpus();
    if (runstate_is_running()) {
        vm_state_notify(r, false, RUN_STATE_SHUTDOWN);
    }
    runstate_set(RUN_STATE_SHUTDOWN);
    qapi_event_send_shutdown(shutdown_caused_by_guest(cause), cause);
    qemu_main_loop_quit();
}

static void shutdown_bh(void *opaque)
{
    RunStateRequest *req = opaque;
    RunStateCtl *r = req->rs;
    ShutdownCause cause = req->arg;

    g_free(req);
    do_shutdown(r, cause);
}

void qemu_system_shutdown_request(ShutdownCause cause)
{
    rs_request(&rs, shutdown_bh, cause);
}

void qemu_register_reset(QEMUResetHandler *fn, void *opaque)
{
    HandlerEntry *e = g_new0(HandlerEntry, 1);

    e->fn = fn;
    e->opaque = opaque;
    rs.reset_handlers = g_list_append(rs.reset_handlers, e);
}

void qemu_register_powerdown(QEMUResetHandler *fn, void *opaque)
{
    HandlerEntry *e = g_new0(HandlerEntry, 1);

    e->fn = fn;
    e->opaque = opaque;
    rs.powerdown_handlers = g_list_append(rs.powerdown_handlers, e);
}

void qemu_system_powerdown(void)
{
    assert(bql_locked());
    /* QEMU 7.2 sends it whether or not the machine has a button (acpi=off). */
    qapi_event_send_powerdown();
    for (GList *l = rs.powerdown_handlers; l; l = l->next) {
        HandlerEntry *e = l->data;
        e->fn(e->opaque);
    }
}

void qemu_system_reset(ShutdownCause cause)
{
    bool was_running = runstate_is_running();
    RunState st = runstate_get();

    assert(bql_locked());
    pause_all_vcpus();
    for (GList *l = rs.reset_handlers; l; l = l->next) {
        HandlerEntry *e = l->data;
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

/* A reset, or with -no-reboot a shutdown. BQL, not from a vCPU. */
static void do_reset(RunStateCtl *r, ShutdownCause cause)
{
    if (r->no_reboot && cause != SHUTDOWN_CAUSE_SUBSYSTEM_RESET) {
        /* -no-reboot: the reset is a shutdown, for the guest's and system_reset alike. */
        do_shutdown(r, cause);
        return;
    }
    qemu_system_reset(cause);
}

static void reset_bh(void *opaque)
{
    RunStateRequest *req = opaque;
    RunStateCtl *r = req->rs;
    ShutdownCause cause = req->arg;

    g_free(req);
    do_reset(r, cause);
}

void qemu_system_reset_request(ShutdownCause cause)
{
    rs_request(&rs, reset_bh, cause);
}

void qemu_system_reset_now(ShutdownCause cause)
{
    assert(bql_locked());
    do_reset(&rs, cause);
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
        *status = rs.shutdown_status;
    }
    return rs.shutdown_done;
}
