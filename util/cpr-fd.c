/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The table of fds a live update handed over (qemu/cpr-fd.h). */
#include "qemu/osdep.h"
#include "qemu/cpr-fd.h"

/* name -> fd (GINT_TO_POINTER); main thread only (see the header for why it is global). */
static GHashTable *cpr_fds;
/* Set by the first cpr_fd_add: stays set when every fd has been taken. */
static bool cpr_fds_received;

static void cpr_fd_close(gpointer value)
{
    close(GPOINTER_TO_INT(value));
}

void cpr_fd_add(const char *name, int fd)
{
    if (!cpr_fds) {
        cpr_fds = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, cpr_fd_close);
    }
    cpr_fds_received = true;
    g_hash_table_replace(cpr_fds, g_strdup(name), GINT_TO_POINTER(fd));
}

int cpr_fd_take(const char *name)
{
    gpointer key, value;

    if (!cpr_fds || !g_hash_table_lookup_extended(cpr_fds, name, &key, &value)) {
        return -1;
    }
    g_hash_table_steal(cpr_fds, name);
    g_free(key);
    return GPOINTER_TO_INT(value);
}

bool cpr_fd_received(void)
{
    return cpr_fds_received;
}

unsigned cpr_fd_close_unused(void)
{
    unsigned n = cpr_fds ? g_hash_table_size(cpr_fds) : 0;

    if (cpr_fds) {
        g_hash_table_remove_all(cpr_fds);
    }
    return n;
}

/* name -> fd the owner keeps open; main thread (see the header for why it is global). */
static GHashTable *preserved;

void cpr_fd_preserve(const char *name, int fd)
{
    if (!preserved) {
        preserved = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    }
    g_hash_table_replace(preserved, g_strdup(name), GINT_TO_POINTER(fd));
}

void cpr_fd_unpreserve(const char *name)
{
    if (preserved) {
        g_hash_table_remove(preserved, name);
    }
}

void cpr_fd_preserved_foreach(void (*fn)(const char *name, int fd, void *opaque), void *opaque)
{
    GHashTableIter it;
    gpointer k, v;

    if (!preserved) {
        return;
    }
    g_hash_table_iter_init(&it, preserved);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        fn(k, GPOINTER_TO_INT(v), opaque);
    }
}
