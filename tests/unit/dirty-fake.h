/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-dirty's fake world: RAMBlocks and KVM slots laid out as a Layout
 * says, the migration's client of the KVM dirty log faked per slot (the
 * kernel's "written since last get/clear" bitmap, deferred arming, injected
 * failures), the model guest's pages, and a trace backend that formats
 * every event. One fake world at a time: setup() makes it, teardown()
 * frees it; the tests read and poke `fake`.
 */
#ifndef TESTS_UNIT_DIRTY_FAKE_H
#define TESTS_UNIT_DIRTY_FAKE_H

#include "qemu/osdep.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "migration/dirty/dirty.h"

#define MAX_BLOCKS 4
#define MAX_SLOTS 6

typedef struct SlotDef {
    int block;
    uint64_t offset, npages;    /* in pages */
} SlotDef;

typedef struct Layout {
    const char *name;
    uint64_t block_pages[MAX_BLOCKS + 1];   /* 0-terminated */
    SlotDef slots[MAX_SLOTS + 1];           /* npages 0 terminates */
} Layout;

typedef struct PageModel {
    uint32_t version;           /* bumped by every write; starts at 1 */
    uint32_t sent;              /* version last sent; 0 = never */
    bool resend_ok;             /* a write was still recorded when sent */
} PageModel;

typedef struct Sim {
    GRand *r;
    DirtyTracker *dt;
    PageModel *pg[MAX_BLOCKS];
    bool running;                   /* the guest may write */
    int race_pct;
    int cur_block;
    uint64_t cur_page, sends, resends;
} Sim;

typedef struct ClearCall {
    int slot;
    uint64_t first, npages;
} ClearCall;

typedef struct DirtyFake {
    GPtrArray *blocks;          /* RAMBlock *, what ram_blocks() returns */
    KVMState *kvm;
    const Layout *layout;
    bool clear_mode;            /* manual protect + initially set */
    bool kvm_logging, vmm_logging;
    unsigned long *kernel[MAX_SLOTS];   /* written since last get/clear */
    GArray *clears;             /* ClearCall, every kvm_dirty_client_clear */
    int fail_clears;            /* the next N kvm_dirty_client_clear fail */
    int sync_ret;               /* injected kvm_dirty_client_sync result */
    bool start_fails;           /* kvm_dirty_client_start refuses (a slot would not log) */
    bool deferred;              /* started deferred: slots log from their arm on */
    bool armed[MAX_SLOTS];      /* the slot logs (all of them unless deferred) */
    int arm_fails;              /* the next N kvm_dirty_client_arm fail */
    int clear_fail_pct;         /* in simulations, clears fail this often */
    bool failed_since_sync;     /* chunks may go unarmed until the next sync */
    Sim *sim;                   /* racing guest writes during sync/clear */
    /* The test's guest writes racing a sync or a clear of @slot (-1: any); NULL: none. */
    void (*race)(Sim *sim, int slot, uint64_t first, uint64_t npages);
} DirtyFake;

/* The one fake world (setup() to teardown()). */
extern DirtyFake fake;
/* dirty_clear trace events seen. */
extern unsigned trace_clears;

extern const Layout pc_layout, small_layout, gaps_layout, unaligned_layout;

/* A tracker over a fake world of layout @l; clear-log (manual protect) if @clear_mode. */
DirtyTracker *setup(const Layout *l, bool clear_mode, unsigned shift);
void teardown(DirtyTracker *dt);

#endif
