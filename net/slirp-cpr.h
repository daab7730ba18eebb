/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to net/: a hostfwd across a live update (slirp-cpr.c says how).
 * slirp.c wraps each hostfwd it sets up:
 *
 *     net_slirp_cpr_adopt_begin(fwd);          // a socket the old process handed over
 *     ok = slirp_add_hostfwd(...) == 0;       // ...is what libslirp's bind() gets
 *     net_slirp_cpr_adopt_end(fwd, ok);       // kept by name for the next update
 *
 * and polls nothing while net_slirp_cpr_paused(). Main thread, BQL.
 */
#ifndef NET_SLIRP_CPR_H
#define NET_SLIRP_CPR_H

#include "net/slirp-opts.h"

void net_slirp_cpr_adopt_begin(const NetSlirpHostFwd *fwd);
void net_slirp_cpr_adopt_end(const NetSlirpHostFwd *fwd, bool ok);
/* The hostfwd was removed: its socket is no longer one to hand over. */
void net_slirp_cpr_forget(const NetSlirpHostFwd *fwd);
/*
 * The guest is not this process's (a live update's new process before its
 * guest runs, the old one after it handed the guest over): libslirp's
 * sockets, which both processes hold, are the other one's to read.
 */
bool net_slirp_cpr_paused(void);

#endif
