/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/outgoing/snapshot-fault.c's freeze: the
 * background snapshot write-protects RAM while the guest still runs, so a
 * write before the stop must only unprotect its page (the snapshot's
 * instant has not come), and the freeze must protect exactly those pages
 * again. A real userfaultfd on anonymous memory and a real mig/uffd; the
 * page source (snapshot-ram.c) is a stub that records what reached it.
 * The protection of each page is read from the kernel's page tables
 * (/proc/self/pagemap, bit 57: the PTE is uffd-wp protected).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "migration/outgoing/snapshot-fault.h"
#include <sys/mman.h>

#define NPAGES 32
#define PAGE ((size_t)TARGET_PAGE_SIZE)
#define PM_UFFD_WP (1ULL << 57)

/* ---- The page source, stubbed: what the snapshot's faults hand it ---- */
static int stub_uffd = -1;
static uint64_t stub_addrs[NPAGES];
static int stub_calls;          /* mig/uffd writes (release), the test reads (acquire) */

SnapFaultOutcome snapshot_ram_handle_fault(SnapRam *sr, uint64_t addr, int64_t t_wake)
{
    int n = __atomic_load_n(&stub_calls, __ATOMIC_ACQUIRE);

    if (n < NPAGES) {
        stub_addrs[n] = addr & ~(uint64_t)(PAGE - 1);
    }
    __atomic_store_n(&stub_calls, n + 1, __ATOMIC_RELEASE);
    /* As the real one does once the copy is taken: unprotect, which wakes the writer. */
    g_assert_cmpint(uffd_change_protection(stub_uffd, (void *)(uintptr_t)(addr & ~(PAGE - 1)),
                                           PAGE, false), ==, 0);
    return SNAP_FAULT_SAVED;
}

void snapshot_ram_stopping(SnapRam *sr)
{
}

/* Whether page @i of @mem is write-protected, from the page tables. */
static bool page_protected(uint8_t *mem, int i)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint64_t e = 0;

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pread(fd, &e, sizeof(e), ((uintptr_t)mem / PAGE + i) * sizeof(e)), ==,
                    sizeof(e));
    close(fd);
    return e & PM_UFFD_WP;
}

typedef struct Writes {
    uint8_t *mem;
    const int *pages;
    int n;
    uint8_t value;
} Writes;

/* A "vCPU": writes one byte into each page, blocking on each protected one. */
static void *writer(void *opaque)
{
    Writes *w = opaque;

    for (int i = 0; i < w->n; i++) {
        *(volatile uint8_t *)(w->mem + w->pages[i] * PAGE) = w->value;
    }
    return NULL;
}

static void write_pages(uint8_t *mem, const int *pages, int n, uint8_t value)
{
    Writes w = { mem, pages, n, value };
    QemuThread t;

    g_assert_cmpint(qemu_thread_create(&t, "test/vcpu", writer, &w), ==, 0);
    qemu_thread_join(&t);
}

static void test_freeze(void)
{
    static const int before[] = { 3, 10, 11, 31 };
    static const int after[] = { 10, 20 };
    SnapFault *sf = g_new0(SnapFault, 1);
    SnapRam *ram = (SnapRam *)g_malloc0(64);     /* only passed through to the stub */
    uint8_t *mem;
    uint64_t reprotected = 0;
    int fd;

    if (!(uffd_query_features() & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
        g_test_skip("no userfaultfd write protection on this kernel");
        return;
    }
    mem = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert(mem != MAP_FAILED);
    memset(mem, 1, NPAGES * PAGE);
    fd = uffd_create(UFFD_FEATURE_PAGEFAULT_FLAG_WP);
    g_assert_cmpint(fd, >=, 0);
    stub_uffd = fd;
    g_assert_cmpint(uffd_register_wp(fd, mem, NPAGES * PAGE), ==, 0);
    g_assert_true(snapshot_fault_start(sf, fd, ram, &error_abort));
    g_assert_cmpint(uffd_change_protection(fd, mem, NPAGES * PAGE, true), ==, 0);
    for (int i = 0; i < NPAGES; i++) {
        g_assert_true(page_protected(mem, i));
    }

    /* Before the freeze: each write unprotects its page only, and is nobody's copy. */
    write_pages(mem, before, G_N_ELEMENTS(before), 2);
    g_assert_cmpint(__atomic_load_n(&stub_calls, __ATOMIC_ACQUIRE), ==, 0);
    for (int i = 0; i < NPAGES; i++) {
        bool written = i == 3 || i == 10 || i == 11 || i == 31;

        g_assert_cmpint(page_protected(mem, i), ==, !written);
        g_assert_cmpint(mem[i * PAGE], ==, written ? 2 : 1);
    }

    /* The freeze: every page protected again, the written ones counted. */
    g_assert_true(snapshot_fault_freeze(sf, &reprotected, &error_abort));
    g_assert_cmpuint(reprotected, ==, G_N_ELEMENTS(before));
    for (int i = 0; i < NPAGES; i++) {
        g_assert_true(page_protected(mem, i));
    }

    /* After it: a write is the snapshot's fault, page by page. */
    write_pages(mem, after, G_N_ELEMENTS(after), 3);
    g_assert_cmpint(__atomic_load_n(&stub_calls, __ATOMIC_ACQUIRE), ==, 2);
    g_assert_cmphex(stub_addrs[0], ==, (uintptr_t)(mem + 10 * PAGE));
    g_assert_cmphex(stub_addrs[1], ==, (uintptr_t)(mem + 20 * PAGE));
    g_assert_false(page_protected(mem, 10));
    g_assert_true(page_protected(mem, 11));

    /* A second freeze finds nothing to protect again. */
    g_assert_true(snapshot_fault_freeze(sf, &reprotected, &error_abort));
    g_assert_cmpuint(reprotected, ==, 0);

    snapshot_fault_stop(sf);
    uffd_change_protection(fd, mem, NPAGES * PAGE, false);
    uffd_unregister(fd, mem, NPAGES * PAGE);
    close(fd);
    munmap(mem, NPAGES * PAGE);
    g_free(ram);
    g_free(sf);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/snapshot-fault/freeze", test_freeze);
    return g_test_run();
}
