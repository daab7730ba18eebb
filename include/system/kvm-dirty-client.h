/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Clients of the KVM dirty log (accel/kvm/kvm-dirty-clients.c): the
 * migration (every slot), calc-dirty-rate's dirty-bitmap mode (every
 * slot), a display (the slots of its VRAM block). Each client starts and
 * stops on its own; every page written after a client started reaches that
 * client, whatever the others do, in every dirty-log mode.
 *
 * How a client works:
 *
 *   c = kvm_dirty_client_start(kvm_state, "display", vram_rb, errp);
 *   each refresh:
 *       kvm_dirty_client_sync(c, take, opaque);   take() gets each slot's new bits
 *       for each range it is about to read:
 *           kvm_dirty_client_clear(c, slot, first, npages);   re-arm, then
 *           read the pages of the range whose bits take() handed over
 *   kvm_dirty_client_stop(c);
 *
 * A sync reads KVM once per slot (KVM_GET_DIRTY_LOG, or the rings'
 * harvest) and hands what it read to every client tracking the slot, so
 * bits one client's sync consumed in KVM are not lost to the others. A
 * clear re-arms only bits some sync read, and hands those bits once more
 * to every other client tracking the slot (the re-mark rule, explained in
 * kvm-dirty-clients.c): a client may clear whenever it likes.
 *
 * A client's first pass must treat every page as dirty (the migration
 * sends all, a display draws all): take() hands over writes made after
 * the start, not the state at the start.
 *
 * One rule is the client's: a page it read without a clear covering it
 * first (the migration sends a page of a chunk it had nothing to re-arm
 * in) must not be cleared by it again before its next sync. That clear
 * could re-arm a write made after the read, which no bitmap would hold.
 *
 * The display, say, tracking its "vga.vram" block: its take() ORs the
 * bits into a bitmap of its own (allocated once, one bit per VRAM page;
 * slot->ram_offset places the slot in the block), then per dirty run of
 * scanlines it calls kvm_dirty_client_clear() on the slot and converts
 * those lines. It syncs from the main loop; the migration syncs from
 * mig/src at the same time, on its own client.
 */
#ifndef SYSTEM_KVM_DIRTY_CLIENT_H
#define SYSTEM_KVM_DIRTY_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

typedef struct KVMDirtyClient KVMDirtyClient;

/*
 * KVMDirtyTakeFn: the client takes @bits, one bit per page of @slot (bit i
 * is page (slot->ram_offset >> TARGET_PAGE_BITS) + i of slot->rb): pages
 * written since this client's previous sync, or re-marked by another
 * client's clear. The bits are the client's now: the layer forgets them
 * when the callback returns, so it must merge them into a bitmap of its
 * own. Called from kvm_dirty_client_sync() on the caller's thread with the
 * clients lock held: keep it short (a word-wise OR), and never call back
 * into this layer from it.
 */
typedef void KVMDirtyTakeFn(void *opaque, KVMSlot *slot, const unsigned long *bits);

/*
 * kvm_dirty_client_start: tracks the slots that map @rb (NULL: every slot).
 * Slots that were not logging start to (KVM_MEM_LOG_DIRTY_PAGES is
 * reference-counted per slot); the client's bitmaps are allocated here,
 * once. Returns NULL (@errp set) if a slot refused to log, or if @rb is
 * mapped by no slot (NULL on a VM without slots is a client of nothing). @name (a literal) names the client in messages.
 * Any thread (log_lock orders starts and stops); under the BQL in practice.
 */
KVMDirtyClient *kvm_dirty_client_start(KVMState *s, const char *name, const RAMBlock *rb,
                                       Error **errp);
/*
 * kvm_dirty_client_start_deferred: as kvm_dirty_client_start, but no slot
 * starts to log for this client yet: each does at kvm_dirty_client_arm().
 * Until then the client's syncs skip the slot, and writes to it reach the
 * client only if it reads the page after the arm: a deferred client must
 * arm a slot before it reads any page of it (the migration arms a slot
 * when its first pass gets there, so the guest takes no write fault on
 * memory the pass has not reached). Modes that re-arm with clears
 * (clear-log) start nothing write-protected anyway: use the plain start.
 */
KVMDirtyClient *kvm_dirty_client_start_deferred(KVMState *s, const char *name,
                                                const RAMBlock *rb, Error **errp);
/*
 * kvm_dirty_client_arm: @slot starts to log for @c (a no-op if it does
 * already): every write after this returns is caught. 0, or -errno (the
 * slot refused to log: writes to it are not caught). -EINVAL if @c does not
 * track @slot. The client's thread.
 */
int kvm_dirty_client_arm(KVMDirtyClient *c, KVMSlot *slot);
/*
 * kvm_dirty_client_stop: forgets the client's bits and drops its slots'
 * logging references. The other clients lose nothing. NULL is a no-op.
 */
void kvm_dirty_client_stop(KVMDirtyClient *c);
/*
 * kvm_dirty_client_sync: for each slot the client tracks, reads KVM's log,
 * hands the new bits to every client tracking the slot, then calls @take
 * (NULL: drop them) with this client's. 0, or -errno: then the slots after
 * the failing one were not read, and KVM may have re-protected pages whose
 * bits some client has not taken, so a client that cannot lose a page
 * must give up (the migration fails). Never allocates. One thread at a
 * time per client.
 */
int kvm_dirty_client_sync(KVMDirtyClient *c, KVMDirtyTakeFn *take, void *opaque);
/*
 * kvm_dirty_client_clear: re-arms tracking (KVM_CLEAR_DIRTY_LOG) of the
 * pages [first, first+npages) of @slot that a sync has read and nobody has
 * re-armed since; every other client tracking @slot is handed those bits
 * again. Call it right before reading pages of the range: a write after
 * the clear is then in the next sync, one before it is in what you read.
 * A no-op in modes that re-protect on their own (get-log, dirty ring), and
 * before this client's first sync of @slot. 0, or -errno (KVM re-armed
 * nothing: the bits stay, so the next sync hands them over again; the
 * pages may be read anyway). -EINVAL if the client does not track @slot.
 */
int kvm_dirty_client_clear(KVMDirtyClient *c, KVMSlot *slot, uint64_t first, uint64_t npages);
/* True if @c tracks @slot. */
bool kvm_dirty_client_tracks(const KVMDirtyClient *c, const KVMSlot *slot);

#endif
