/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: a whole incoming migration stream, loaded from memory by
 * the loader mig/dst runs (qemu_loadvm_state) into the paused fuzz
 * machine. A refusal must come with a printable error; nothing may crash,
 * hang or leak. Seeds: streams of the workload firmware (paused, running,
 * background snapshot) written by scripts/fuzz-corpus.
 *
 * Two checks for scripts/fuzz-run, chosen by the environment:
 * FUZZ_EXPECT_LOAD=1 makes a refused input abort (every seed must load
 * whole); FUZZ_TRUNCATE_STEP=N turns each input into all its prefixes at
 * multiples of N bytes, each of which must be refused, then the whole;
 * only a prefix that holds the whole device state and EOF and cuts the
 * trailing vmdesc loads (with the loader's warning), as the stream's
 * source has stopped for good.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "migration/qemu-file.h"
#include "migration/stream/savevm.h"
#include "migration/incoming/loadvm.h"
#include "fuzz.h"

static bool expect_load;
static size_t truncate_step;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    expect_load = getenv("FUZZ_EXPECT_LOAD") != NULL;
    truncate_step = getenv("FUZZ_TRUNCATE_STEP") ? atoi(getenv("FUZZ_TRUNCATE_STEP")) : 0;
    fuzz_machine_start((*argv)[0]);
    /* The loader takes the BQL itself, as it does in mig/dst. */
    bql_unlock();
    return 0;
}

/* Loads @data[0..size); true if the whole stream loaded. */
static bool load_one(const uint8_t *data, size_t size)
{
    QEMUFile *f = qemu_file_new_buffer_input(data, size);
    Error *err = NULL;
    bool ok = qemu_loadvm_state(f, &err);

    if (!ok) {
        assert(err);
        fuzz_assert_printable("refused stream", error_get_pretty(err));
        error_free(err);
    } else {
        assert(!err);
    }
    qemu_fclose(f);
    return ok;
}

/* Every prefix at a multiple of truncate_step must be refused; the whole must load. */
static void check_truncations(const uint8_t *data, size_t size)
{
    size_t n = 0, tail = 0;

    for (size_t cut = 0; cut < size; cut += truncate_step, n++) {
        if (load_one(data, cut)) {
            if (qemu_loadvm_vmdesc_damage()) {
                tail++;
                continue;
            }
            fprintf(stderr, "fuzz-stream: the first %zu of %zu bytes loaded as a whole stream\n",
                    cut, size);
            abort();
        }
    }
    if (!load_one(data, size)) {
        fprintf(stderr, "fuzz-stream: the whole stream of %zu bytes does not load\n", size);
        abort();
    }
    fprintf(stderr, "fuzz-stream: %zu truncations (every %zu bytes) of a %zu-byte stream "
            "refused, %zu in the vmdesc loaded with a warning, the whole loaded\n", n - tail,
            truncate_step, size, tail);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (truncate_step) {
        check_truncations(data, size);
    } else if (!load_one(data, size) && expect_load) {
        fprintf(stderr, "fuzz-stream: a seed of %zu bytes does not load\n", size);
        abort();
    }
    return 0;
}
