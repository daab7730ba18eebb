/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: multifd, the sending side. mig/src connects the
 * channels next to the main stream (multifd_send_setup), the dirty scan
 * puts claimed words through the multifd sink's page hooks, which queue
 * pages into batches (multifd_send_queue_page) and end a round after
 * every dirty sync (multifd_send_sync); cancel shuts the channels down
 * from any thread; the cleanup bottom half joins them. multifd-send.c
 * opens with the round protocol's invariant and why it holds.
 *
 * Three parts: the global functions below work on the sender of the
 * running migration (set by multifd_send_setup, cleared by cleanup;
 * ram-sink-multifd.c, with the sink's row); the multifd_sender_* ones work
 * on any instance, over channels the caller connected
 * (tests/unit/test-multifd-rounds.c); the sink's page hooks at the end
 * (multifd-send.c) are the page path.
 */
#ifndef MIGRATION_MULTIFD_SEND_H
#define MIGRATION_MULTIFD_SEND_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"
#include "ram-codec.h"

typedef struct MultifdSender MultifdSender;

/* Counters of the last (or the running) migration; they outlive it for query-migrate. */
typedef struct MultifdSendStats {
    uint64_t normal_pages;      /* sent whole (or compressed) in packets */
    uint64_t zero_pages;        /* listed as zero in packets */
    uint64_t bytes;             /* everything written on the channels */
    uint64_t packets;
} MultifdSendStats;

/*
 * mig/src, after the main stream connected: connects multifd-channels
 * channels to @uri (tcp: or unix: only) and starts their threads. The
 * sender is then the one multifd_sender() returns until cleanup.
 */
MultifdSender *multifd_send_setup(const char *uri, MigTLS *tls, Error **errp);
/* The sender of the running migration, or NULL (multifd off). mig/src. */
MultifdSender *multifd_sender(void);
/*
 * mig/src: send page @page of @rb in a packet. The page is read later by a
 * channel thread; its dirty bit must already be claimed. A channel's
 * failure is set on @f.
 */
void multifd_send_queue_page(MultifdSender *ms, QEMUFile *f, RAMBlock *rb, uint64_t page);
/*
 * mig/src: ends the round: the pages queued so far go out, each channel
 * sends a SYNC packet after them and @f gets the MULTIFD_FLUSH record.
 * @wait: also wait until the channels wrote everything (completion).
 * False (error set on @f) if a channel failed.
 */
bool multifd_send_sync(MultifdSender *ms, QEMUFile *f, bool wait);
/*
 * mig/src, the guest running, before a switchover is decided: the pages
 * queued so far go out and are written, the round stays open (no SYNC).
 * False (error set on @f) if a channel failed.
 */
bool multifd_send_settle(MultifdSender *ms, QEMUFile *f);
/* Any thread: blocked channel writes fail at once (cancel). */
void multifd_send_shutdown(void);
/* Main thread, after mig/src was joined: stop and join the threads, close the channels. */
void multifd_send_cleanup(void);
/* Any thread. */
void multifd_send_stats(MultifdSendStats *st);
/* Any thread: bytes the channels wrote that the destination did not take (0 without multifd). */
uint64_t multifd_send_unsent_bytes(void);

/* ---- Instance level (the global functions above forward to these) ---- */

/* A sender of multifd-channels channels as the options say now, none connected. */
MultifdSender *multifd_sender_new(Error **errp);
/*
 * Channel @i (each once, in any order) is @ch, connected; takes the
 * caller's reference (also on failure) and starts its worker, which first
 * sends the initial packet. False with @errp if the thread cannot start.
 */
bool multifd_sender_start_channel(MultifdSender *ms, int i, Channel *ch, Error **errp);
/* Any thread: shuts every channel down now and those started later (cancel). */
void multifd_sender_shutdown(MultifdSender *ms);
/* Any thread: multifd_sender_shutdown() was called. */
bool multifd_sender_cancelled(MultifdSender *ms);
/* Any thread while @ms lives: how many channels it has (read-only). */
int multifd_sender_channels(MultifdSender *ms);
/* Any thread while @ms lives. */
void multifd_sender_stats(MultifdSender *ms, MultifdSendStats *st);
/* Any thread while @ms lives: bytes its channels wrote that the peer did not take. */
uint64_t multifd_sender_unsent_bytes(MultifdSender *ms);
/* The owner, once nobody queues or syncs: stops (shutting the channels down) and joins. */
void multifd_sender_stop(MultifdSender *ms);
/* The owner, once nobody queues or syncs: stops (shutting the channels down), joins, frees. */
void multifd_sender_free(MultifdSender *ms);

/* ---- The multifd sink (ram-sink.h): its instance and page hooks ---- */

typedef struct MultifdSink {
    RAMRecordWriter rec;        /* mig/src: the main stream's records */
    MultifdSender *ms;          /* mig/src, from the sink's open to its close */
} MultifdSink;

/*
 * The page hooks of ram_multifd_sink, on a MultifdSink: claimed words go as
 * packets on the channels, which read the pages later; pages known to be
 * zero and single pages put outside the words go as records on the main
 * stream. A round ends after every dirty sync (new_round); drain also
 * waits until the channels wrote everything.
 */
void multifd_sink_put_page(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t page,
                           const uint8_t *data);
void multifd_sink_put_word(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t word,
                           unsigned long bits, unsigned long zero);
bool multifd_sink_takes_words(void *sink);
bool multifd_sink_new_round(void *sink, QEMUFile *f);
bool multifd_sink_settle(void *sink, QEMUFile *f);
bool multifd_sink_drain(void *sink, QEMUFile *f);
void multifd_sink_restart(void *sink);

#endif
