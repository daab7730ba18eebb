/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The work area's first contents (fill=): random bytes, text-like bytes,
 * sparse pages, zeroed pages, or nothing at all. At CPL3, natively: a fill
 * touches every page of the area.
 */
#include "workload.h"

/* Random bytes, so that zero-page detection cannot shortcut migration. */
static void fill_random(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    unsigned i;

    for (i = 0; i < g_nsegs; i++) {
        uint64_t *p = (uint64_t *)g_segs[i].start;
        uint64_t *end = p + g_segs[i].pages * (PAGE_SIZE / 8);

        while (p < end) {
            *p++ = xorshift(&x);
        }
    }
}

/*
 * Memory that compresses like real memory, for the compression benchmarks:
 * "text" is lines of words drawn from a small vocabulary (deflate and zstd
 * shrink it several times, no page is zero); "sparse" keeps 64 random bytes
 * at the start of each page and zeroes after them (mostly-zero pages that
 * zero-page detection must not skip).
 */
static void fill_text(void)
{
    static const char *const words[] = {
        "the", "of", "and", "to", "in", "is", "that", "for", "it", "with", "as", "was",
        "on", "be", "at", "by", "this", "from", "or", "an", "which", "are", "not", "have",
        "struct", "return", "static", "int", "void", "if", "else", "while",
    };
    uint64_t x = 0x2545f4914f6cdd1dULL, n = 0;
    unsigned i;

    for (i = 0; i < g_nsegs; i++) {
        char *p = (char *)g_segs[i].start;
        char *end = p + g_segs[i].pages * PAGE_SIZE;

        while (p < end) {
            const char *w = words[xorshift(&x) % (sizeof(words) / sizeof(words[0]))];

            while (*w && p < end) {
                *p++ = *w++;
            }
            if (p < end) {
                *p++ = ++n % 12 ? ' ' : '\n';
            }
        }
    }
}

static void fill_sparse(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    unsigned i;

    for (i = 0; i < g_nsegs; i++) {
        for (uint64_t pg = 0; pg < g_segs[i].pages; pg++) {
            uint64_t *p = (uint64_t *)(g_segs[i].start + pg * PAGE_SIZE);

            for (unsigned k = 0; k < 8; k++) {
                p[k] = xorshift(&x);
            }
        }
    }
}

/*
 * "zeroed": one zero store per page. The pages are then the host's own
 * (populated, all zero), like memory a real guest used and freed, so the
 * migration must look at them to find they are zero; "zero" leaves pages
 * the host never populated.
 */
static void fill_zeroed(void)
{
    for (unsigned i = 0; i < g_nsegs; i++) {
        for (uint64_t pg = 0; pg < g_segs[i].pages; pg++) {
            *(volatile uint64_t *)(g_segs[i].start + pg * PAGE_SIZE) = 0;
        }
    }
}

/* "zero" writes nothing: the pages stay ones the host never populated. */
void fill_area(enum fill fill)
{
    switch (fill) {
    case FILL_RANDOM:
        fill_random();
        break;
    case FILL_TEXT:
        fill_text();
        break;
    case FILL_SPARSE:
        fill_sparse();
        break;
    case FILL_ZEROED:
        fill_zeroed();
        break;
    case FILL_ZERO:
        break;
    }
}
