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
 * multiples of N bytes, or FUZZ_TRUNCATE_CUTS=FILE into its prefixes of
 * the lengths FILE lists (decimal, one a line, ascending: fuzz-run's
 * choice of cuts), each of which must be refused, then the whole; only a
 * prefix that holds the whole device state and EOF and cuts the trailing
 * vmdesc loads (with the loader's warning), as the stream's source has
 * stopped for good.
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
/* FUZZ_TRUNCATE_CUTS's lengths; NULL: every truncate_step bytes. */
static GArray *truncate_cuts;

/* Reads FUZZ_TRUNCATE_CUTS's file: a bad one is the caller's bug, so abort. */
static GArray *read_cuts(const char *path)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    GArray *cuts = g_array_new(false, false, sizeof(size_t));

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        fprintf(stderr, "fuzz-stream: cannot read %s\n", path);
        abort();
    }
    lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
        guint64 cut;

        if (!**l) {
            continue;
        }
        if (!g_ascii_string_to_unsigned(*l, 10, 0, G_MAXSIZE, &cut, NULL)) {
            fprintf(stderr, "fuzz-stream: %s: not a length: %s\n", path, *l);
            abort();
        }
        g_array_append_val(cuts, cut);
    }
    return cuts;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    expect_load = getenv("FUZZ_EXPECT_LOAD") != NULL;
    truncate_step = getenv("FUZZ_TRUNCATE_STEP") ? atoi(getenv("FUZZ_TRUNCATE_STEP")) : 0;
    if (getenv("FUZZ_TRUNCATE_CUTS")) {
        truncate_cuts = read_cuts(getenv("FUZZ_TRUNCATE_CUTS"));
    }
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

/* The @i-th length to cut at, ascending; size or more once they run out. */
static size_t nth_cut(size_t i, size_t size)
{
    if (truncate_cuts) {
        return i < truncate_cuts->len ? g_array_index(truncate_cuts, size_t, i) : size;
    }
    return i * truncate_step;
}

/* Every prefix cut must be refused; the whole must load. */
static void check_truncations(const uint8_t *data, size_t size)
{
    size_t n = 0, tail = 0;

    for (size_t cut; (cut = nth_cut(n, size)) < size; n++) {
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
    if (truncate_cuts) {
        fprintf(stderr, "fuzz-stream: %zu truncations (at the lengths given) of a %zu-byte "
                "stream refused, %zu in the vmdesc loaded with a warning, the whole loaded\n",
                n - tail, size, tail);
        return;
    }
    fprintf(stderr, "fuzz-stream: %zu truncations (every %zu bytes) of a %zu-byte stream "
            "refused, %zu in the vmdesc loaded with a warning, the whole loaded\n", n - tail,
            truncate_step, size, tail);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (truncate_step || truncate_cuts) {
        check_truncations(data, size);
    } else if (!load_one(data, size) && expect_load) {
        fprintf(stderr, "fuzz-stream: a seed of %zu bytes does not load\n", size);
        abort();
    }
    return 0;
}
