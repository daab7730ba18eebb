/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vmstate unit tests' sample device (every field kind, two levels of
 * subsections, hooks) and helpers that save to and load from memory.
 */
#ifndef TESTS_UNIT_VMSTATE_SAMPLE_H
#define TESTS_UNIT_VMSTATE_SAMPLE_H

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/qemu-file.h"
#include "migration/vmstate.h"

#define VBUF_MAX 64
#define ELEMS_MAX 8

typedef struct Inner {
    uint16_t a;
    uint32_t b;
    uint64_t opt;               /* in subsection "inner/opt", sent when a > 100 */
} Inner;

typedef struct Elem {
    uint32_t index;
    uint64_t data;
} Elem;

typedef struct Sample {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    int32_t i32;
    int64_t i64;
    bool flag;
    unsigned long long ull;     /* a kernel-style __u64 */
    uint8_t buf[5];
    uint32_t vlen;
    uint8_t *vbuf;              /* VBUF_MAX bytes */
    uint8_t a8[3];
    uint16_t a16[2];
    uint32_t a32[2];
    uint64_t a64[2];
    Inner inner;
    Inner inners[2];
    uint32_t n_elems;
    Elem elems[ELEMS_MAX];
    uint32_t extra;             /* subsection "sample/extra" */
    bool want_extra;
    uint64_t more;              /* subsection "sample/more" */
    bool want_more;

    /* Test bookkeeping, not migrated. */
    int pre_saves, pre_loads, post_loads;
    bool fail_pre_save, fail_post_load;
} Sample;

extern const VMStateDescription vmstate_sample;
extern const VMStateDescription vmstate_elem;

Sample *sample_new(void);
void sample_free(Sample *s);
Sample *sample_filled(bool extra, bool more);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Sample, sample_free)
uint8_t *save_buf(const VMStateDescription *vmsd, void *opaque, VMDescWriter *vmdesc,
                  size_t *len);
bool load_buf(const VMStateDescription *vmsd, void *opaque, int version,
              const uint8_t *data, size_t len, size_t *consumed, Error **errp);
void assert_samples_equal(const Sample *a, const Sample *b, bool extra, bool more);

#endif
