/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NBD server's QMP commands, as QEMU spells them: nbd-server-start,
 * nbd-server-add, nbd-server-remove, nbd-server-stop, block-export-add,
 * block-export-del, query-block-exports. The machine's server lives on
 * current_machine->nbd (BQL); every command runs in the main thread.
 * QEMU's unions are structs in the schema: each variant's members are
 * checked here, with QEMU's messages where it has them.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "qapi/qapi-events.h"
#include "qemu/sockets.h"
#include "system/user-objects.h"
#include "hw/boards.h"
#include "nbd/server-int.h"

static NbdServer *machine_nbd(Error **errp)
{
    NbdServer *s = current_machine ? current_machine->nbd : NULL;

    if (!s) {
        error_setg(errp, "NBD server not running");
    }
    return s;
}

static int listen_inet(const SocketAddressLegacyData *a, Error **errp)
{
    int family = AF_UNSPEC;

    if (!a->port) {
        error_setg(errp, "Parameter 'port' is missing");
        return -1;
    }
    if (a->has_to || (a->has_mptcp && a->mptcp)) {
        error_setg(errp, "NBD server: 'to' and 'mptcp' are not supported");
        return -1;
    }
    if (a->has_ipv4 && a->ipv4 && !(a->has_ipv6 && a->ipv6)) {
        family = AF_INET;
    } else if (a->has_ipv6 && a->ipv6 && !(a->has_ipv4 && a->ipv4)) {
        family = AF_INET6;
    }
    return inet_listen_host_port(a->host, a->port, family, a->has_numeric && a->numeric,
                                 a->has_keep_alive && a->keep_alive, 16, errp);
}

bool qmp_nbd_server_start(const SocketAddressLegacy *addr, const char *tls_creds,
                          const char *tls_authz, bool has_max_connections,
                          uint32_t max_connections, Error **errp)
{
    const SocketAddressLegacyData *a = addr->data;
    const char *unix_path = NULL;
    TLSCreds *creds = NULL;
    Authz *authz = NULL;
    int fd;

    if (!current_machine || !current_machine->block) {
        error_setg(errp, "NBD server: no block layer");
        return false;
    }
    if (current_machine->nbd) {
        error_setg(errp, "NBD server already running");
        return false;
    }
    if (tls_authz && !tls_creds) {
        error_setg(errp, "'tls-authz' is supported only when 'tls-creds' is set");
        return false;
    }
    if (tls_creds) {
        creds = user_objects_tls_creds(tls_creds, errp);
        if (!creds) {
            return false;
        }
        if (!tls_creds_is_server(creds)) {
            error_setg(errp, "Expecting TLS credentials with a server endpoint");
            tls_creds_unref(creds);
            return false;
        }
        if (tls_authz) {
            authz = user_objects_authz(tls_authz, errp);
            if (!authz) {
                tls_creds_unref(creds);
                return false;
            }
        }
    }
    fd = -1;
    switch (addr->type) {
    case SOCKET_ADDRESS_TYPE_INET:
        fd = listen_inet(a, errp);
        break;
    case SOCKET_ADDRESS_TYPE_UNIX:
        if (!a->path) {
            error_setg(errp, "Parameter 'path' is missing");
        } else if (a->has_abstract && a->abstract) {
            error_setg(errp, "NBD server: abstract unix sockets are not supported");
        } else {
            fd = unix_listen_private(a->path, errp);
            unix_path = a->path;
        }
        break;
    default:
        error_setg(errp, "NBD server: only inet and unix addresses are supported");
        break;
    }
    if (fd >= 0) {
        current_machine->nbd = nbd_server_new(current_machine->block,
                                              has_max_connections ? max_connections : 0,
                                              creds, authz);
    }
    /* The server took its own references. */
    if (creds) {
        tls_creds_unref(creds);
    }
    if (authz) {
        authz_unref(authz);
    }
    if (fd < 0) {
        return false;
    }
    nbd_server_listen(current_machine->nbd, fd, unix_path);
    return true;
}

static bool export_add(const char *id, const char *device, const char *name,
                       const char *description, bool writable, bool writethrough,
                       Error **errp)
{
    NbdServer *s = machine_nbd(errp);

    return s && nbd_export_add(s, id, device, name, description, writable, writethrough, errp);
}

bool qmp_nbd_server_add(const char *device, const char *name, const char *description,
                        bool has_writable, bool writable, const char *bitmap, Error **errp)
{
    if (bitmap) {
        error_setg(errp, "NBD server: exporting a dirty bitmap is not supported");
        return false;
    }
    name = name ? name : device;
    /* QEMU's nbd-server-add makes a block export whose id is the name. */
    return export_add(name, device, name, description, has_writable && writable, false, errp);
}

bool qmp_block_export_add(const BlockExportOptions *arg, Error **errp)
{
    if (arg->type != BLOCK_EXPORT_TYPE_NBD) {
        error_setg(errp, "Export type '%s' is not supported", BlockExportType_str(arg->type));
        return false;
    }
    if (arg->iothread) {
        error_setg(errp, "Cannot find iothread '%s'", arg->iothread);
        return false;
    }
    if (arg->has_allow_inactive && arg->allow_inactive) {
        error_setg(errp, "NBD server: exports of inactive nodes are not supported");
        return false;
    }
    if (arg->bitmaps || (arg->has_allocation_depth && arg->allocation_depth)) {
        error_setg(errp, "NBD server: bitmaps and allocation-depth are not supported");
        return false;
    }
    return export_add(arg->id, arg->node_name, arg->name ? arg->name : arg->node_name,
                      arg->description, arg->has_writable && arg->writable,
                      arg->has_writethrough && arg->writethrough, errp);
}

static bool export_del(NbdServer *s, NbdExport *exp, bool has_mode,
                       BlockExportRemoveMode mode, Error **errp)
{
    g_autofree char *id = g_strdup(exp->id);

    if (!nbd_export_remove(exp, has_mode && mode == BLOCK_EXPORT_REMOVE_MODE_HARD, errp)) {
        return false;
    }
    qapi_event_send_block_export_deleted(id);
    return true;
}

bool qmp_block_export_del(const char *id, bool has_mode, BlockExportRemoveMode mode,
                          Error **errp)
{
    NbdServer *s = current_machine ? current_machine->nbd : NULL;
    NbdExport *exp = s ? nbd_export_find_id(s, id) : NULL;

    if (!exp) {
        error_setg(errp, "Export '%s' is not found", id);
        return false;
    }
    return export_del(s, exp, has_mode, mode, errp);
}

bool qmp_nbd_server_remove(const char *name, bool has_mode, BlockExportRemoveMode mode,
                           Error **errp)
{
    NbdServer *s = machine_nbd(errp);
    NbdExport *exp;

    if (!s) {
        return false;
    }
    exp = nbd_export_find_name(s, name);
    if (!exp) {
        error_setg(errp, "Export '%s' is not found", name);
        return false;
    }
    return export_del(s, exp, has_mode, mode, errp);
}

bool qmp_nbd_server_stop(Error **errp)
{
    NbdServer *s = machine_nbd(errp);
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);

    if (!s) {
        return false;
    }
    for (guint i = 0; i < s->exports->len; i++) {
        g_ptr_array_add(ids, g_strdup(((NbdExport *)g_ptr_array_index(s->exports, i))->id));
    }
    current_machine->nbd = NULL;
    nbd_server_free(s);
    for (guint i = 0; i < ids->len; i++) {
        qapi_event_send_block_export_deleted(g_ptr_array_index(ids, i));
    }
    return true;
}

BlockExportInfoList *qmp_query_block_exports(Error **errp)
{
    NbdServer *s = current_machine ? current_machine->nbd : NULL;
    BlockExportInfoList *head = NULL, **tail = &head;

    for (guint i = 0; s && i < s->exports->len; i++) {
        NbdExport *exp = g_ptr_array_index(s->exports, i);
        BlockExportInfo *info = g_new0(BlockExportInfo, 1);

        info->id = g_strdup(exp->id);
        info->type = BLOCK_EXPORT_TYPE_NBD;
        info->node_name = g_strdup(exp->node_name);
        info->shutting_down = false;
        *tail = g_new0(BlockExportInfoList, 1);
        (*tail)->value = info;
        tail = &(*tail)->next;
    }
    return head;
}
