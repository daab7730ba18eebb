/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: a whole incoming migration stream, loaded from memory by
 * the loader mig/dst runs (qemu_loadvm_state) into the paused fuzz
 * machine. A refusal must come with a printable error; nothing may crash,
 * hang or leak. Seeds: streams of the workload firmware (paused, running,
 * background snapshot) written by scripts/fuzz-corpus.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "migration/qemu-file.h"
#include "migration/savevm.h"
#include "fuzz.h"

/* FUZZ_EXPECT_LOAD set: every input must load (scripts/fuzz-run checks the seeds so). */
static bool expect_load;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    expect_load = getenv("FUZZ_EXPECT_LOAD") != NULL;
    fuzz_machine_start((*argv)[0]);
    /* The loader takes the BQL itself, as it does in mig/dst. */
    bql_unlock();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    QEMUFile *f = qemu_file_new_buffer_input(data, size);
    Error *err = NULL;

    if (!qemu_loadvm_state(f, &err)) {
        assert(err);
        if (expect_load) {
            fprintf(stderr, "fuzz-stream: a seed does not load: %s\n", error_get_pretty(err));
            abort();
        }
        fuzz_assert_printable("refused stream", error_get_pretty(err));
        error_free(err);
    } else {
        assert(!err);
    }
    qemu_fclose(f);
    return 0;
}
