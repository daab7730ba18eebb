/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the `channels` argument of migrate and
 * migrate-incoming (QEMU 8.2's spelling, also -incoming's JSON form),
 * turned into the URI the `uri` argument would have given, so both
 * spellings take one code path:
 *
 *     g_autofree char *cpr = NULL;
 *     g_autofree char *uri = migration_channels_uri(uri, channels, &cpr, errp);
 *     if (!uri) return false;     // @errp says why, in QEMU's words
 *
 * A "cpr" channel (cpr-transfer's, a unix socket) comes back apart. Pure:
 * any thread, no state.
 */
#ifndef MIGRATION_CHANNEL_LIST_H
#define MIGRATION_CHANNEL_LIST_H

#include "qapi/qapi-types.h"

/*
 * Exactly one of @uri and @channels (NULL: not given); returns the main
 * channel's URI (g_free it), or NULL with @errp set. @cpr_uri (NULL: the
 * caller takes no cpr channel, and one is refused) gets the cpr channel's
 * URI, "unix:PATH", or NULL if there is none.
 */
char *migration_channels_uri(const char *uri, const MigrationChannelList *channels,
                             char **cpr_uri, Error **errp);
/*
 * -incoming's JSON form, one MigrationChannel object as text; returns the
 * URI and whether it is a cpr channel, or NULL with @errp set.
 */
char *migration_channel_json_uri(const char *json, bool *is_cpr, Error **errp);

#endif
