/* SPDX-License-Identifier: GPL-2.0-or-later */
/* x86 port I/O, for CPL0 code only (IOPL is 0 at CPL3). */
#ifndef WORKLOAD_PORTIO_H
#define WORKLOAD_PORTIO_H

#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v)
{
    asm volatile("outb %0, %1" :: "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
    uint8_t v;

    asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static inline void outw(uint16_t port, uint16_t v)
{
    asm volatile("outw %0, %1" :: "a"(v), "Nd"(port));
}

static inline uint16_t inw(uint16_t port)
{
    uint16_t v;

    asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static inline void outl(uint16_t port, uint32_t v)
{
    asm volatile("outl %0, %1" :: "a"(v), "Nd"(port));
}

static inline uint32_t inl(uint16_t port)
{
    uint32_t v;

    asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

#endif
