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
 */
#ifndef SYSTEM_USER_OBJECTS_H
#define SYSTEM_USER_OBJECTS_H

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

#endif
