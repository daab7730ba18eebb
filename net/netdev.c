/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -netdev and -nic: every argument is checked completely while the command
 * line is parsed (so a typo exits before anything is created), kept as a
 * NetPending, and turned into a backend by net_clients_create(). Backend
 * types are rows of one table; the ones QEMU has and this binary has not
 * are rows without hooks, refused with QEMU's words.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/option.h"
#include "net/net.h"
#include "net/slirp.h"

typedef struct NetBackendType {
    const char *name;
    /* NULL hooks: a type QEMU knows that is not built into this binary. */
    void *(*parse)(QemuOpts *opts, Error **errp);
    NetClientState *(*create)(const char *id, const void *config, Error **errp);
    void (*config_free)(void *config);
    const char *const *known;           /* its options besides type and id */
    const char *const *unsupported;     /* QEMU's options this binary refuses */
} NetBackendType;

/* One -netdev or -nic, checked, not yet created (main thread, during init). */
typedef struct NetPending {
    char *opt;                  /* "-netdev user,id=n0", for messages */
    char *id;
    const NetBackendType *type;
    void *config;               /* what type->parse made */
    bool is_nic;
    char *nic_model;
    MACAddr mac;
} NetPending;

static void *net_user_parse(QemuOpts *opts, Error **errp)
{
    return net_slirp_config_parse(opts, errp);
}

static NetClientState *net_user_create(const char *id, const void *config, Error **errp)
{
    NetClientState *nc = net_slirp_create(id, config, errp);

    /* Its state migrates: backends are never freed once created. */
    if (nc) {
        net_slirp_vmstate_register(nc);
    }
    return nc;
}

static void net_user_config_free(void *config)
{
    net_slirp_config_free(config);
}

/* QEMU's NetClientDriver values, in its order. */
static const NetBackendType net_backend_types[] = {
    { "none" }, { "nic" },
    { "user", net_user_parse, net_user_create, net_user_config_free,
      net_slirp_known_options, net_slirp_unsupported_options },
    { "tap" }, { "l2tpv3" }, { "socket" }, { "stream" }, { "dgram" }, { "vde" },
    { "bridge" }, { "hubport" }, { "netmap" }, { "vhost-user" }, { "vhost-vdpa" },
};

/* The NIC models a -nic may ask for; the machine's frontends take them. */
static const char *const nic_models[] = { "virtio-net-device", NULL };

/* The -nic NICs (NICInfo), in command-line order; main thread. */
static GPtrArray *nic_table;

/* Counts the ids made up for -nic without id=, as QEMU's "#netNNN". */
static unsigned nic_anonymous_ids;

static const NetBackendType *net_backend_type_find(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(net_backend_types); i++) {
        if (!strcmp(net_backend_types[i].name, name)) {
            return &net_backend_types[i];
        }
    }
    return NULL;
}

static void net_backend_types_help(void)
{
    printf("Available netdev backend types:\n");
    for (size_t i = 0; i < ARRAY_SIZE(net_backend_types); i++) {
        if (net_backend_types[i].create) {
            printf("%s\n", net_backend_types[i].name);
        }
    }
}

static bool name_in(const char *const *names, const char *name)
{
    for (; names && *names; names++) {
        if (!strcmp(*names, name)) {
            return true;
        }
    }
    return false;
}

static void net_pending_free(gpointer data)
{
    NetPending *np = data;

    if (np->config) {
        np->type->config_free(np->config);
    }
    g_free(np->opt);
    g_free(np->id);
    g_free(np->nic_model);
    g_free(np);
}

GPtrArray *net_pending_new(void)
{
    return g_ptr_array_new_with_free_func(net_pending_free);
}

/* Every option is one @type reads, or one of @extra; else QEMU's refusal. */
static bool net_check_options(QemuOpts *opts, const NetBackendType *type,
                              const char *const *extra, Error **errp)
{
    for (size_t i = 0; i < qemu_opts_count(opts); i++) {
        const char *name = qemu_opts_nth(opts, i)->name;

        if (name_in(extra, name) || name_in(type->known, name)) {
            continue;
        }
        if (name_in(type->unsupported, name)) {
            error_setg(errp, "Parameter '%s' is not supported by this binary", name);
        } else {
            error_setg(errp, "Invalid parameter '%s'", name);
        }
        return false;
    }
    return true;
}

/* The -nic part: model= and mac=. */
static bool net_parse_nic_opts(QemuOpts *opts, NetPending *np, Error **errp)
{
    const char *model = qemu_opt_get(opts, "model");
    const char *mac = qemu_opt_get(opts, "mac");

    if (model && !strcmp(model, "help")) {
        printf("Supported NIC models:\n");
        for (int i = 0; nic_models[i]; i++) {
            printf("%s\n", nic_models[i]);
        }
        exit(0);
    }
    if (model && !name_in(nic_models, model)) {
        error_setg(errp, "Unsupported NIC model: %s", model);
        return false;
    }
    np->nic_model = g_strdup(model ? model : nic_models[0]);
    if (mac) {
        if (!net_parse_macaddr(mac, &np->mac)) {
            error_setg(errp, "invalid syntax for ethernet address");
            return false;
        }
        if (np->mac.a[0] & 1) {
            error_setg(errp, "NIC cannot have multicast MAC address");
            return false;
        }
        net_macaddr_mark_used(&np->mac);
    } else {
        net_macaddr_default(&np->mac);
    }
    return true;
}

/* The id= of a -netdev (required, well formed, not taken) or a -nic (optional). */
static bool net_parse_id(GPtrArray *pending, QemuOpts *opts, NetPending *np, Error **errp)
{
    const char *id = qemu_opt_get(opts, "id");

    if (!id && np->is_nic) {
        np->id = g_strdup_printf("#net%03u", nic_anonymous_ids++);
        return true;
    }
    if (!id) {
        error_setg(errp, "Parameter 'id' is missing");
        return false;
    }
    if (!net_id_wellformed(id)) {
        error_setg(errp, "Parameter 'id' expects an identifier");
        error_append_hint(errp, "Identifiers consist of letters, digits, '-', '.', '_', "
                          "starting with a letter.\n");
        return false;
    }
    for (guint i = 0; i < pending->len; i++) {
        if (!strcmp(((NetPending *)g_ptr_array_index(pending, i))->id, id)) {
            error_setg(errp, "Duplicate ID '%s' for netdev", id);
            return false;
        }
    }
    np->id = g_strdup(id);
    return true;
}

bool net_client_parse(GPtrArray *pending, const char *arg, bool is_nic, Error **errp)
{
    static const char *const netdev_extra[] = { "type", "id", NULL };
    static const char *const nic_extra[] = { "type", "id", "model", "mac", NULL };
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "type", errp);
    NetPending *np;
    const char *type;

    if (!opts) {
        return false;
    }
    type = qemu_opt_get(opts, "type");
    if (type && !strcmp(type, "help")) {
        net_backend_types_help();
        exit(0);
    }
    if (is_nic && type && !strcmp(type, "none")) {
        return true;            /* -nic none: no NIC, as with no -nic at all */
    }
    if (is_nic && !type) {
        type = "user";          /* QEMU's -nic default backend */
    }
    np = g_new0(NetPending, 1);
    np->is_nic = is_nic;
    np->opt = g_strdup_printf("%s %s", is_nic ? "-nic" : "-netdev", arg);
    if (!net_parse_id(pending, opts, np, errp)) {
        goto fail;
    }
    if (!type) {
        error_setg(errp, "Parameter 'type' is missing");
        goto fail;
    }
    np->type = net_backend_type_find(type);
    if (!np->type) {
        error_setg(errp, "Parameter 'type' does not accept value '%s'", type);
        goto fail;
    }
    if (!np->type->parse) {
        error_setg(errp, "network backend '%s' is not compiled into this binary", type);
        goto fail;
    }
    if (!net_check_options(opts, np->type, is_nic ? nic_extra : netdev_extra, errp) ||
        (is_nic && !net_parse_nic_opts(opts, np, errp))) {
        goto fail;
    }
    np->config = np->type->parse(opts, errp);
    if (!np->config) {
        goto fail;
    }
    g_ptr_array_add(pending, np);
    return true;

fail:
    net_pending_free(np);
    return false;
}

static bool net_pending_create(NetPending *np, Error **errp)
{
    NetClientState *nc;

    if (net_find_netdev(np->id)) {
        error_setg(errp, "%s: Duplicate ID '%s'", np->opt, np->id);
        return false;
    }
    nc = np->type->create(np->id, np->config, errp);
    if (!nc) {
        error_prepend(errp, "%s: ", np->opt);
        return false;
    }
    if (np->is_nic) {
        NICInfo *nd = g_new0(NICInfo, 1);

        nd->model = g_strdup(np->nic_model);
        nd->mac = np->mac;
        nd->netdev = nc;
        nd->opt = g_strdup(np->opt);
        if (!nic_table) {
            nic_table = g_ptr_array_new();
        }
        g_ptr_array_add(nic_table, nd);
    }
    return true;
}

bool net_clients_create(GPtrArray *pending, Error **errp)
{
    /* -netdev backends first, then the -nic ones, in command-line order each. */
    for (int pass = 0; pass < 2; pass++) {
        for (guint i = 0; i < pending->len; i++) {
            NetPending *np = g_ptr_array_index(pending, i);

            if (np->is_nic == (pass == 1) && !net_pending_create(np, errp)) {
                return false;
            }
        }
    }
    return true;
}

NICInfo *net_nic_take(const char *model)
{
    for (guint i = 0; nic_table && i < nic_table->len; i++) {
        NICInfo *nd = g_ptr_array_index(nic_table, i);

        if (!nd->taken && !strcmp(nd->model, model)) {
            nd->taken = true;
            return nd;
        }
    }
    return NULL;
}

bool net_clients_check(Error **errp)
{
    GPtrArray *all = net_clients();

    for (guint i = 0; nic_table && i < nic_table->len; i++) {
        NICInfo *nd = g_ptr_array_index(nic_table, i);

        /* The machine takes every model nic_models lists; this is a bug guard. */
        if (!nd->taken) {
            error_setg(errp, "%s: requested NIC (model %s) was not created", nd->opt,
                       nd->model);
            return false;
        }
    }
    for (guint i = 0; i < all->len; i++) {
        NetClientState *nc = g_ptr_array_index(all, i);

        if (!nc->peer) {
            warn_report("%s %s has no peer", nc->is_netdev ? "netdev" : "nic", nc->name);
        }
    }
    return true;
}
