/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared by the block layer's unit tests (test-block*.c); see block-test.c. */
#ifndef TESTS_UNIT_BLOCK_TEST_H
#define TESTS_UNIT_BLOCK_TEST_H

#include "qapi/qapi-events.h"
#include "block/block.h"
#include "block/block-int.h"
#include "system/runstate.h"

#define IMG_SIZE (4 * 1024 * 1024)
/* The fake format's header starts with these 8 bytes (NUL included). */
#define TESTFMT_MAGIC "TESTFMT"

typedef struct FakeEvent {
    char *device, *node_name, *reason;
    IoOperationType operation;
    BlockIOErrorAction action;
    bool has_nospace, nospace;
    int count;
} FakeEvent;

/* The last BLOCK_IO_ERROR and the last stop request (main thread only: the tests). */
typedef struct Fakes {
    FakeEvent ev;
    int stops;
    RunState stop_state;
} Fakes;

extern Fakes block_test_fakes;

/* g_test_init and a temporary directory for the images; the run removes it. */
void block_test_init(int *argc, char ***argv);
int block_test_run(void);
/* A sparse file of @size in the directory: its path (g_free). */
char *make_image(const char *name, uint64_t size);
/* A "testfmt" image with a guest size of IMG_SIZE and @backing (or none). */
char *make_testfmt(const char *name, const char *backing);
/* *@errp holds an error saying @want; it is freed and *@errp is NULL again. */
void assert_error(Error **errp, const char *want);
/* A new layer with one -drive of these options (which must open). */
BlockLayer *open_drive(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* One request of @len bytes at @off. */
int rw(BlockBackend *blk, bool write, uint64_t off, void *buf, size_t len, int flags);
/* QEMU's lock bytes held on @path by anyone: bit b for 100 + b, bit 8 + b for 200 + b. */
unsigned locked_bytes(const char *path);

#endif
