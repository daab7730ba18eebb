/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Freestanding helpers: building output lines (decimal, hex, one-decimal
 * fixed point), parsing numbers, and the mem* functions the compiler may
 * call. Used from both CPL0 and CPL3, so nothing here touches hardware.
 */
#include "workload.h"

/* Where ln_emit() sends a line: the UART at CPL0, the gate at CPL3. */
void (*g_out)(const char *s, size_t n) = svc_print;

/* String instructions, so the compiler cannot turn these into self-calls. */
void *memset(void *d, int c, size_t n)
{
    void *p = d;

    asm volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(c) : "memory");
    return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
    void *p = d;

    asm volatile("rep movsb" : "+D"(p), "+S"(s), "+c"(n) :: "memory");
    return d;
}

void ln_mem(struct line *l, const char *s, size_t n)
{
    while (n-- && l->n < sizeof(l->b) - 1) {
        l->b[l->n++] = *s++;
    }
}

void ln_str(struct line *l, const char *s)
{
    while (*s && l->n < sizeof(l->b) - 1) {
        l->b[l->n++] = *s++;
    }
}

void ln_u64(struct line *l, uint64_t v)
{
    char tmp[20];
    size_t i = 0;

    do {
        tmp[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (i && l->n < sizeof(l->b) - 1) {
        l->b[l->n++] = tmp[--i];
    }
}

void ln_key(struct line *l, const char *key, uint64_t v)
{
    ln_str(l, key);
    ln_u64(l, v);
}

void ln_hex(struct line *l, uint64_t v)
{
    char tmp[16];
    size_t i = 0;

    ln_str(l, "0x");
    do {
        tmp[i++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    while (i && l->n < sizeof(l->b) - 1) {
        l->b[l->n++] = tmp[--i];
    }
}

/* 1996 -> "199.6": rates are kept in tenths to avoid floating point. */
void ln_tenths(struct line *l, uint64_t tenths)
{
    ln_u64(l, tenths / 10);
    ln_str(l, ".");
    ln_u64(l, tenths % 10);
}

/* The buffer keeps one byte spare so the newline always fits. */
void ln_emit(struct line *l)
{
    l->b[l->n++] = '\n';
    g_out(l->b, l->n);
    l->n = 0;
}

bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    if (n == 0 || n > 19) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

bool mem_eq(const char *s, size_t n, const char *lit)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (lit[i] != s[i]) {
            return false;
        }
    }
    return lit[n] == '\0';
}
