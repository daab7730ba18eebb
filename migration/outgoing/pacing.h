/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: pacing the outgoing migration in windows of
 * RATE_WINDOW_MS (pacing.c). mig/src runs the windows; any thread with the
 * BQL may change the limit or cut a sleep short (cancel, max-bandwidth).
 */
#ifndef MIGRATION_PACING_H
#define MIGRATION_PACING_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define RATE_WINDOW_MS 100          /* rate-limit and bandwidth window */
#define RATE_WINDOWS_PER_S (1000 / RATE_WINDOW_MS)

typedef struct MigrationState MigrationState;

/* One window, mig/src's own. */
typedef struct RateWindow {
    int64_t start_ns;
    uint64_t start_bytes;
    uint64_t start_pages;
    uint64_t start_data_pages;
    int64_t waited_ns;          /* slept in it for max-bandwidth */
    bool busy;                  /* the sender never ran out of pages in it */
} RateWindow;

/* mig/src: a window opens now on @f. */
void rate_window_start(RateWindow *w, QEMUFile *f);
/*
 * mig/src: once the window is >= RATE_WINDOW_MS old, measure it into @s
 * (bandwidth, threshold, rates, expected downtime) and open the next.
 */
void rate_window_update(MigrationState *s, RateWindow *w, QEMUFile *f);
/*
 * mig/src, BQL held (dropped while waiting), the guest stopped: with
 * pause-before-switchover, wait in pre-switchover for migrate-continue.
 * There the guest is stopped, nothing of it sent and its images still
 * ours: libvirt ends its disk mirrors (their last writes go out while
 * nothing writes the disks), then says go. *@from: the state to leave
 * next (active, or pre-switchover). False: cancelled meanwhile.
 */
bool switchover_pause_if_asked(MigrationState *s, int *from, Error **errp);
/* mig/src: sleep until @deadline_ns unless rate_limit_changed() wakes it; ns slept. */
int64_t rate_wait(MigrationState *s, int64_t deadline_ns);
/*
 * mig/src: the downtime a switchover now would have with @remaining bytes
 * left (ms; 0 before the link was measured).
 */
double migration_expected_downtime_ms(const MigrationState *s, uint64_t remaining);
/* BQL: max-bandwidth changed, or cancel: apply the limit and end the sleep. */
void rate_limit_changed(MigrationState *s);

#endif
