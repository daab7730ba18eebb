/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/incoming/incoming-sort.c: every first word a connection
 * can start with, against every set of connections still expected, gives
 * the kind QEMU's destination would give it.
 */
#include "qemu/osdep.h"
#include "migration/incoming/incoming-sort.h"
#include "migration/transport/multifd.h"
#include "migration/stream/savevm.h"
#include "migration/stream/savevm-cmd.h"

#define EOS_RECORD      0x00000000u     /* a preempt channel's first word: be64 EOS's top half */
#define COMMAND_WORD    ((uint32_t)QEMU_VM_COMMAND << 24 | 0x000203u)

static IncomingConnKind sort(uint32_t first, bool recovering, bool main, bool preempt)
{
    IncomingExpect want = { .recovering = recovering, .main = main, .preempt = preempt };

    return incoming_conn_sort(first, &want);
}

static void test_migration(void)
{
    /* The stream, once. */
    g_assert_cmpint(sort(QEMU_VM_FILE_MAGIC, false, true, false), ==, INCOMING_CONN_MAIN);
    g_assert_cmpint(sort(QEMU_VM_FILE_MAGIC, false, false, false), ==, INCOMING_CONN_UNKNOWN);
    /* A second stream is never taken for the preempt channel. */
    g_assert_cmpint(sort(QEMU_VM_FILE_MAGIC, false, false, true), ==, INCOMING_CONN_UNKNOWN);
    /* multifd channels by their magic, expected or not (the receiver decides). */
    g_assert_cmpint(sort(MULTIFD_MAGIC, false, true, false), ==, INCOMING_CONN_MULTIFD);
    g_assert_cmpint(sort(MULTIFD_MAGIC, false, false, true), ==, INCOMING_CONN_MULTIFD);
    /* The preempt channel: neither magic, only while expected, even before the stream. */
    g_assert_cmpint(sort(EOS_RECORD, false, true, true), ==, INCOMING_CONN_PREEMPT);
    g_assert_cmpint(sort(0xdeadbeef, false, false, true), ==, INCOMING_CONN_PREEMPT);
    g_assert_cmpint(sort(EOS_RECORD, false, true, false), ==, INCOMING_CONN_UNKNOWN);
    g_assert_cmpint(sort(0xdeadbeef, false, false, false), ==, INCOMING_CONN_UNKNOWN);
}

static void test_recovery(void)
{
    /* The recovered stream opens with a command; the preempt channel with a record. */
    g_assert_cmpint(sort(COMMAND_WORD, true, true, true), ==, INCOMING_CONN_MAIN);
    g_assert_cmpint(sort(EOS_RECORD, true, true, true), ==, INCOMING_CONN_PREEMPT);
    g_assert_cmpint(sort(COMMAND_WORD, true, false, true), ==, INCOMING_CONN_UNKNOWN);
    g_assert_cmpint(sort(EOS_RECORD, true, true, false), ==, INCOMING_CONN_UNKNOWN);
    /* No multifd channels in a recovery, and no file magic either. */
    g_assert_cmpint(sort(MULTIFD_MAGIC, true, false, false), ==, INCOMING_CONN_UNKNOWN);
    g_assert_cmpint(sort(QEMU_VM_FILE_MAGIC, true, true, false), ==, INCOMING_CONN_UNKNOWN);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/incoming-sort/migration", test_migration);
    g_test_add_func("/incoming-sort/recovery", test_recovery);
    return g_test_run();
}
