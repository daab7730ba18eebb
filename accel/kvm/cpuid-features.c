/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The named CPUID feature bits (cpuid-features.h), one row per register
 * of a leaf, 32 names per row, NULL where a bit has no name a user can
 * set (reserved, or computed by the CPU such as OSXSAVE). A name given
 * twice in a row covers both bits (QEMU 7.2's kvmclock: the old and the
 * new MSRs), its value read from the first. The names are
 * QEMU's, so that management software built for QEMU finds them;
 * test-probe compares every one, and its value on this host, with QEMU
 * 7.2's static expansion of the host CPU when that binary is installed.
 */
#include "qemu/osdep.h"
#include "cpuid-features.h"

typedef struct CpuidWord {
    uint32_t leaf, subleaf;
    int reg;
    const char *names[32];
} CpuidWord;

static const CpuidWord cpuid_words[] = {
    { 1, 0, R_EDX, {
        "fpu", "vme", "de", "pse", "tsc", "msr", "pae", "mce",
        "cx8", "apic", NULL, "sep", "mtrr", "pge", "mca", "cmov",
        "pat", "pse36", "pn", "clflush", NULL, "ds", "acpi", "mmx",
        "fxsr", "sse", "sse2", "ss", "ht", "tm", "ia64", "pbe" } },
    { 1, 0, R_ECX, {
        "pni", "pclmulqdq", "dtes64", "monitor", "ds-cpl", "vmx", "smx", "est",
        "tm2", "ssse3", "cid", NULL, "fma", "cx16", "xtpr", "pdcm",
        NULL, "pcid", "dca", "sse4.1", "sse4.2", "x2apic", "movbe", "popcnt",
        "tsc-deadline", "aes", "xsave", NULL, "avx", "f16c", "rdrand", "hypervisor" } },
    { 7, 0, R_EBX, {
        "fsgsbase", "tsc-adjust", "sgx", "bmi1", "hle", "avx2", NULL, "smep",
        "bmi2", "erms", "invpcid", "rtm", NULL, NULL, "mpx", NULL,
        "avx512f", "avx512dq", "rdseed", "adx", "smap", "avx512ifma", "pcommit", "clflushopt",
        "clwb", "intel-pt", "avx512pf", "avx512er", "avx512cd", "sha-ni", "avx512bw",
        "avx512vl" } },
    { 7, 0, R_ECX, {
        NULL, "avx512vbmi", "umip", "pku", NULL, "waitpkg", "avx512vbmi2", NULL,
        "gfni", "vaes", "vpclmulqdq", "avx512vnni", "avx512bitalg", NULL, "avx512-vpopcntdq",
        NULL,
        "la57", NULL, NULL, NULL, NULL, NULL, "rdpid", NULL,
        "bus-lock-detect", "cldemote", NULL, "movdiri", "movdir64b", NULL, "sgxlc", "pks" } },
    { 7, 0, R_EDX, {
        NULL, NULL, "avx512-4vnniw", "avx512-4fmaps", "fsrm", NULL, NULL, NULL,
        "avx512-vp2intersect", NULL, "md-clear", NULL, NULL, NULL, "serialize", NULL,
        "tsx-ldtrk", NULL, NULL, NULL, NULL, NULL, "amx-bf16", "avx512-fp16",
        "amx-tile", "amx-int8", "spec-ctrl", "stibp", NULL, "arch-capabilities",
        "core-capability", "ssbd" } },
    { 0xd, 1, R_EAX, {
        "xsaveopt", "xsavec", "xgetbv1", "xsaves", "xfd" } },
    { 0x80000001, 0, R_EDX, {
        [11] = "syscall", [20] = "nx", [22] = "mmxext", [25] = "fxsr-opt",
        [26] = "pdpe1gb", [27] = "rdtscp", [29] = "lm", [30] = "3dnowext", [31] = "3dnow" } },
    { 0x80000001, 0, R_ECX, {
        "lahf-lm", "cmp-legacy", "svm", "extapic", "cr8legacy", "abm", "sse4a", "misalignsse",
        "3dnowprefetch", "osvw", "ibs", "xop", "skinit", "wdt", NULL, "lwp",
        "fma4", "tce", NULL, "nodeid-msr", NULL, "tbm", "topoext", "perfctr-core",
        "perfctr-nb" } },
    { 0x80000007, 0, R_EDX, { [8] = "invtsc" } },
    { 0x80000008, 0, R_EBX, {
        [0] = "clzero", [2] = "xsaveerptr", [9] = "wbnoinvd", [12] = "ibpb", [14] = "ibrs",
        [15] = "amd-stibp", [24] = "amd-ssbd", [25] = "virt-ssbd", [26] = "amd-no-ssb" } },
    { 0x40000001, 0, R_EAX, {
        "kvmclock", "kvm-nopiodelay", "kvm-mmu", "kvmclock", "kvm-asyncpf", "kvm-steal-time",
        "kvm-pv-eoi", "kvm-pv-unhalt", NULL, "kvm-pv-tlb-flush", NULL,
        "kvm-pv-ipi", "kvm-poll-control", "kvm-pv-sched-yield", "kvm-asyncpf-int",
        "kvm-msi-ext-dest-id", [24] = "kvmclock-stable-bit" } },
};

G_STATIC_ASSERT(ARRAY_SIZE(cpuid_words) * 32 <= CPUID_FEATURES_MAX);

/* The rows flattened, built on first use (option parsing, one thread). */
static CpuidFeature features[CPUID_FEATURES_MAX];
static size_t nfeatures;

static void cpuid_features_build(void)
{
    if (nfeatures) {
        return;
    }
    for (size_t w = 0; w < ARRAY_SIZE(cpuid_words); w++) {
        size_t first = nfeatures;

        for (int bit = 0; bit < 32; bit++) {
            const char *name = cpuid_words[w].names[bit];
            size_t i;

            if (!name) {
                continue;
            }
            for (i = first; i < nfeatures && strcmp(features[i].name, name); i++) {
                /* a second bit of a name already in this register? */
            }
            if (i < nfeatures) {
                features[i].alias_mask |= 1u << bit;
                continue;
            }
            features[nfeatures++] = (CpuidFeature) {
                .name = name, .leaf = cpuid_words[w].leaf, .subleaf = cpuid_words[w].subleaf,
                .reg = cpuid_words[w].reg, .bit = bit,
            };
        }
    }
}

size_t cpuid_feature_count(void)
{
    cpuid_features_build();
    return nfeatures;
}

const CpuidFeature *cpuid_feature(size_t i)
{
    cpuid_features_build();
    return i < nfeatures ? &features[i] : NULL;
}

int cpuid_feature_lookup(const char *name)
{
    cpuid_features_build();
    for (size_t i = 0; i < nfeatures; i++) {
        if (!strcmp(features[i].name, name)) {
            return i;
        }
    }
    return -1;
}
