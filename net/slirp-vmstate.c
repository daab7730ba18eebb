/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "slirp" device-state section, as QEMU sends it: libslirp's own
 * state of one user backend, its bytes alone (no length: libslirp's format
 * delimits itself), the section version being libslirp's state version.
 * The state is one record per guestfwd socket, a zero byte, the IP id
 * (be16) and the DHCP leases (16 x be16 + MAC): 131 bytes at version 4
 * (QEMU 7.2's and 10.0's "data" buffer). We never have guestfwd sockets,
 * so ours is always that long, and a QEMU stream with one (its first byte
 * not zero) is refused by net_slirp_state_load(). hostfwd rules are not in
 * it: each side binds what its own command line says. Saved and loaded
 * with the BQL held, which keeps slirp's main-loop callbacks away.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "net/slirp.h"

/* libslirp's state without guestfwd sockets: 1 + 2 + 16 * 8 (version 4). */
#define NET_SLIRP_STATE_LEN 131

typedef struct NetSlirpMigState {
    NetClientState *nc;         /* the backend; fixed */
    uint8_t data[NET_SLIRP_STATE_LEN];  /* staging only (BQL) */
} NetSlirpMigState;

static bool net_slirp_pre_save(void *opaque, Error **errp)
{
    NetSlirpMigState *m = opaque;
    g_autoptr(GByteArray) state = net_slirp_state_save(m->nc);

    /* Another length would be another libslirp format than QEMU's "data". */
    if (state->len != NET_SLIRP_STATE_LEN) {
        error_setg(errp, "slirp state of netdev '%s' is %u bytes, not the %d of libslirp "
                   "state version 4", m->nc->name, state->len, NET_SLIRP_STATE_LEN);
        return false;
    }
    memcpy(m->data, state->data, state->len);
    return true;
}

/* slirp checks the bytes, and that it read all of them and no more. */
static bool net_slirp_post_load(void *opaque, int version_id, Error **errp)
{
    NetSlirpMigState *m = opaque;

    return net_slirp_state_load(m->nc, version_id, m->data, sizeof(m->data), errp);
}

/*
 * Not const: the version is libslirp's, known only at run time, and it is
 * what the section header carries (QEMU registers its "slirp" section the
 * same way). Written once, by the first registration, before any stream.
 */
static VMStateDescription vmstate_slirp = {
    .name = "slirp",
    .size = sizeof(NetSlirpMigState),
    .minimum_version_id = 1,
    .pre_save = net_slirp_pre_save,
    .post_load = net_slirp_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_BUFFER(data, NetSlirpMigState),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * Every section's staging, in registration order (main thread, at
 * creation). Sections cannot be unregistered, so these live as long as
 * the process; the index is the instance id.
 */
static GPtrArray *net_slirp_mig_states;

void net_slirp_vmstate_register(NetClientState *nc)
{
    NetSlirpMigState *m = g_new0(NetSlirpMigState, 1);

    if (!net_slirp_mig_states) {
        net_slirp_mig_states = g_ptr_array_new();
    }
    vmstate_slirp.version_id = net_slirp_state_version();
    m->nc = nc;
    vmstate_register("slirp", net_slirp_mig_states->len, &vmstate_slirp, m);
    g_ptr_array_add(net_slirp_mig_states, m);
}
