/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "globalstate" section: the source's run state at the switchover, so
 * a destination resumes a running guest and leaves a paused one paused.
 * The name is checked against the RunState enum before it is believed.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "system/runstate.h"
#include "global-state.h"

typedef struct GlobalState {
    uint32_t size;
    uint8_t runstate[100];
    bool received;
    RunState state;
} GlobalState;

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

static bool global_state_post_load(void *opaque, int version_id, Error **errp)
{
    RunState st;

    if (global_state.size == 0 || global_state.size > sizeof(global_state.runstate) ||
        global_state.runstate[global_state.size - 1] != '\0') {
        error_setg(errp, "invalid run state (size %u)", global_state.size);
        return false;
    }
    if (!RunState_parse((const char *)global_state.runstate, &st)) {
        error_setg(errp, "unknown run state '%.*s'", (int)sizeof(global_state.runstate) - 1,
                   (const char *)global_state.runstate);
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
