/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "slirp" device-state section: libslirp's own state of one user
 * backend (the IP id and the DHCP leases; see net_slirp_state_save()) as
 * a length and that many bytes, the section version being libslirp's
 * state version. hostfwd rules are not in it: each side binds what its
 * own command line says. Saved and loaded with the BQL held, which is
 * what keeps slirp's main-loop callbacks away meanwhile.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "net/slirp.h"

typedef struct NetSlirpMigState {
    NetClientState *nc;         /* the backend; fixed */
    uint32_t len;               /* bytes of @buf in use */
    uint8_t *buf;               /* NET_SLIRP_STATE_MAX bytes, staging only (BQL) */
} NetSlirpMigState;

static bool net_slirp_pre_save(void *opaque, Error **errp)
{
    NetSlirpMigState *m = opaque;
    g_autoptr(GByteArray) state = net_slirp_state_save(m->nc);

    if (state->len > NET_SLIRP_STATE_MAX) {
        error_setg(errp, "slirp state of netdev '%s' is %u bytes, more than the %d a "
                   "section carries", m->nc->name, state->len, NET_SLIRP_STATE_MAX);
        return false;
    }
    memcpy(m->buf, state->data, state->len);
    m->len = state->len;
    return true;
}

/* The loader has checked len against NET_SLIRP_STATE_MAX; slirp checks the bytes. */
static bool net_slirp_post_load(void *opaque, int version_id, Error **errp)
{
    NetSlirpMigState *m = opaque;

    return net_slirp_state_load(m->nc, version_id, m->buf, m->len, errp);
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
        VMSTATE_UINT32(len, NetSlirpMigState),
        VMSTATE_VBUFFER_UINT32(buf, NetSlirpMigState, len, NET_SLIRP_STATE_MAX),
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
    m->buf = g_malloc0(NET_SLIRP_STATE_MAX);
    vmstate_register("slirp", net_slirp_mig_states->len, &vmstate_slirp, m);
    g_ptr_array_add(net_slirp_mig_states, m);
}
