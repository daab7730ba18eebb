/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "globalstate" section: the source's run state at the switchover, so
 * a destination resumes a running guest and leaves a paused one paused.
 * The name is checked against the RunState enum, and must be a state a
 * source can migrate from, before it is believed.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "system/runstate.h"
#include "global-state.h"

/*
 * The "globalstate" section: the run state the source stored at the
 * switchover (global_state_store, mig/src with the BQL) and the one a
 * destination received (mig/dst with the BQL, while devices load); read
 * with the BQL. One per process.
 */
typedef struct GlobalState {
    uint32_t size;
    uint8_t runstate[100];
    bool received;
    RunState state;
} GlobalState;

/* The process's one (see above). */
static GlobalState global_state;

void global_state_store(void)
{
    const char *name = RunState_str(runstate_get());

    memset(global_state.runstate, 0, sizeof(global_state.runstate));
    g_strlcpy((char *)global_state.runstate, name, sizeof(global_state.runstate));
    global_state.size = strlen(name) + 1;
}

static bool global_state_pre_save(void *opaque, Error **errp)
{
    if (!global_state.size) {
        global_state_store();
    }
    return true;
}

static bool global_state_pre_load(void *opaque, Error **errp)
{
    global_state.received = false;
    return true;
}

/*
 * The states a source stores before it stops the VM, which the destination
 * then takes on. Anything else would leave the destination in a state that
 * nothing ever leaves: "inmigrate", say, answers cont with success and
 * never runs the guest (QEMU 7.2 takes any state here and has that hole).
 */
static bool global_state_source_may_end_in(RunState st)
{
    switch (st) {
    case RUN_STATE_RUNNING:
    case RUN_STATE_PAUSED:
    case RUN_STATE_PRELAUNCH:
    case RUN_STATE_POSTMIGRATE:
    case RUN_STATE_FINISH_MIGRATE:
    case RUN_STATE_SUSPENDED:
    case RUN_STATE_GUEST_PANICKED:
    case RUN_STATE_IO_ERROR:
    case RUN_STATE_WATCHDOG:
    case RUN_STATE_DEBUG:
        return true;
    default:
        return false;   /* inmigrate, shutdown, internal-error, colo, save-vm, restore-vm */
    }
}

static bool global_state_post_load(void *opaque, int version_id, Error **errp)
{
    RunState st;

    if (global_state.size == 0 || global_state.size > sizeof(global_state.runstate) ||
        global_state.runstate[global_state.size - 1] != '\0') {
        error_setg(errp, "invalid run state (size %u)", global_state.size);
        return false;
    }
    if (!RunState_parse((const char *)global_state.runstate, &st)) {
        g_autofree char *safe = g_strescape((const char *)global_state.runstate, NULL);

        error_setg(errp, "unknown run state '%s'", safe);
        return false;
    }
    if (!global_state_source_may_end_in(st)) {
        error_setg(errp, "run state '%s' in the stream is not one a source can migrate from",
                   RunState_str(st));
        return false;
    }
    global_state.state = st;
    global_state.received = true;
    return true;
}

static const VMStateField global_state_fields[] = {
    VMSTATE_UINT32(size, GlobalState),
    VMSTATE_BUFFER(runstate, GlobalState),
    VMSTATE_END_OF_LIST(),
};

static const VMStateDescription vmstate_globalstate = {
    .name = "globalstate",
    .size = sizeof(GlobalState),
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = global_state_pre_save,
    .pre_load = global_state_pre_load,
    .post_load = global_state_post_load,
    .fields = global_state_fields,
};

void global_state_init(void)
{
    vmstate_register("globalstate", 0, &vmstate_globalstate, &global_state);
}

int global_state_get_runstate(void)
{
    return global_state.received ? (int)global_state.state : -1;
}
