/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Big- and little-endian loads and stores at unaligned addresses (wire and file formats). */
#ifndef QEMU_BSWAP_H
#define QEMU_BSWAP_H

#include <glib.h>
#include <stdint.h>
#include <string.h>

static inline void stw_be_p(void *p, uint16_t v)
{
    v = GUINT16_TO_BE(v);
    memcpy(p, &v, sizeof(v));
}

static inline uint16_t lduw_be_p(const void *p)
{
    uint16_t v;

    memcpy(&v, p, sizeof(v));
    return GUINT16_FROM_BE(v);
}

static inline void stl_be_p(void *p, uint32_t v)
{
    v = GUINT32_TO_BE(v);
    memcpy(p, &v, sizeof(v));
}

static inline void stq_be_p(void *p, uint64_t v)
{
    v = GUINT64_TO_BE(v);
    memcpy(p, &v, sizeof(v));
}

static inline uint32_t ldl_be_p(const void *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return GUINT32_FROM_BE(v);
}

static inline uint64_t ldq_be_p(const void *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return GUINT64_FROM_BE(v);
}

static inline void stw_le_p(void *p, uint16_t v)
{
    v = GUINT16_TO_LE(v);
    memcpy(p, &v, sizeof(v));
}

static inline void stl_le_p(void *p, uint32_t v)
{
    v = GUINT32_TO_LE(v);
    memcpy(p, &v, sizeof(v));
}

static inline void stq_le_p(void *p, uint64_t v)
{
    v = GUINT64_TO_LE(v);
    memcpy(p, &v, sizeof(v));
}

static inline uint32_t ldl_le_p(const void *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return GUINT32_FROM_LE(v);
}

static inline uint64_t ldq_le_p(const void *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return GUINT64_FROM_LE(v);
}

#endif
