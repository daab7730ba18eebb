/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * migrate's and migrate-incoming's `channels` (see channel-list.h). QEMU's
 * MigrationAddress is a union on `transport` (and a socket's on `type`);
 * our schema flattens it into one struct of optional members, so the
 * members each variant has, and those it must have, are checked here, with
 * the messages QEMU's own decoder gives ("Parameter '...' is unexpected").
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-visit.h"
#include "channel-list.h"

/* The optional members of MigrationAddress, and whether @a has each. */
typedef struct AddrMember {
    const char *name;
    bool present;
} AddrMember;

enum {
    M_TYPE, M_HOST, M_PORT, M_NUMERIC, M_TO, M_IPV4, M_IPV6, M_KEEP_ALIVE, M_MPTCP, M_PATH,
    M_ABSTRACT, M_TIGHT, M_CID, M_STR, M_ARGS, M_FILENAME, M_OFFSET, M__MAX
};

#define BIT(m) (1u << (m))
#define INET_MEMBERS (BIT(M_HOST) | BIT(M_PORT) | BIT(M_NUMERIC) | BIT(M_TO) | BIT(M_IPV4) | \
                      BIT(M_IPV6) | BIT(M_KEEP_ALIVE) | BIT(M_MPTCP))

static void addr_members(const MigrationAddress *a, AddrMember *m)
{
    const AddrMember all[M__MAX] = {
        [M_TYPE] = { "type", a->has_type },
        [M_HOST] = { "host", a->host != NULL },
        [M_PORT] = { "port", a->port != NULL },
        [M_NUMERIC] = { "numeric", a->has_numeric },
        [M_TO] = { "to", a->has_to },
        [M_IPV4] = { "ipv4", a->has_ipv4 },
        [M_IPV6] = { "ipv6", a->has_ipv6 },
        [M_KEEP_ALIVE] = { "keep-alive", a->has_keep_alive },
        [M_MPTCP] = { "mptcp", a->has_mptcp },
        [M_PATH] = { "path", a->path != NULL },
        [M_ABSTRACT] = { "abstract", a->has_abstract },
        [M_TIGHT] = { "tight", a->has_tight },
        [M_CID] = { "cid", a->cid != NULL },
        [M_STR] = { "str", a->str != NULL },
        [M_ARGS] = { "args", a->args != NULL },
        [M_FILENAME] = { "filename", a->filename != NULL },
        [M_OFFSET] = { "offset", a->has_offset },
    };

    memcpy(m, all, sizeof(all));
}

/* Every member of @a in @allowed and none other; every one of @required there. */
static bool addr_check_members(const MigrationAddress *a, const char *path, unsigned allowed,
                               unsigned required, Error **errp)
{
    AddrMember m[M__MAX];

    addr_members(a, m);
    for (int i = 0; i < M__MAX; i++) {
        if (m[i].present && !(allowed & BIT(i))) {
            error_setg(errp, "Parameter '%s.%s' is unexpected", path, m[i].name);
            return false;
        }
    }
    for (int i = 0; i < M__MAX; i++) {
        if (!m[i].present && (required & BIT(i))) {
            error_setg(errp, "Parameter '%s.%s' is missing", path, m[i].name);
            return false;
        }
    }
    return true;
}

/* Options QEMU has whose effect this tree does not implement: refused, not ignored. */
static bool addr_check_unsupported(const MigrationAddress *a, const char *path, Error **errp)
{
    const struct {
        bool set;
        const char *name;
    } opts[] = {
        { a->has_to, "to" }, { a->has_ipv4 && a->ipv4, "ipv4" }, { a->has_ipv6 && a->ipv6, "ipv6" },
        { a->has_keep_alive && a->keep_alive, "keep-alive" }, { a->has_mptcp && a->mptcp, "mptcp" },
        { a->has_abstract && a->abstract, "abstract" }, { a->has_tight && a->tight, "tight" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(opts); i++) {
        if (opts[i].set) {
            error_setg(errp, "'%s.%s' is not supported by this build", path, opts[i].name);
            return false;
        }
    }
    return true;
}

static char *inet_uri(const char *scheme, const MigrationAddress *a)
{
    /* An IPv6 literal goes in brackets, as in a tcp: URI. */
    return strchr(a->host, ':') ? g_strdup_printf("%s:[%s]:%s", scheme, a->host, a->port)
                                : g_strdup_printf("%s:%s:%s", scheme, a->host, a->port);
}

static char *socket_uri(const MigrationAddress *a, const char *path, Error **errp)
{
    if (!a->has_type) {
        error_setg(errp, "Parameter '%s.type' is missing", path);
        return NULL;
    }
    switch (a->type) {
    case MIGRATION_SOCKET_TYPE_INET:
        if (!addr_check_members(a, path, BIT(M_TYPE) | INET_MEMBERS, BIT(M_HOST) | BIT(M_PORT),
                                errp)) {
            return NULL;
        }
        return inet_uri("tcp", a);
    case MIGRATION_SOCKET_TYPE_UNIX:
        if (!addr_check_members(a, path, BIT(M_TYPE) | BIT(M_PATH) | BIT(M_ABSTRACT) |
                                BIT(M_TIGHT), BIT(M_PATH), errp)) {
            return NULL;
        }
        return g_strdup_printf("unix:%s", a->path);
    case MIGRATION_SOCKET_TYPE_VSOCK:
        if (!addr_check_members(a, path, BIT(M_TYPE) | BIT(M_CID) | BIT(M_PORT),
                                BIT(M_CID) | BIT(M_PORT), errp)) {
            return NULL;
        }
        error_setg(errp, "vsock migration is not supported by this build");
        return NULL;
    case MIGRATION_SOCKET_TYPE_FD:
        if (!addr_check_members(a, path, BIT(M_TYPE) | BIT(M_STR), BIT(M_STR), errp)) {
            return NULL;
        }
        return g_strdup_printf("fd:%s", a->str);
    default:
        g_assert_not_reached();
    }
}

/* exec: the program and its arguments, each quoted, for the shell the exec: URI runs. */
static char *exec_uri(const MigrationAddress *a, const char *path, Error **errp)
{
    GString *cmd;

    if (!a->args->value[0]) {
        error_setg(errp, "'%s.args' must start with the program to run", path);
        return NULL;
    }
    cmd = g_string_new("exec:");
    for (const strList *l = a->args; l; l = l->next) {
        g_autofree char *q = g_shell_quote(l->value);

        g_string_append_printf(cmd, "%s%s", l == a->args ? "" : " ", q);
    }
    return g_string_free(cmd, FALSE);
}

static char *address_uri(const MigrationAddress *a, const char *path, Error **errp)
{
    if (!addr_check_unsupported(a, path, errp)) {
        return NULL;
    }
    switch (a->transport) {
    case MIGRATION_ADDRESS_TYPE_SOCKET:
        return socket_uri(a, path, errp);
    case MIGRATION_ADDRESS_TYPE_EXEC:
        if (!addr_check_members(a, path, BIT(M_ARGS), BIT(M_ARGS), errp)) {
            return NULL;
        }
        return exec_uri(a, path, errp);
    case MIGRATION_ADDRESS_TYPE_RDMA:
        if (!addr_check_members(a, path, INET_MEMBERS, BIT(M_HOST) | BIT(M_PORT), errp)) {
            return NULL;
        }
        error_setg(errp, "RDMA migration is not supported by this build");
        return NULL;
    case MIGRATION_ADDRESS_TYPE_FILE:
        if (!addr_check_members(a, path, BIT(M_FILENAME) | BIT(M_OFFSET),
                                BIT(M_FILENAME) | BIT(M_OFFSET), errp)) {
            return NULL;
        }
        if (a->offset < 0) {
            error_setg(errp, "Parameter '%s.offset' expects uint64", path);
            return NULL;
        }
        /* The file: URI takes the last ",offset=" as the offset, so the name may hold commas. */
        return g_strdup_printf("file:%s,offset=%" PRId64, a->filename, a->offset);
    default:
        g_assert_not_reached();
    }
}

/* @c's URI; @path names it in messages ("channels[0]", or "" for -incoming's object). */
static char *channel_uri(const MigrationChannel *c, const char *path, Error **errp)
{
    g_autofree char *addr_path = g_strdup_printf("%s%saddr", path, *path ? "." : "");

    /* The cpr state's fds cross only a unix socket (SCM_RIGHTS); QEMU's words. */
    if (c->channel_type == MIGRATION_CHANNEL_TYPE_CPR &&
        (c->addr->transport != MIGRATION_ADDRESS_TYPE_SOCKET || !c->addr->has_type ||
         c->addr->type != MIGRATION_SOCKET_TYPE_UNIX)) {
        error_setg(errp, "bad cpr channel address; must be unix");
        return NULL;
    }
    return address_uri(c->addr, addr_path, errp);
}

char *migration_channels_uri(const char *uri, const MigrationChannelList *channels,
                             char **cpr_uri, Error **errp)
{
    const MigrationChannel *main_ch = NULL, *cpr_ch = NULL;
    int main_i = 0, cpr_i = 0, i = 0;
    g_autofree char *main_path = NULL, *cpr_path = NULL, *cpr = NULL;
    char *main_uri;

    if (cpr_uri) {
        *cpr_uri = NULL;
    }
    if (!uri == !channels) {
        error_setg(errp, "need either 'uri' or 'channels' argument");
        return NULL;
    }
    if (uri) {
        return g_strdup(uri);
    }
    for (const MigrationChannelList *l = channels; l; l = l->next, i++) {
        bool is_cpr = l->value->channel_type == MIGRATION_CHANNEL_TYPE_CPR;

        if (is_cpr ? cpr_ch != NULL : main_ch != NULL) {
            error_setg(errp, "Channel list has more than one %s entry", is_cpr ? "cpr" : "main");
            return NULL;
        }
        if (is_cpr) {
            cpr_ch = l->value;
            cpr_i = i;
        } else {
            main_ch = l->value;
            main_i = i;
        }
    }
    if (!main_ch) {
        error_setg(errp, "Channel list has no main entry");
        return NULL;
    }
    if (cpr_ch && !cpr_uri) {
        error_setg(errp, "a 'cpr' channel is given to the new process's -incoming, not here");
        return NULL;
    }
    if (cpr_ch) {
        cpr_path = g_strdup_printf("channels[%d]", cpr_i);
        cpr = channel_uri(cpr_ch, cpr_path, errp);
        if (!cpr) {
            return NULL;
        }
    }
    main_path = g_strdup_printf("channels[%d]", main_i);
    main_uri = channel_uri(main_ch, main_path, errp);
    if (main_uri && cpr_uri) {
        *cpr_uri = g_steal_pointer(&cpr);
    }
    return main_uri;
}

char *migration_channel_json_uri(const char *json, bool *is_cpr, Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    g_autoptr(JsonNode) root = json_from_string(json, &gerr);
    g_autoptr(MigrationChannel) c = NULL;

    if (!root) {
        error_setg(errp, "invalid JSON: %s", gerr ? gerr->message : "empty");
        return NULL;
    }
    c = qapi_MigrationChannel_from_json(root, NULL, errp);
    if (!c) {
        return NULL;
    }
    *is_cpr = c->channel_type == MIGRATION_CHANNEL_TYPE_CPR;
    return channel_uri(c, "", errp);
}
