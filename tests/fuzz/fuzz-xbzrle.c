/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the XBZRLE decoder. The input is the page the destination
 * holds (4096 bytes, zero-padded if shorter) followed by a delta. A refused
 * delta must leave the page as it was; an accepted one must give a page
 * that the encoder's delta of (old, decoded) reproduces. Seeds: deltas
 * between real pages of the paused and the running seed streams, encoded
 * by scripts/fuzz-corpus's own encoder (an independent implementation).
 */
#include "qemu/osdep.h"
#include "migration/transport/xbzrle.h"
#include "fuzz.h"

#define PAGE 4096

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t old[PAGE], page[PAGE], again[PAGE], enc[3 * PAGE];
    const uint8_t *delta = data + MIN(size, PAGE);
    size_t delta_len = size - MIN(size, PAGE);
    int n;

    memset(old, 0, PAGE);
    memcpy(old, data, MIN(size, PAGE));
    memcpy(page, old, PAGE);
    if (xbzrle_decode(delta, delta_len, page, PAGE) < 0) {
        assert(!memcmp(page, old, PAGE));
        return 0;
    }
    n = xbzrle_encode(old, page, PAGE, enc, sizeof(enc));
    assert(n >= 0);
    memcpy(again, old, PAGE);
    assert(xbzrle_decode(enc, n, again, PAGE) == 0);
    assert(!memcmp(again, page, PAGE));
    return 0;
}
