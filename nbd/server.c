/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NBD server's instance: its listener, its exports and its client
 * threads, all changed by the main thread under the BQL (server-int.h
 * has the locks and the invariant). A client thread (server-client.c)
 * only reads the export list under NbdServer.lock and marks itself done.
 *
 * Joining: a client thread ends on its own (the client left or sent
 * garbage) or because the main thread shut its channel down (stop, a
 * hard removal). Either way the main thread joins it: at the next accept,
 * removal, query or stop, so a thread that ended is reaped without any
 * callback into the main loop that could outlive the server.
 */
#include "qemu/osdep.h"
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "qapi/error.h"
#include "io/channel.h"
#include "qemu/tsan.h"
#include "nbd/server-int.h"

NbdServer *nbd_server_new(BlockLayer *bl, uint32_t max_connections, TLSCreds *creds,
                          Authz *authz)
{
    NbdServer *s = g_new0(NbdServer, 1);

    s->tls_creds = creds ? tls_creds_ref(creds) : NULL;
    s->tls_authz = authz ? authz_ref(authz) : NULL;
    s->bl = bl;
    s->listen_fd = -1;
    s->max_connections = max_connections;
    g_mutex_init(&s->lock);
    s->exports = g_ptr_array_new();
    s->clients = g_ptr_array_new();
    return s;
}

static void client_free(NbdClient *c)
{
    if (c->thread_started) {
        qemu_thread_join(&c->thread);
    }
    channel_unref(c->ch);
    g_free(c->peer);
    g_free(c);
}

/*
 * Joins the clients in @victims (already off the list), after shutting
 * their channels down so that a thread blocked reading or writing returns.
 * A thread in a block request finishes it first: requests are bounded.
 */
static void clients_cut(GPtrArray *victims)
{
    for (guint i = 0; i < victims->len; i++) {
        NbdClient *c = g_ptr_array_index(victims, i);

        channel_shutdown(c->ch, CHANNEL_SHUT_BOTH);
    }
    for (guint i = 0; i < victims->len; i++) {
        client_free(g_ptr_array_index(victims, i));
    }
}

/* The clients whose threads ended, joined and freed. Main thread. */
static void clients_reap(NbdServer *s)
{
    g_autoptr(GPtrArray) done = g_ptr_array_new();

    tsan_g_mutex_lock(&s->lock);
    for (guint i = 0; i < s->clients->len;) {
        NbdClient *c = g_ptr_array_index(s->clients, i);

        if (c->done) {
            g_ptr_array_add(done, g_ptr_array_steal_index(s->clients, i));
        } else {
            i++;
        }
    }
    tsan_g_mutex_unlock(&s->lock);
    for (guint i = 0; i < done->len; i++) {
        client_free(g_ptr_array_index(done, i));
    }
}

static gboolean server_accept(GIOChannel *gch, GIOCondition cond, gpointer opaque)
{
    NbdServer *s = opaque;
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    NbdClient *c;
    int ret, one = 1;

    if (fd < 0) {
        return G_SOURCE_CONTINUE;
    }
    /* Replies are small and awaited one by one; a unix socket refuses this harmlessly. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    clients_reap(s);
    if (s->max_connections && s->clients->len >= s->max_connections) {
        /* QEMU closes the connection too: the client sees the end of the stream. */
        close(fd);
        return G_SOURCE_CONTINUE;
    }
    c = g_new0(NbdClient, 1);
    c->server = s;
    c->ch = channel_socket_new(fd);
    c->peer = g_strdup(channel_peer(c->ch));
    tsan_g_mutex_lock(&s->lock);
    g_ptr_array_add(s->clients, c);
    tsan_g_mutex_unlock(&s->lock);
    ret = qemu_thread_create(&c->thread, "nbd/client", nbd_client_thread, c);
    if (ret < 0) {
        warn_report("NBD server: cannot start a thread for %s: %s", c->peer, strerror(-ret));
        tsan_g_mutex_lock(&s->lock);
        g_ptr_array_remove(s->clients, c);
        tsan_g_mutex_unlock(&s->lock);
        client_free(c);
        return G_SOURCE_CONTINUE;
    }
    c->thread_started = true;
    return G_SOURCE_CONTINUE;
}

void nbd_server_listen(NbdServer *s, int fd, const char *unix_path)
{
    GIOChannel *gch = g_io_channel_unix_new(fd);

    s->listen_fd = fd;
    s->unix_path = g_strdup(unix_path);
    s->listen_watch = g_io_add_watch(gch, G_IO_IN, server_accept, s);
    g_io_channel_unref(gch);
}

static void export_free(NbdExport *exp)
{
    blk_detach(exp->blk);
    g_free(exp->id);
    g_free(exp->name);
    g_free(exp->description);
    g_free(exp->node_name);
    g_free(exp);
}

void nbd_server_free(NbdServer *s)
{
    g_autoptr(GPtrArray) clients = NULL;

    if (!s) {
        return;
    }
    if (s->listen_watch) {
        g_source_remove(s->listen_watch);
    }
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
    }
    if (s->unix_path) {
        unlink(s->unix_path);
    }
    tsan_g_mutex_lock(&s->lock);
    clients = s->clients;
    s->clients = g_ptr_array_new();
    tsan_g_mutex_unlock(&s->lock);
    clients_cut(clients);
    /* No client thread is left: the exports' backends have no request in flight. */
    for (guint i = 0; i < s->exports->len; i++) {
        export_free(g_ptr_array_index(s->exports, i));
    }
    g_ptr_array_free(s->exports, TRUE);
    g_ptr_array_free(s->clients, TRUE);
    g_mutex_clear(&s->lock);
    if (s->tls_creds) {
        tls_creds_unref(s->tls_creds);
    }
    if (s->tls_authz) {
        authz_unref(s->tls_authz);
    }
    g_free(s->unix_path);
    g_free(s);
}

NbdExport *nbd_export_find_id(NbdServer *s, const char *id)
{
    for (guint i = 0; i < s->exports->len; i++) {
        NbdExport *exp = g_ptr_array_index(s->exports, i);

        if (!strcmp(exp->id, id)) {
            return exp;
        }
    }
    return NULL;
}

NbdExport *nbd_export_find_name(NbdServer *s, const char *name)
{
    for (guint i = 0; i < s->exports->len; i++) {
        NbdExport *exp = g_ptr_array_index(s->exports, i);

        if (!strcmp(exp->name, name)) {
            return exp;
        }
    }
    return NULL;
}

NbdExport *nbd_export_add(NbdServer *s, const char *id, const char *device, const char *name,
                          const char *description, bool writable, bool writethrough,
                          Error **errp)
{
    g_autofree char *user = NULL;
    NbdExport *exp;
    BlockBackend *blk;
    int64_t size;

    if (strlen(name) > NBD_MAX_STRING) {
        error_setg(errp, "export name '%.64s...' too long", name);
        return NULL;
    }
    if (description && strlen(description) > NBD_MAX_STRING) {
        error_setg(errp, "description '%.64s...' too long", description);
        return NULL;
    }
    if (nbd_export_find_name(s, name)) {
        error_setg(errp, "NBD server already has export named '%s'", name);
        return NULL;
    }
    if (nbd_export_find_id(s, id)) {
        error_setg(errp, "Block export id '%s' is already in use", id);
        return NULL;
    }
    user = g_strdup_printf("nbd export '%s'", name);
    blk = blk_attach_user(s->bl, device, user,
                          BLK_PERM_READ | (writable ? BLK_PERM_WRITE : 0), errp);
    if (!blk) {
        return NULL;
    }
    /*
     * QEMU activates an exported node unless the export allows inactive
     * ones (10.0's allow-inactive, default false): libvirt's destination
     * exports the image it is given with -incoming, and the source's
     * mirror writes it before the switchover.
     */
    if (bdrv_activate(bdrv_find_node(s->bl, blk_node_name(blk)), errp) < 0) {
        error_prepend(errp, "Failed to activate '%s' for the export: ", blk_node_name(blk));
        blk_detach(blk);
        return NULL;
    }
    size = blk_getlength(blk);
    if (size < 0) {
        error_setg_errno(errp, -size, "Failed to determine the NBD export's length");
        blk_detach(blk);
        return NULL;
    }
    exp = g_new0(NbdExport, 1);
    exp->server = s;
    exp->id = g_strdup(id);
    exp->name = g_strdup(name);
    exp->description = g_strdup(description);
    exp->node_name = g_strdup(blk_node_name(blk));
    exp->blk = blk;
    exp->size = size;
    exp->writable = writable;
    exp->writethrough = writethrough;
    tsan_g_mutex_lock(&s->lock);
    g_ptr_array_add(s->exports, exp);
    tsan_g_mutex_unlock(&s->lock);
    return exp;
}

bool nbd_export_remove(NbdExport *exp, bool hard, Error **errp)
{
    NbdServer *s = exp->server;
    g_autoptr(GPtrArray) victims = g_ptr_array_new();
    unsigned users = 0;

    clients_reap(s);
    tsan_g_mutex_lock(&s->lock);
    for (guint i = 0; i < s->clients->len; i++) {
        NbdClient *c = g_ptr_array_index(s->clients, i);

        /* One that is done no longer touches the export: it is joined below anyway. */
        users += c->exp == exp && !c->done;
    }
    if (users && !hard) {
        tsan_g_mutex_unlock(&s->lock);
        error_setg(errp, "export '%s' still in use", exp->id);
        error_append_hint(errp, "Use mode='hard' to force client disconnect\n");
        return false;
    }
    /* Off the list first: from now on no handshake can take it. */
    g_ptr_array_remove(s->exports, exp);
    for (guint i = 0; i < s->clients->len;) {
        NbdClient *c = g_ptr_array_index(s->clients, i);

        if (c->exp == exp) {
            g_ptr_array_add(victims, g_ptr_array_steal_index(s->clients, i));
        } else {
            i++;
        }
    }
    tsan_g_mutex_unlock(&s->lock);
    clients_cut(victims);
    export_free(exp);
    return true;
}
