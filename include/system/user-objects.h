/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The objects a user makes by name: -object, QMP object-add / object-del,
 * HMP object_add / object_del (QEMU's /objects container). Types: secret,
 * tls-creds-x509, tls-creds-psk, tls-creds-anon, authz-simple, authz-list,
 * authz-listfile (memory backends stay with the machine: they are made
 * before it and never deleted).
 *
 * Main thread (BQL) only: the lookups below hand out references, which
 * their holders drop from any thread.
 *
 * How the rest of the binary uses it:
 *   qemu_init():   user_objects_init() before parsing the command line, then
 *                  each -object that is not a memory backend is made at once,
 *                  in command-line order (a secret before the credentials
 *                  that name it), by user_objects_add_text() or _add_json();
 *   the monitors:  QMP object-add / object-del (qapi/qom.json), HMP
 *                  object_add / object_del (the same functions);
 *   migration:     user_objects_tls_creds() / user_objects_authz() when a
 *                  channel needs them, dropping the reference when done.
 */
#ifndef SYSTEM_USER_OBJECTS_H
#define SYSTEM_USER_OBJECTS_H

#include <json-glib/json-glib.h>
#include "qemu/typedefs.h"
#include "crypto/tls-creds.h"
#include "authz/authz.h"

/*
 * A new reference to tls-creds object @id, or NULL with @errp set in
 * QEMU's words (no such object; not TLS credentials).
 */
TLSCreds *user_objects_tls_creds(const char *id, Error **errp);
/* A new reference to authz object @id, or NULL with @errp set. */
Authz *user_objects_authz(const char *id, Error **errp);

/* Where an object's description comes from: it sets QEMU's wording of refusals. */
typedef enum UserObjectSource {
    USER_OBJECT_CMDLINE,        /* -object */
    USER_OBJECT_MONITOR,        /* object-add, object_add */
} UserObjectSource;

/* The process's registry, empty; once, before the command line is parsed. */
void user_objects_init(void);
/* Whether -object TYPE is one of the registry's (the others are memory backends). */
bool user_objects_knows_type(const char *type);
/*
 * Makes the object @props describes: "qom-type", "id" and the type's
 * properties, JSON-typed (QMP, -object '{...}').
 */
bool user_objects_add_json(JsonObject *props, UserObjectSource src, Error **errp);
/* The same from "TYPE,id=ID,prop=value,..." (-object, HMP object_add): values are text. */
bool user_objects_add_text(const char *text, UserObjectSource src, Error **errp);
/* Deletes object @id; refused while something holds it (a migration's channel). */
bool user_objects_del(const char *id, Error **errp);

#endif
