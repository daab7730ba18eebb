/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared steps of the migration tests (the MigrateCommon of QEMU's framework). */
#ifndef MIGTEST_H
#define MIGTEST_H

#include <inttypes.h>
#include <stdint.h>
#include "libvmtest.h"

#define MIGTEST_BASE_ARGS "-M microvm -cpu host -nodefaults -no-user-config " \
                          "-serial stdio "

/* Source running the firmware with @append; returns once it is working. */
VM *migtest_start_source(const char *mem, const char *append);
/* Same, with @extra arguments (e.g. "-accel kvm,dirty-ring-size=4096"). */
VM *migtest_start_source_extra(const char *mem, const char *append, const char *extra);
/* Destination waiting on @incoming (NULL = nothing yet: -incoming defer). */
VM *migtest_start_dest(const char *mem, const char *append, bool paused, const char *incoming);
VM *migtest_start_dest_extra(const char *mem, const char *append, bool paused,
                             const char *incoming, const char *extra);
/* Highest PASS n the source printed (0 for non-verify modes). */
int migtest_last_pass(VM *src);
/* A fresh URI for @transport ("unix", "tcp", "exec" (a fifo pair)). */
char *migtest_uri(const char *transport);
/* The -incoming side of an exec: URI made by migtest_uri("exec"). */
char *migtest_exec_incoming(const char *uri);
/*
 * Start migrating with a bandwidth too low to converge, wait for a second
 * dirty sync (or the end), then allow the switchover. @hmp uses HMP.
 */
void migtest_slow_then_fast(VM *src, const char *uri, bool hmp);
/* Waits until the destination has left inmigrate. */
void migtest_wait_incoming_done(VM *dst);
/*
 * The source's migration completed after at least two dirty syncs (the
 * reply is printed if not); returns the final query-migrate reply.
 */
JsonNode *migtest_wait_completed(VM *src);
/* Waits until query-migrate's @field (e.g. "ram.transferred") exceeds @bytes. */
void migtest_wait_ram_progress(VM *src, const char *field, int64_t bytes);
/*
 * Once @field passed 4 MiB, SIGKILLs @dst (then frees it) and waits for the
 * source's migration to fail with an error-desc; returns the reply.
 */
JsonNode *migtest_kill_dest_mid_stream(VM *src, VM *dst, const char *field);
/* pmemsave all guest RAM of both and compare byte for byte. */
void migtest_assert_ram_identical(VM *src, VM *dst, const char *mem);
/* Same, for a guest started with -machine max-ram-below-4g=@below_4g. */
void migtest_assert_ram_identical_split(VM *src, VM *dst, const char *mem, uint64_t below_4g);
/* Guest-physical [addr, addr + size) equal on both (a device's RAM, such as VRAM). */
void migtest_assert_range_identical(VM *src, VM *dst, const char *tag, uint64_t addr,
                                    uint64_t size);
/* The destination guest keeps working: more PASS/STAT lines, no FAIL. */
void migtest_assert_guest_continues(VM *dst, const char *append, int pass_before);
/* The source still runs and verifies: status running, two more PASS lines, no FAIL. */
void migtest_assert_source_alive(VM *src);
/* Migrate (fast, downtime 300 ms) to @uri and expect @status with @desc_part in error-desc. */
void migtest_migrate_expect(VM *src, const char *uri, const char *status, const char *desc_part);
/* After a failure: a migration of @src to a fresh destination completes and the guest goes on. */
void migtest_migrate_again_ok(VM *src, const char *mem, const char *append);
/*
 * A migration ended on the source in @status ("completed" or "failed"):
 * its guest runs in exactly one place, never in none and never in both.
 * Completed: the source in postmigrate and the destination running.
 * Failed: the source running, the destination gone (status 1) or alive
 * and not running (paused, waiting for a 'cont' someone decides on).
 * Returns whether the destination is still alive.
 */
bool migtest_assert_one_runs(VM *src, VM *dst, const char *status);
/* Size string ("256M", "3328M") to bytes. */
uint64_t migtest_mem_bytes(const char *mem);

#endif
