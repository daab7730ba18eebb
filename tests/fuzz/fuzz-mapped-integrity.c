/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the mapped-ram integrity record's decoder
 * (migration/transport/mapped-ram-integrity.c). The input is 16 hex digits, the file
 * offset where the rest begins, then the file's tail before the completion
 * trailer: the record's hex text and its footer. It is decoded as it is,
 * and again with its own hash made right (so mutations reach the checks
 * behind it). A record that decodes must encode back to the same bytes,
 * and its stream ranges must lie in order inside the stream. Seeds: the record of a paused guest's snapshot
 * and records encoded by scripts/migstream/integrity.py (an independent
 * implementation), written by scripts/fuzz-corpus.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "qemu/xxh64.h"
#include "migration/transport/mapped-ram-integrity.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

typedef struct Ranges {
    const MappedRamIntegrity *r;
    uint64_t at;
} Ranges;

static void check_range(uint64_t start, uint64_t end, void *opaque)
{
    Ranges *c = opaque;

    assert(start >= c->at && start < end && end <= c->r->stream_end);
    c->at = end;
}

/* Decodes @hex; one that decodes must encode back to itself (the footer included). */
static void decode_one(const char *hex, uint64_t hex_len, uint64_t pos, const uint8_t *footer)
{
    MappedRamIntegrity *r;
    Error *err = NULL;

    r = mri_decode(hex, hex_len, pos, &err);
    if (!r) {
        assert(err);
        error_free(err);
        return;
    }
    {
        Ranges c = { .r = r, .at = r->stream_start };
        size_t n;
        char *again = mri_encode(r, &n);

        assert(n == hex_len + MRI_FOOTER_SIZE);
        assert(!memcmp(again, hex, hex_len));
        assert(!memcmp(again + hex_len, footer, MRI_FOOTER_SIZE));
        g_free(again);
        mri_stream_ranges(r, check_range, &c);
    }
    mri_free(r);
}

/*
 * The same text with the record's own hash made right: a mutation then
 * reaches the checks behind it (counts, lengths, offsets), which a
 * checksum would otherwise hide from the fuzzer.
 */
static void decode_rehashed(const char *hex, uint64_t hex_len, uint64_t pos,
                            const uint8_t *footer)
{
    g_autofree char *copy = NULL;
    g_autofree uint8_t *bin = NULL;
    size_t n = hex_len / 2;

    if (hex_len % 2 || n < 8) {
        return;
    }
    bin = g_malloc(n);
    for (size_t i = 0; i < n; i++) {
        int hi = g_ascii_xdigit_value(hex[2 * i]), lo = g_ascii_xdigit_value(hex[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            return;
        }
        bin[i] = hi << 4 | lo;
    }
    stq_le_p(bin + n - 8, xxh64(bin, n - 8, 0));
    copy = g_malloc(hex_len);
    memcpy(copy, hex, hex_len - 16);
    for (int i = 0; i < 16; i++) {
        copy[hex_len - 16 + i] = "0123456789abcdef"[bin[n - 8 + i / 2] >> (i % 2 ? 0 : 4) & 15];
    }
    decode_one(copy, hex_len, pos, footer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char digits[17];
    guint64 pos;
    uint64_t hex_len, end;
    const uint8_t *tail = data + 16;
    size_t len = size - 16;
    Error *err = NULL;

    if (size < 16 + MRI_FOOTER_SIZE) {
        return 0;
    }
    memcpy(digits, data, 16);
    digits[16] = '\0';
    if (!g_ascii_string_to_unsigned(digits, 16, 0, 1ULL << 60, &pos, NULL)) {
        return 0;
    }
    end = pos + len;
    /* Only the tail is here: the record must fit in it (in a file: after the stream's start). */
    if (!mri_parse_footer(tail + len - MRI_FOOTER_SIZE, pos, end, &hex_len, &err)) {
        assert(!err);
        return 0;
    }
    if (!hex_len) {
        assert(err);
        error_free(err);
        return 0;
    }
    assert(!err && hex_len <= len - MRI_FOOTER_SIZE);
    decode_one((const char *)tail + len - MRI_FOOTER_SIZE - hex_len, hex_len,
               end - MRI_FOOTER_SIZE - hex_len, tail + len - MRI_FOOTER_SIZE);
    decode_rehashed((const char *)tail + len - MRI_FOOTER_SIZE - hex_len, hex_len,
                    end - MRI_FOOTER_SIZE - hex_len, tail + len - MRI_FOOTER_SIZE);
    return 0;
}
