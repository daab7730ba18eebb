/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Listening sockets shared by the monitors, chardevs and incoming migration,
 * and sockets inherited from our parent.
 */
#ifndef QEMU_SOCKETS_H
#define QEMU_SOCKETS_H

#include "qemu/typedefs.h"

/*
 * unix_listen_private: a listening Unix socket at @path (an old socket
 * file there is replaced) that only our user can connect to: the socket
 * file is created 0600 whatever the umask, since whoever connects drives
 * the VM (QMP, HMP) or feeds it a migration stream. Returns the fd, or -1
 * with @errp set.
 */
int unix_listen_private(const char *path, Error **errp);
/* A connected Unix stream socket to @path: the fd, or -1 with @errp set. */
int unix_connect_path(const char *path, Error **errp);
/*
 * A connected TCP socket to @host:@port (each address getaddrinfo gives
 * tried in turn; TCP_NODELAY, close-on-exec): the fd, or -1 with @errp set.
 */
int inet_connect_host_port(const char *host, const char *port, Error **errp);
/*
 * A listening TCP socket on @host:@port (@host NULL or "": every local
 * address): each address getaddrinfo gives (of @family, AF_UNSPEC for
 * any; @numeric: @host must be numeric) tried in turn, SO_REUSEADDR,
 * SO_KEEPALIVE with @keepalive, close-on-exec. The fd, or -1 with @errp
 * set in QEMU's words ("Failed to find an available port: ...").
 */
int inet_listen_host_port(const char *host, const char *port, int family, bool numeric,
                          bool keepalive, int backlog, Error **errp);
/*
 * socket_inherited_fd: take over the stream socket numbered @str that
 * our parent left open for us (-chardev socket,fd=N). With @server it is
 * made to listen (it may be listening already); without, it must be
 * connected; one marked close-on-exec is ours, not inherited, and refused.
 * It becomes close-on-exec. Returns the fd, or -1 with @errp
 * set ("fd=N: not a socket", ...) and the fd left alone.
 */
int socket_inherited_fd(const char *str, bool server, Error **errp);

#endif
