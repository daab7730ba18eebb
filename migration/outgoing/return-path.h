/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the source's end of the return path (postcopy.h
 * has the messages). The thread "mig/src-rp" reads what the destination
 * writes back on the migration socket: page requests go into a queue that
 * the postcopy page source drains ahead of everything else; SHUT and PONG
 * are recorded. Hostile input: every block name and range is checked
 * before it is queued.
 */
#ifndef MIGRATION_RETURN_PATH_H
#define MIGRATION_RETURN_PATH_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"
#include "qapi/qapi-types.h"

/*
 * A page request, offered to the owner before it is queued: true if
 * @urgent sent the page itself (postcopy-preempt, on its own channel).
 * Runs in mig/src-rp.
 */
typedef bool RPUrgentPage(RAMBlock *rb, uint64_t page, int64_t received_ns);
/*
 * mig/src: start reading @ch, the main stream's channel (it must be
 * CHANNEL_FEATURE_DUPLEX; the caller keeps its reference, the reader takes
 * its own). @urgent may be NULL.
 */
bool rp_src_start(Channel *ch, RPUrgentPage *urgent, Error **errp);
/* Main thread, after mig/src was joined: end the thread, free the queue. */
void rp_src_stop(void);

/* mig/src: the next page asked for, if any, and when the request arrived. */
bool rp_src_pop_request(RAMBlock **rb, uint64_t *page, int64_t *received_ns);
/*
 * A requested page went out (flushed) for a request that arrived at
 * @received_ns. mig/src or mig/src-rp.
 */
void rp_src_request_served(int64_t received_ns);
/* query-migrate on the source: requests, and how long each waited here to be sent. */
XPostcopyInfo *rp_src_info(void);
/* mig/src: whether a request waits (lock-free). */
bool rp_src_has_request(void);
/*
 * mig/src: sleep until @deadline_ns, a request arrives or the return path
 * ends. Returns at once if a request is waiting.
 */
void rp_src_wait(int64_t deadline_ns);
/*
 * mig/src, after the end of the stream: wait for the destination's SHUT,
 * at most @timeout_ms (< 0: for ever). True if it said the load
 * succeeded; otherwise false with @errp set.
 */
bool rp_src_wait_shut(int64_t timeout_ms, Error **errp);
/* mig/src (or main, mig/src joined): the reader was started and not yet stopped. */
bool rp_src_running(void);
/*
 * mig/src: wait at most @timeout_ms for the destination's answer to our
 * confirmation offer (a PONG accepting it, or echoing it as QEMU does).
 * False if none came: it is gone, or nothing comes back (a one-way relay).
 */
bool rp_src_wait_offer_answer(int64_t timeout_ms);
/*
 * The destination accepted our switchover confirmation (it waits for the
 * go before it runs the guest). Any thread; settled once SHUT arrived,
 * since the PONG comes before it.
 */
bool rp_src_peer_confirms(void);
/* Any thread: the reader is done (SHUT, an error, or stopped). */
bool rp_src_ended(void);
/* The destination said the stream's trailing vmdesc did not arrive whole. */
bool rp_src_peer_vmdesc_damaged(void);
/*
 * The return path failed or the destination went away (any thread): true
 * with @errp set to why (a copy), once the thread saw it.
 */
bool rp_src_failed(Error **errp);

/*
 * mig/src, recovery: the pages @rb has on the destination, once its
 * RECV_BITMAP answer arrived (g_free it); NULL with @errp set if the
 * return path ended first.
 */
unsigned long *rp_src_wait_bitmap(RAMBlock *rb, Error **errp);
/* mig/src, recovery: the destination acknowledged the resume. */
bool rp_src_wait_resume_ack(Error **errp);

/* A new migration (BQL, no thread running): the counters start at 0. */
void rp_src_reset_stats(void);
/* Requests received, for query-migrate (any thread); a recovery keeps counting. */
uint64_t rp_src_requests(void);

#endif
