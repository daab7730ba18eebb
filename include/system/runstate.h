/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The VM run state (QEMU's RunState from the schema), its transitions, and
 * requests from any thread (shutdown, reset, stop) that the main loop carries
 * out. All functions that change state need the BQL.
 */
#ifndef SYSTEM_RUNSTATE_H
#define SYSTEM_RUNSTATE_H

#include "qapi/qapi-types.h"

RunState runstate_get(void);
bool runstate_check(RunState state);
void runstate_set(RunState state);
bool runstate_is_running(void);

typedef void VMChangeStateHandler(void *opaque, bool running, RunState state);
typedef struct VMChangeStateEntry VMChangeStateEntry;
VMChangeStateEntry *qemu_add_vm_change_state_handler(VMChangeStateHandler *cb, void *opaque);
void qemu_del_vm_change_state_handler(VMChangeStateEntry *e);

/* Resumes vCPUs, enters RUNNING, emits RESUME. BQL held, not from a vCPU. */
void vm_start(void);
/*
 * vm_stop: pause every vCPU, enter @state and emit STOP (if the VM was
 * running). BQL held, not from a vCPU thread. Returns 0.
 */
int vm_stop(RunState state);
/* Like vm_stop, but also sets @state when the VM is already stopped. */
int vm_stop_force_state(RunState state);

/*
 * The VM clock, in QEMU_CLOCK_VIRTUAL's sense: nanoseconds that advance only
 * while the VM runs (frozen from vm_stop to vm_start). Streams carry it in
 * the "timer" section, and device times in them (the PIT's count_load_time,
 * the LAPIC timer's load time) are on this clock. BQL held.
 */
int64_t vm_clock_ns(void);
/* VM stopped (a destination loading the "timer" section): go on from @ns. */
void vm_clock_set_ns(int64_t ns);

/* Any thread: the main loop acts on these in a bottom half. */
void qemu_system_vmstop_request(RunState state);
void qemu_system_shutdown_request(ShutdownCause cause);
void qemu_system_reset_request(ShutdownCause cause);
/*
 * The monitor's system_reset: the reset (or -no-reboot's shutdown) done
 * before the command returns, as QEMU 7.2 sends RESET before its reply, so
 * that a cont right after it (libvirt's reboot of a -no-shutdown guest in
 * "shutdown") finds the machine reset. BQL held, not from a vCPU.
 */
void qemu_system_reset_now(ShutdownCause cause);
/* Guest-initiated exit via isa-debug-exit: flush output and exit(@status). */
void qemu_system_exit_now(int status) QEMU_NORETURN;

/* Reset handlers run in registration order on system_reset. */
typedef void QEMUResetHandler(void *opaque);
void qemu_register_reset(QEMUResetHandler *fn, void *opaque);
void qemu_system_reset(ShutdownCause cause);

/*
 * The power button (system_powerdown): POWERDOWN, then each handler in
 * registration order (the machine's button, if it has one). BQL held.
 */
void qemu_register_powerdown(QEMUResetHandler *fn, void *opaque);
void qemu_system_powerdown(void);

/*
 * -no-shutdown: a shutdown other than quit or a signal stops the VM
 * ("shutdown") instead of ending the process. -no-reboot: a reset (other
 * than a subsystem's) shuts down instead, with the reset's reason.
 */
void qemu_set_no_shutdown(bool on);
void qemu_set_no_reboot(bool on);

/* Set when the main loop should end; the value is the process exit status. */
bool qemu_shutdown_requested(int *status);

#endif
