/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A test-only block layer under qcow2 (tests/unit/test-qcow2.c,
 * tests/fuzz/fuzz-qcow2.c): the node-level functions of
 * include/block/block.h (bdrv_preadv ... bdrv_open_backing) dispatching to
 * a node's row, and two protocol rows: a host file (positional I/O on an
 * fd, reads past the end are zeroes as QEMU's file-posix gives them) and
 * an in-memory file. No graph, no backends, no locks of the layer: a
 * test owns its nodes.
 */
#ifndef TESTS_UNIT_BLOCK_FAKE_H
#define TESTS_UNIT_BLOCK_FAKE_H

#include "block/block.h"

/* A protocol node on a host file (O_RDWR when @rw). */
BlockDriverState *fake_file_open(const char *path, bool rw, Error **errp);
/* A protocol node over @data (the node owns it); it grows up to @max bytes. */
BlockDriverState *fake_mem_open(GByteArray *data, uint64_t max);
GByteArray *fake_mem_data(BlockDriverState *bs);
/*
 * Journal a memory node from now on: its bytes now count as on stable
 * storage, and so do they at every flush (a FUA write counts as a write
 * and a flush: stronger than a disk, which qcow2 does not rely on for its
 * metadata order); the writes in
 * between may or may not have reached it. fake_mem_crash(): a new array
 * of what a crash could leave, the stable bytes plus a random subset of
 * the writes since (in their order).
 */
void fake_mem_journal(BlockDriverState *bs);
GByteArray *fake_mem_crash(BlockDriverState *bs, GRand *r);
/* A format node of @drv over @file (taken: closed with the node). NULL on failure. */
BlockDriverState *fake_format_open(const BlockDriver *drv, BlockDriverState *file,
                                   int flags, Error **errp);
/* Close a node, its backing chain and its file child. */
void fake_node_close(BlockDriverState *bs);
/* bdrv_flush() calls on protocol nodes since the start. */
extern unsigned fake_flush_count;

#endif
