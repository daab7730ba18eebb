/* SPDX-License-Identifier: GPL-2.0-or-later */
/* authz-simple: one identity is allowed, compared exactly. Immutable once made. */
#include "qemu/osdep.h"
#include "authz/authz-objects.h"
#include "authz-int.h"

typedef struct AuthzSimple {
    Authz base;
    char *identity;
} AuthzSimple;

static AuthzAnswer simple_check(Authz *a, const char *identity, Error **errp)
{
    AuthzSimple *s = container_of(a, AuthzSimple, base);

    return !strcmp(s->identity, identity) ? AUTHZ_ALLOW : AUTHZ_DENY;
}

static void simple_finalize(Authz *a)
{
    g_free(container_of(a, AuthzSimple, base)->identity);
}

static const AuthzOps simple_ops = {
    .check = simple_check,
    .finalize = simple_finalize,
};

Authz *authz_simple_new(const char *id, const char *identity)
{
    AuthzSimple *s = g_new0(AuthzSimple, 1);

    authz_init(&s->base, &simple_ops, id);
    s->identity = g_strdup(identity);
    return &s->base;
}
