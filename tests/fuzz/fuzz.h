/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fuzz targets' shared parts. Each target is one file with libFuzzer's
 * two entry points; the same file links either with libFuzzer
 * (./configure --enable-fuzzing, clang) or with standalone.c, a driver that
 * replays inputs and mutates them for a while without coverage guidance.
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points, which every target defines. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The machine every target runs against, created once per process: the
 * microvm machine on real KVM, 16 MiB of RAM, one vCPU, the workload
 * firmware loaded, paused, waiting for an incoming stream (-incoming
 * defer), no devices with a backend outside the process. The seed streams
 * of scripts/fuzz-corpus come from a guest with this same configuration.
 * Exits with status 77 (a skip) when /dev/kvm cannot be opened. Returns
 * with the BQL held, as the main loop would hold it.
 */
void fuzz_machine_start(const char *argv0);

/*
 * Aborts unless @msg reads as one line of printable ASCII: errors about a
 * hostile input must not carry its raw bytes to a terminal or a log.
 */
void fuzz_assert_printable(const char *what, const char *msg);

#endif
