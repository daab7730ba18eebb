/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the qcow2 unit tests: a temporary directory, QEMU's qemu-img
 * to make and judge images, and reads against a model buffer, over the
 * test block layer (block-fake.h).
 */
#ifndef TESTS_UNIT_QCOW2_TEST_H
#define TESTS_UNIT_QCOW2_TEST_H

#include "block/block.h"

/* The test's temporary directory (main thread: made before, removed after the tests). */
extern char *tmpdir;
void qcow2_test_dir_init(const char *name);
void qcow2_test_dir_cleanup(void);

/* false (and the test skipped) without qemu-img: qemu-utils, scripts/install-deps.sh. */
bool have_qemu_img(void);
/* A command's exit status, and its output in *out if given (else logged on failure). */
int run(char **out, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* @name inside tmpdir. */
char *path(const char *name);

BlockDriverState *open_qcow2(const char *file, int flags, Error **errp);
BlockDriverState *open_ok(const char *file, int flags);     /* aborts on failure */
/* The node's bytes [@off, @off + @len) (two iovec pieces) equal @model's. */
void check_read(BlockDriverState *bs, const uint8_t *model, uint64_t off, uint64_t len);
void check_whole(BlockDriverState *bs, const uint8_t *model, uint64_t size);
/* QEMU's verdict: qemu-img check finds no error and no leak, compare finds @model. */
void qemu_judges(const char *img, const uint8_t *model, uint64_t size);
/* The big-endian 8 bytes at @off of the file @img. */
uint64_t header_field(const char *img, unsigned off);

#endif
