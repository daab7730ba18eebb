/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fake kernel for the dirty-log unit tests (test-kvm-dirty-clients.c):
 * kvm_vm_ioctl and kvm_slot_set_flags over a model of each page's state.
 * get-log and clear-log: a write-protect flag and a dirty bit per page. A
 * write to a protected page sets the bit and unprotects it, one to an
 * unprotected page records nothing new; GET copies the bits (get-log: and
 * clears them and re-protects those pages); CLEAR clears the bits asked
 * for and re-protects those pages; turning logging on protects every page
 * (get-log) or sets every bit and protects none (clear-log, INITIALLY_SET).
 * Dirty ring: a write to a protected page pushes an entry to the vCPU's
 * ring and unprotects it (a full ring makes the vCPU harvest first);
 * KVM_RESET_DIRTY_RINGS re-protects the pages of the entries userspace
 * collected. Slots: "ram" in slots 0 and 1, "vga.vram" in slot 2, "rom"
 * in slot 3.
 */
#ifndef TESTS_UNIT_KVM_DIRTY_FAKE_H
#define TESTS_UNIT_KVM_DIRTY_FAKE_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "qemu/typedefs.h"

#define NSLOTS 4
#define NVCPUS 2
#define RING_ENTRIES 32

typedef enum FakeMode { MODE_GET, MODE_CLEAR, MODE_RING } FakeMode;

typedef struct FakeKernel {
    FakeMode mode;
    KVMState *s;
    RAMBlock *blocks[3];
    bool logging[NSLOTS];
    unsigned long *dirty[NSLOTS];   /* get/clear-log: KVM's dirty bits */
    unsigned long *wp[NSLOTS];      /* write-protected: the next write is recorded */
    uint32_t *version[NSLOTS];      /* bumped by every guest write */
    uint32_t push[NVCPUS];          /* the ring's write index */
    int set_flags_calls[NSLOTS];
    int set_flags_fail_slot;        /* -1: never */
    int clear_ret;                  /* injected KVM_CLEAR_DIRTY_LOG result (one call) */
    int reset_ret;                  /* injected KVM_RESET_DIRTY_RINGS result (one call) */
    bool reaper_running;
    GRand *race;                    /* non-NULL: guest writes race the ioctls */
} FakeKernel;

extern FakeKernel k;
extern const uint64_t slot_pages[NSLOTS];
/* Called on every guest write, with the page's new version in k.version. */
extern void (*fake_on_write)(int slot, uint64_t page);

/* A VM with the four slots, its dirty-log mode set up, no client. */
void vm_new(FakeMode mode);
/* Checks nothing logs any more, and frees it all. */
void vm_free(void);
/* vCPU @vcpu writes @page of @slot. */
void guest_write(int slot, uint64_t page, int vcpu);
/* @out := the pages of @slot whose writes KVM would report to a later read of the slot. */
void kvm_reported(int slot, unsigned long *out);
bool kvm_will_report(int slot, uint64_t page);

#endif
