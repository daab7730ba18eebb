/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What every authorization object shares: its id, its reference count and
 * the question itself. The kinds (authz-simple.c, authz-list.c,
 * authz-listfile.c) answer allow, deny or "cannot tell"; the words of a
 * denial are here, once.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "authz-int.h"

void authz_init(Authz *a, const AuthzOps *ops, const char *id)
{
    a->ops = ops;
    a->id = g_strdup(id);
    a->refs = 1;
}

bool authz_is_allowed(Authz *a, const char *identity, Error **errp)
{
    AuthzAnswer ans;

    /* A peer without an identity (no certificate) matches no rule, not even "*". */
    if (!identity) {
        error_setg(errp, "Authorization '%s' needs a peer identity, the peer gave none",
                   a->id);
        return false;
    }
    ans = a->ops->check(a, identity, errp);
    if (ans == AUTHZ_DENY) {
        /*
         * QEMU's words: its TLS layer is the one that says them (its authz
         * objects only answer), and the TLS row passes ours on as they are.
         */
        error_setg(errp, "TLS x509 authz check for %s is denied", identity);
    }
    return ans == AUTHZ_ALLOW;
}

Authz *authz_ref(Authz *a)
{
    g_atomic_int_inc(&a->refs);
    return a;
}

void authz_unref(Authz *a)
{
    if (a && g_atomic_int_dec_and_test(&a->refs)) {
        a->ops->finalize(a);
        g_free(a->id);
        g_free(a);
    }
}

/*
 * Only the registry asks, on the main thread, with its own reference: a
 * holder that drops its reference in another thread meanwhile can only
 * turn "in use" into "not in use", never the other way, so a refusal may
 * be stale by one drop but a deletion never frees what someone holds.
 */
bool authz_in_use(Authz *a)
{
    return g_atomic_int_get(&a->refs) > 1;
}

const char *authz_id(const Authz *a)
{
    return a->id;
}
