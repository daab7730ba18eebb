/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to accel/kvm: the CPUID feature bits that have names, with
 * QEMU's spellings (what -cpu host,NAME=on|off, qom-get on a vCPU and
 * query-cpu-model-expansion use).
 */
#ifndef ACCEL_KVM_CPUID_FEATURES_H
#define ACCEL_KVM_CPUID_FEATURES_H

#include <stddef.h>
#include <stdint.h>

enum { R_EAX, R_EBX, R_ECX, R_EDX };

typedef struct CpuidFeature {
    const char *name;
    uint32_t leaf, subleaf;
    int reg;                    /* R_EAX .. R_EDX */
    int bit;                    /* the bit its value is read from */
    uint32_t alias_mask;        /* more bits of the register under the same name */
} CpuidFeature;

/* At most this many named features (32 per register of the table). */
#define CPUID_FEATURES_MAX 512

/* Feature @i (0 .. cpuid_feature_count() - 1), in table order. */
const CpuidFeature *cpuid_feature(size_t i);
size_t cpuid_feature_count(void);
/* The index of feature @name, or -1. */
int cpuid_feature_lookup(const char *name);

#endif
