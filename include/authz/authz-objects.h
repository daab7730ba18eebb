/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Making the authorization objects (include/authz/authz.h) the object
 * registry creates by name (system/control/user-objects.c):
 *
 *   Authz *a = authz_list_new("auth0", props, errp);   // one reference
 *   ...registry keeps it; authz_unref(a) on object-del.
 *
 * authz-list's properties and authz-listfile's file share one JSON shape,
 * QEMU's AuthZListProperties:
 *   { "policy": "deny"|"allow",            (default: deny)
 *     "rules": [ { "match": STR, "policy": "deny"|"allow",
 *                  "format": "exact"|"glob" } ] }      (format default exact)
 * Rules are tried in order; the first whose match fits the identity gives
 * the answer, "policy" when none does. Errors are worded as QEMU's visitors
 * word them ("Parameter 'rules[0].match' is missing").
 *
 * Main thread (the registry's): the makers. Any thread: what authz.h says.
 */
#ifndef AUTHZ_AUTHZ_OBJECTS_H
#define AUTHZ_AUTHZ_OBJECTS_H

#include <json-glib/json-glib.h>
#include "authz/authz.h"

/* authz-simple: allows @identity, nothing else. */
Authz *authz_simple_new(const char *id, const char *identity);
/*
 * authz-list from @props' "policy" and "rules" members (other members are
 * the caller's: it checks them). NULL with @errp set on a bad value.
 */
Authz *authz_list_new(const char *id, JsonObject *props, Error **errp);
/*
 * authz-listfile: the rules are in @filename, read now (an unreadable or
 * bad file is an error); with @refresh, a check that finds the file
 * changed (another inode, size, mtime or ctime) reads it again first, and
 * while a new version is bad, every check fails with why.
 */
Authz *authz_listfile_new(const char *id, const char *filename, bool refresh, Error **errp);

#endif
