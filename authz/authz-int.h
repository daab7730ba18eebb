/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to authz/: the object every kind embeds first, the row of hooks
 * each kind fills, and the rule list authz-list and authz-listfile share.
 */
#ifndef AUTHZ_AUTHZ_INT_H
#define AUTHZ_AUTHZ_INT_H

#include <json-glib/json-glib.h>
#include "authz/authz.h"

typedef enum AuthzPolicy {
    AUTHZ_POLICY_DENY,
    AUTHZ_POLICY_ALLOW,
} AuthzPolicy;

typedef enum AuthzFormat {
    AUTHZ_FORMAT_EXACT,
    AUTHZ_FORMAT_GLOB,
} AuthzFormat;

typedef enum AuthzAnswer {
    AUTHZ_DENY,
    AUTHZ_ALLOW,
    AUTHZ_ERROR,                /* could not decide: the error says why */
} AuthzAnswer;

typedef struct AuthzOps {
    /* Any thread, any number at once: the kind keeps its own locking. */
    AuthzAnswer (*check)(Authz *a, const char *identity, Error **errp);
    /* The last reference's holder, any thread: frees the kind's part, not @a itself. */
    void (*finalize)(Authz *a);
} AuthzOps;

/* Immutable after authz_init() but @refs (atomic). */
struct Authz {
    const AuthzOps *ops;
    char *id;
    gint refs;
};

/* @a's common part, with one reference; @a is g_malloc'ed by the kind. */
void authz_init(Authz *a, const AuthzOps *ops, const char *id);

typedef struct AuthzRule {
    char *match;
    AuthzPolicy policy;
    AuthzFormat format;
} AuthzRule;

/* Immutable once made: readers in any thread. */
typedef struct AuthzRules {
    AuthzPolicy policy;         /* when no rule matches */
    guint n;
    AuthzRule *rule;
} AuthzRules;

/*
 * From @o's "policy" and "rules"; with @strict, any other member is an
 * error (a listfile's file), else the caller checks them (object
 * properties). NULL with @errp set.
 */
AuthzRules *authz_rules_from_json(JsonObject *o, bool strict, Error **errp);
AuthzPolicy authz_rules_decide(const AuthzRules *r, const char *identity);
void authz_rules_free(AuthzRules *r);

#endif
