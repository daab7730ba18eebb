/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Authorization: QEMU's authz-simple, authz-list and authz-listfile
 * objects. A TLS server asks whether the peer's identity (its x509
 * distinguished name, or its PSK username) may connect.
 *
 * Thread contract: authz_is_allowed() may run in any thread (TLS
 * handshakes run outside the BQL); an authz-listfile that reloads its file
 * swaps its rules under its own lock. References as for TLSCreds: the
 * registry holds one while the object exists, each user one more.
 */
#ifndef AUTHZ_AUTHZ_H
#define AUTHZ_AUTHZ_H

#include <stdbool.h>
#include "qemu/typedefs.h"

typedef struct Authz Authz;

/* false with @errp set when @identity is denied (or cannot be checked). */
bool authz_is_allowed(Authz *a, const char *identity, Error **errp);
Authz *authz_ref(Authz *a);
void authz_unref(Authz *a);
bool authz_in_use(Authz *a);
const char *authz_id(const Authz *a);

#endif
