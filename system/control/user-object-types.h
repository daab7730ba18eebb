/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to system/control/: the object types the registry
 * (user-objects.c) makes, one row each. The registry calls down into the
 * rows; a row that needs another object (tls-creds-x509's passwordid)
 * asks through the lookup it is handed, never calls up. Main thread.
 */
#ifndef SYSTEM_CONTROL_USER_OBJECT_TYPES_H
#define SYSTEM_CONTROL_USER_OBJECT_TYPES_H

#include "user-object-props.h"

/* What a made object is: the registry's lookups ask by class. */
typedef enum UserObjectClass {
    UO_CLASS_SECRET,
    UO_CLASS_TLS_CREDS,
    UO_CLASS_AUTHZ,
} UserObjectClass;

/* The text of secret @id (g_free), or NULL with QEMU's words; @opaque is the registry's. */
typedef char *UOSecretLookup(void *opaque, const char *id, Error **errp);

typedef struct UserObjectType {
    const char *name;                   /* qom-type */
    UserObjectClass cls;
    /* The object (a UserSecret *, TLSCreds *, Authz *) with one reference, or NULL. */
    void *(*create)(const char *id, const UOProps *p, UOSecretLookup *secret, void *opaque,
                    Error **errp);
} UserObjectType;

/* The row for @name, or NULL. */
const UserObjectType *user_object_type_find(const char *name);
/* Whether something besides the registry holds @obj, and dropping the registry's reference. */
bool user_object_in_use(UserObjectClass cls, void *obj);
void user_object_release(UserObjectClass cls, void *obj);
/* A secret's bytes (owned by it). */
const GByteArray *user_secret_bytes(void *obj);

#endif
