/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fuzz targets' driver in builds without libFuzzer (gcc, or clang
 * without --enable-fuzzing). It takes the part of libFuzzer's command line
 * that scripts/fuzz-run uses:
 *
 *   fuzz-TARGET [-max_total_time=S] [-runs=N] [-seed=N] [-timeout=S]
 *               [-artifact_prefix=P] FILE|DIR...
 *
 * It runs every input once, then mutates inputs picked from them at random
 * (bit flips, interesting integers, inserted, deleted, repeated and
 * spliced ranges, truncation) until the time or run budget is spent. There
 * is no coverage guidance: that needs libFuzzer. The input that crashes,
 * trips a sanitizer or runs past the timeout is written to
 * P"crash-standalone-N" first, so it can become a regression input.
 * Prints libFuzzer's "Done N runs in S second(s)" line at the end.
 */
#include "qemu/osdep.h"
#include <signal.h>
#include <sys/time.h>
#include "fuzz.h"

#define STANDALONE_MAX_INPUT (16 * 1024 * 1024)

/* Set by sanitizer runtimes, absent otherwise. */
void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

typedef struct Input {
    uint8_t *data;
    size_t len;
} Input;

static GArray *corpus;          /* of Input */
static const uint8_t *cur_data; /* the input being run, for the crash handlers */
static size_t cur_len;
static uint64_t execs;
static const char *artifact_prefix = "";
static unsigned timeout_s = 20;

/* Async-signal-safe: write the input being run to a crash file and say where. */
static void save_current_input(void)
{
    char path[512];
    int fd;

    if (!cur_data) {
        return;
    }
    snprintf(path, sizeof(path), "%scrash-standalone-%" PRIu64, artifact_prefix, execs);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        size_t off = 0;
        while (off < cur_len) {
            ssize_t n = write(fd, cur_data + off, cur_len - off);
            if (n <= 0) {
                break;
            }
            off += n;
        }
        close(fd);
        write(2, "standalone: input written to ", 29);
        write(2, path, strlen(path));
        write(2, "\n", 1);
    }
    cur_data = NULL;
}

static void crash_signal(int sig)
{
    if (sig == SIGALRM) {
        write(2, "standalone: timeout\n", 20);
    }
    save_current_input();
    signal(sig == SIGALRM ? SIGABRT : sig, SIG_DFL);
    raise(sig == SIGALRM ? SIGABRT : sig);
}

static void run_one(const uint8_t *data, size_t len)
{
    /* A private copy, as libFuzzer gives: an overread past @len is caught by ASan. */
    uint8_t *copy = g_malloc(MAX(len, 1));

    memcpy(copy, data, len);

    cur_data = copy;
    cur_len = len;
    alarm(timeout_s);
    LLVMFuzzerTestOneInput(copy, len);
    alarm(0);
    cur_data = NULL;
    execs++;
    g_free(copy);
}

static void add_file(const char *path)
{
    Input in;
    gchar *data;
    gsize len;
    GError *err = NULL;

    if (!g_file_get_contents(path, &data, &len, &err)) {
        fprintf(stderr, "standalone: %s\n", err->message);
        exit(1);
    }
    in.data = (uint8_t *)data;
    in.len = MIN(len, STANDALONE_MAX_INPUT);
    g_array_append_val(corpus, in);
}

static void add_path(const char *path)
{
    GDir *dir;
    GPtrArray *names;
    const char *name;

    if (!g_file_test(path, G_FILE_TEST_IS_DIR)) {
        add_file(path);
        return;
    }
    dir = g_dir_open(path, 0, NULL);
    if (!dir) {
        fprintf(stderr, "standalone: cannot open %s\n", path);
        exit(1);
    }
    names = g_ptr_array_new_with_free_func(g_free);
    while ((name = g_dir_read_name(dir))) {
        if (name[0] != '.') {
            g_ptr_array_add(names, g_build_filename(path, name, NULL));
        }
    }
    g_dir_close(dir);
    /* Sorted, so that a run replays in the same order each time. */
    g_ptr_array_sort(names, (GCompareFunc)g_strcmp0);
    for (guint i = 0; i < names->len; i++) {
        const char *p = g_ptr_array_index(names, i);
        if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) {
            add_file(p);
        }
    }
    g_ptr_array_free(names, TRUE);
}

/* ---- mutations ---- */

static const uint32_t interesting[] = {
    0, 1, 0x7e, 0x7f, 0x80, 0xff, 0x100, 0x1000, 0x7fff, 0x8000, 0xffff, 0x10000,
    0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
};

static void insert_bytes(GByteArray *b, size_t pos, const uint8_t *data, size_t n)
{
    size_t old = b->len;

    g_byte_array_set_size(b, old + n);
    memmove(b->data + pos + n, b->data + pos, old - pos);
    memcpy(b->data + pos, data, n);
}

/* A random length in [1, max] (MIN() would draw twice). */
static size_t rand_len(GRand *r, size_t max)
{
    return g_rand_int_range(r, 1, MIN(max, 1u << 20) + 1);
}

static void mutate_once(GByteArray *b, GRand *r, size_t max_len)
{
    size_t len = b->len, pos, n;

    switch (g_rand_int_range(r, 0, 8)) {
    case 0:     /* flip a bit */
        if (len) {
            b->data[g_rand_int_range(r, 0, len)] ^= 1u << g_rand_int_range(r, 0, 8);
        }
        break;
    case 1:     /* a random byte */
        if (len) {
            b->data[g_rand_int_range(r, 0, len)] = g_rand_int_range(r, 0, 256);
        }
        break;
    case 2:     /* an interesting big-endian 32-bit value (lengths, counts, ids) */
        if (len >= 4) {
            uint32_t v = interesting[g_rand_int_range(r, 0, G_N_ELEMENTS(interesting))];
            pos = g_rand_int_range(r, 0, len - 3);
            b->data[pos] = v >> 24;
            b->data[pos + 1] = v >> 16;
            b->data[pos + 2] = v >> 8;
            b->data[pos + 3] = v;
        }
        break;
    case 3:     /* insert random bytes */
        if (len < max_len) {
            uint8_t ins[16];
            n = rand_len(r, MIN(sizeof(ins), max_len - len));
            for (size_t i = 0; i < n; i++) {
                ins[i] = g_rand_int_range(r, 0, 256);
            }
            insert_bytes(b, g_rand_int_range(r, 0, len + 1), ins, n);
        }
        break;
    case 4:     /* delete a range */
        if (len) {
            pos = g_rand_int_range(r, 0, len);
            n = rand_len(r, MIN(len - pos, 64));
            g_byte_array_remove_range(b, pos, n);
        }
        break;
    case 5:     /* repeat a range */
        if (len && len < max_len) {
            pos = g_rand_int_range(r, 0, len);
            n = rand_len(r, MIN(MIN(len - pos, 256), max_len - len));
            g_autofree uint8_t *dup = g_memdup2(b->data + pos, n);
            insert_bytes(b, pos, dup, n);
        }
        break;
    case 6:     /* truncate */
        if (len) {
            g_byte_array_set_size(b, g_rand_int_range(r, 0, len));
        }
        break;
    default: {  /* splice in a range of another input at the same offset */
        const Input *o = &g_array_index(corpus, Input, g_rand_int_range(r, 0, corpus->len));
        if (o->len && len) {
            pos = g_rand_int_range(r, 0, MIN(len, o->len));
            n = rand_len(r, MIN(256, MIN(len, o->len) - pos));
            memcpy(b->data + pos, o->data + pos, n);
        }
        break;
    }
    }
}

static bool opt_value(const char *arg, const char *name, const char **val)
{
    size_t n = strlen(name);

    if (!strncmp(arg, name, n) && arg[n] == '=') {
        *val = arg + n + 1;
        return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    uint64_t max_time = 0, runs = 0, seed = 0;
    size_t max_len = 0, replayed;
    int64_t start, last_report;
    const char *v;
    GByteArray *b;
    GRand *r;

    corpus = g_array_new(FALSE, FALSE, sizeof(Input));
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (opt_value(argv[i], "-max_total_time", &v)) {
            max_time = g_ascii_strtoull(v, NULL, 10);
        } else if (opt_value(argv[i], "-runs", &v)) {
            runs = g_ascii_strtoull(v, NULL, 10);
        } else if (opt_value(argv[i], "-seed", &v)) {
            seed = g_ascii_strtoull(v, NULL, 10);
        } else if (opt_value(argv[i], "-timeout", &v)) {
            timeout_s = g_ascii_strtoull(v, NULL, 10);
        } else if (opt_value(argv[i], "-artifact_prefix", &v)) {
            artifact_prefix = v;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "standalone: ignoring %s (a libFuzzer option)\n", argv[i]);
        } else {
            add_path(argv[i]);
        }
    }
    if (__sanitizer_set_death_callback) {
        __sanitizer_set_death_callback(save_current_input);
    }
    signal(SIGSEGV, crash_signal);
    signal(SIGBUS, crash_signal);
    signal(SIGFPE, crash_signal);
    signal(SIGILL, crash_signal);
    signal(SIGABRT, crash_signal);
    signal(SIGALRM, crash_signal);

    start = g_get_monotonic_time();
    for (guint i = 0; i < corpus->len; i++) {
        const Input *in = &g_array_index(corpus, Input, i);
        run_one(in->data, in->len);
        max_len = MAX(max_len, in->len);
    }
    replayed = execs;
    fprintf(stderr, "standalone: replayed %zu inputs in %.1f s\n", replayed,
            (g_get_monotonic_time() - start) / 1e6);
    if (!corpus->len && (max_time || runs)) {
        Input empty = { g_malloc0(1), 0 };
        g_array_append_val(corpus, empty);
    }
    max_len = MAX(max_len, 4096);

    if (!seed) {
        seed = g_get_real_time() & 0xffffffff;
    }
    fprintf(stderr, "standalone: mutating with -seed=%" PRIu64 "\n", seed);
    r = g_rand_new_with_seed(seed);
    b = g_byte_array_new();
    last_report = start;
    while (max_time || runs) {
        int64_t now = g_get_monotonic_time();
        const Input *in;

        if ((max_time && now - start >= (int64_t)max_time * G_USEC_PER_SEC) ||
            (runs && execs - replayed >= runs)) {
            break;
        }
        if (now - last_report >= 10 * G_USEC_PER_SEC) {
            fprintf(stderr, "#%" PRIu64 " execs in %.0f s\n", execs, (now - start) / 1e6);
            last_report = now;
        }
        in = &g_array_index(corpus, Input, g_rand_int_range(r, 0, corpus->len));
        g_byte_array_set_size(b, 0);
        g_byte_array_append(b, in->data, in->len);
        for (int k = g_rand_int_range(r, 1, 9); k > 0; k--) {
            mutate_once(b, r, max_len);
        }
        run_one(b->data, b->len);
    }
    fprintf(stderr, "Done %" PRIu64 " runs in %" PRId64 " second(s)\n", execs,
            (g_get_monotonic_time() - start) / G_USEC_PER_SEC);
    g_byte_array_free(b, TRUE);
    g_rand_free(r);
    return 0;
}
