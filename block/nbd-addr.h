/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where an nbd node's server is: from QEMU's BlockdevOptionsNbd keys or
 * from one of QEMU's filenames (nbd-addr.c). Pure string work, no I/O.
 */
#ifndef BLOCK_NBD_ADDR_H
#define BLOCK_NBD_ADDR_H

#include <glib.h>
#include <stdbool.h>
#include "qemu/typedefs.h"

typedef struct NbdAddr {
    bool is_unix;
    char *path;                 /* unix: the socket's path */
    char *host, *port;          /* inet (port defaults to 10809 where QEMU allows) */
    char *export;               /* never NULL once parsed: "" is the default export */
} NbdAddr;

void nbd_addr_clear(NbdAddr *a);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(NbdAddr, nbd_addr_clear)

/*
 * QEMU's filenames:
 *   nbd:unix:PATH[:exportname=NAME]
 *   nbd:HOST:PORT[:exportname=NAME]        (HOST may be [IPv6])
 *   nbd[+tcp]://HOST[:PORT][/NAME]
 *   nbd+unix://[/NAME]?socket=PATH
 */
bool nbd_addr_parse_filename(const char *filename, NbdAddr *a, Error **errp);
/*
 * A node's own options (their prefix stripped; @prefix is for messages):
 * filename=, or server.type=unix + server.path / server.type=inet +
 * server.host + server.port, or the legacy path= / host= [port=]; export=.
 */
bool nbd_addr_from_opts(QemuOpts *opts, const char *prefix, NbdAddr *a, Error **errp);
/* The canonical filename, as QEMU shows an nbd node's ("nbd+unix:///exp?socket=/s"). */
char *nbd_addr_to_filename(const NbdAddr *a);

#endif
