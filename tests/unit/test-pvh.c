/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for hw/pvh.c: PVH ELF images built in memory (ELF32 and ELF64,
 * PT_LOAD + PT_NOTE with the Xen PHYS32_ENTRY note) are probed and loaded
 * through a fake guest-RAM write callback; hostile images (every
 * truncation, bad headers, out-of-range offsets and sizes, huge notes,
 * random bytes) must fail with a clear error and never read out of bounds
 * (images sit right before a PROT_NONE page, so an overread faults).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/pvh.h"
#include <elf.h>
#include <sys/mman.h>

#define SEED 0x9e1f5eed
/* The firmware must end below WORK_BASE (4 MiB, its linker script says so). */
#define RAM_SIZE (4 * MiB)
#define RAM_POISON 0xaa

/* ---- A fake guest: RAM at [0, RAM_SIZE), every write logged ---- */

typedef struct FakeWrite {
    uint64_t gpa;
    uint64_t len;
    bool zero;
} FakeWrite;

typedef struct FakeGuest {
    uint8_t *ram;
    GArray *log;                /* FakeWrite */
} FakeGuest;

static bool fake_write(void *opaque, uint64_t gpa, const void *data, uint64_t len)
{
    FakeGuest *g = opaque;
    FakeWrite w = { .gpa = gpa, .len = len, .zero = !data };

    g_array_append_val(g->log, w);
    if (gpa > RAM_SIZE || len > RAM_SIZE - gpa) {
        return false;
    }
    if (data) {
        memcpy(g->ram + gpa, data, len);
    } else {
        memset(g->ram + gpa, 0, len);
    }
    return true;
}

static FakeGuest *fake_guest_new(void)
{
    FakeGuest *g = g_new0(FakeGuest, 1);

    g->ram = g_malloc(RAM_SIZE);
    memset(g->ram, RAM_POISON, RAM_SIZE);
    g->log = g_array_new(FALSE, FALSE, sizeof(FakeWrite));
    return g;
}

static void fake_guest_free(FakeGuest *g)
{
    g_array_free(g->log, TRUE);
    g_free(g->ram);
    g_free(g);
}

/* ---- Building images ---- */

typedef struct Seg {
    uint32_t type;
    uint64_t offset;
    uint64_t paddr;
    uint64_t filesz;
    uint64_t memsz;
} Seg;

/*
 * Layout of a built image (no slack at the end, so that every truncation
 * cuts something the loader needs):
 *
 *   0       ELF header
 *   phoff   3 program headers: LOAD text, NOTE, LOAD data
 *   ...     notes: an empty note, a "GNU" note, the Xen PHYS32_ENTRY note
 *   ...     text bytes (filesz == memsz)
 *   ...     data bytes (filesz < memsz: a .bss tail)
 */
typedef struct Image {
    uint8_t *buf;
    size_t size;
    bool is64;
    Seg seg[3];
    size_t note_entry_off;      /* file offset of the Xen note's desc */
    size_t xen_note_off;        /* file offset of the Xen note header */
    uint32_t entry;
} Image;

#define TEXT_PADDR 0x100000
#define TEXT_SIZE 0x321
#define DATA_PADDR 0x180000
#define DATA_FILESZ 0x85
#define DATA_MEMSZ 0x3000
#define ENTRY 0x100040

static size_t put_note(uint8_t *p, uint32_t namesz, const char *name, uint32_t descsz,
                       uint32_t type, const void *desc)
{
    size_t nlen = QEMU_ALIGN_UP(namesz, 4), dlen = QEMU_ALIGN_UP(descsz, 4);

    memcpy(p, &namesz, 4);
    memcpy(p + 4, &descsz, 4);
    memcpy(p + 8, &type, 4);
    memset(p + 12, 0, nlen + dlen);
    if (namesz) {
        memcpy(p + 12, name, namesz);
    }
    if (descsz) {
        memcpy(p + 12 + nlen, desc, descsz);
    }
    return 12 + nlen + dlen;
}

static void put_phdr(Image *im, size_t off, const Seg *s)
{
    if (im->is64) {
        Elf64_Phdr h = {
            .p_type = s->type, .p_offset = s->offset, .p_vaddr = s->paddr,
            .p_paddr = s->paddr, .p_filesz = s->filesz, .p_memsz = s->memsz,
            .p_flags = PF_R, .p_align = 4,
        };
        memcpy(im->buf + off, &h, sizeof(h));
    } else {
        Elf32_Phdr h = {
            .p_type = s->type, .p_offset = s->offset, .p_vaddr = s->paddr,
            .p_paddr = s->paddr, .p_filesz = s->filesz, .p_memsz = s->memsz,
            .p_flags = PF_R, .p_align = 4,
        };
        memcpy(im->buf + off, &h, sizeof(h));
    }
}

static size_t phoff_of(const Image *im)
{
    return im->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
}

static size_t phentsize_of(const Image *im)
{
    return im->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
}

/* Rewrites program header @i from im->seg[i]. */
static void image_put_seg(Image *im, int i)
{
    put_phdr(im, phoff_of(im) + i * phentsize_of(im), &im->seg[i]);
}

static Image *image_build(bool is64, uint32_t entry_descsz)
{
    Image *im = g_new0(Image, 1);
    size_t phoff, off, note_start;
    uint64_t entry64 = ENTRY;
    static const uint8_t gnu_desc[16] = { 1, 2, 3, 4 };

    im->is64 = is64;
    im->entry = ENTRY;
    im->buf = g_malloc0(4096 + TEXT_SIZE + DATA_FILESZ);
    phoff = phoff_of(im);
    off = phoff + 3 * phentsize_of(im);

    /* Notes: an empty one (like the padding note of our firmware), GNU, Xen. */
    note_start = off;
    off += put_note(im->buf + off, 0, NULL, 0, 0, NULL);
    off += put_note(im->buf + off, 4, "GNU", sizeof(gnu_desc), 3, gnu_desc);
    im->xen_note_off = off;
    im->note_entry_off = off + 12 + 4;
    off += put_note(im->buf + off, 4, "Xen", entry_descsz, XEN_ELFNOTE_PHYS32_ENTRY, &entry64);
    im->seg[1] = (Seg) { PT_NOTE, note_start, 0, off - note_start, off - note_start };

    im->seg[0] = (Seg) { PT_LOAD, off, TEXT_PADDR, TEXT_SIZE, TEXT_SIZE };
    for (size_t i = 0; i < TEXT_SIZE; i++) {
        im->buf[off + i] = 0x90 ^ (i * 7);
    }
    off += TEXT_SIZE;
    im->seg[2] = (Seg) { PT_LOAD, off, DATA_PADDR, DATA_FILESZ, DATA_MEMSZ };
    for (size_t i = 0; i < DATA_FILESZ; i++) {
        im->buf[off + i] = 0x11 + i;
    }
    off += DATA_FILESZ;
    im->size = off;

    if (is64) {
        Elf64_Ehdr eh = {
            .e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
            .e_entry = 0xdead, .e_phoff = phoff, .e_ehsize = sizeof(eh),
            .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 3,
        };
        memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS64;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        memcpy(im->buf, &eh, sizeof(eh));
    } else {
        Elf32_Ehdr eh = {
            .e_type = ET_EXEC, .e_machine = EM_386, .e_version = EV_CURRENT,
            .e_entry = 0xdead, .e_phoff = phoff, .e_ehsize = sizeof(eh),
            .e_phentsize = sizeof(Elf32_Phdr), .e_phnum = 3,
        };
        memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS32;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        memcpy(im->buf, &eh, sizeof(eh));
    }
    for (int i = 0; i < 3; i++) {
        image_put_seg(im, i);
    }
    return im;
}

static void image_free(Image *im)
{
    g_free(im->buf);
    g_free(im);
}

/* ELF header fields, written at the right width for the class. */
static void image_set_phoff(Image *im, uint64_t v)
{
    if (im->is64) {
        memcpy(im->buf + offsetof(Elf64_Ehdr, e_phoff), &v, 8);
    } else {
        uint32_t v32 = v;
        memcpy(im->buf + offsetof(Elf32_Ehdr, e_phoff), &v32, 4);
    }
}

static void image_set_u16(Image *im, size_t off64, size_t off32, uint16_t v)
{
    memcpy(im->buf + (im->is64 ? off64 : off32), &v, 2);
}

#define image_set_half(im, field, v) \
    image_set_u16(im, offsetof(Elf64_Ehdr, field), offsetof(Elf32_Ehdr, field), v)

/*
 * A copy of @data that ends right before an inaccessible page, so that a
 * read past the end faults even without a sanitizer build.
 */
typedef struct Guarded {
    uint8_t *map;
    size_t map_len;
    uint8_t *data;
} Guarded;

static Guarded guarded_copy(const uint8_t *data, size_t size)
{
    size_t page = getpagesize();
    size_t span = QEMU_ALIGN_UP(size, page);
    Guarded g;

    g.map_len = span + page;
    g.map = mmap(NULL, g.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert_true(g.map != MAP_FAILED);
    g_assert_cmpint(mprotect(g.map + span, page, PROT_NONE), ==, 0);
    g.data = g.map + span - size;
    if (size) {
        memcpy(g.data, data, size);
    }
    return g;
}

static void guarded_free(Guarded *g)
{
    munmap(g->map, g->map_len);
}

/* Probes @size bytes of @data from a guarded copy. Returns the error text or NULL. */
static char *probe_copy(const uint8_t *data, size_t size, PvhImageInfo *info)
{
    Guarded copy = guarded_copy(data, size);
    PvhImageInfo dummy;
    Error *err = NULL;
    char *msg = NULL;

    if (!pvh_elf_probe(copy.data, size, info ? info : &dummy, &err)) {
        g_assert_nonnull(err);
        msg = g_strdup(error_get_pretty(err));
        g_assert_cmpstr(msg, !=, "");
        error_free(err);
    } else {
        g_assert_null(err);
    }
    guarded_free(&copy);
    return msg;
}

/* Probe must fail with an error containing @want; load must fail without writing. */
static void expect_fail(const Image *im, const char *want)
{
    g_autofree char *msg = probe_copy(im->buf, im->size, NULL);
    Guarded copy = guarded_copy(im->buf, im->size);
    FakeGuest *g = fake_guest_new();
    PvhImageInfo info;
    Error *err = NULL;

    if (!msg) {
        g_error("image accepted, expected an error containing '%s'", want);
    }
    if (!strstr(msg, want)) {
        g_error("error '%s' does not contain '%s'", msg, want);
    }
    g_assert_false(pvh_elf_load(copy.data, im->size, fake_write, g, &info, &err));
    g_assert_nonnull(err);
    g_assert_cmpstr(error_get_pretty(err), ==, msg);
    error_free(err);
    g_assert_cmpuint(g->log->len, ==, 0);
    fake_guest_free(g);
    guarded_free(&copy);
}

/* ---- Good images ---- */

static void check_loaded(const Image *im, FakeGuest *g)
{
    uint64_t data_bytes = 0, zero_bytes = 0;

    /* text: exactly filesz bytes, no tail */
    g_assert_cmpmem(g->ram + TEXT_PADDR, TEXT_SIZE, im->buf + im->seg[0].offset, TEXT_SIZE);
    g_assert_cmpuint(g->ram[TEXT_PADDR - 1], ==, RAM_POISON);
    g_assert_cmpuint(g->ram[TEXT_PADDR + TEXT_SIZE], ==, RAM_POISON);
    /* data: filesz bytes, then zeroes up to memsz, nothing beyond */
    g_assert_cmpmem(g->ram + DATA_PADDR, DATA_FILESZ, im->buf + im->seg[2].offset, DATA_FILESZ);
    for (uint64_t i = DATA_FILESZ; i < DATA_MEMSZ; i++) {
        g_assert_cmpuint(g->ram[DATA_PADDR + i], ==, 0);
    }
    g_assert_cmpuint(g->ram[DATA_PADDR - 1], ==, RAM_POISON);
    g_assert_cmpuint(g->ram[DATA_PADDR + DATA_MEMSZ], ==, RAM_POISON);
    /* The NOTE segment is not loaded (paddr 0 stays untouched). */
    g_assert_cmpuint(g->ram[0], ==, RAM_POISON);

    for (guint i = 0; i < g->log->len; i++) {
        FakeWrite *w = &g_array_index(g->log, FakeWrite, i);
        if (w->zero) {
            zero_bytes += w->len;
        } else {
            data_bytes += w->len;
        }
    }
    g_assert_cmpuint(data_bytes, ==, TEXT_SIZE + DATA_FILESZ);
    g_assert_cmpuint(zero_bytes, ==, DATA_MEMSZ - DATA_FILESZ);
}

static void test_good(void)
{
    static const struct {
        bool is64;
        uint32_t descsz;
    } cases[] = { { false, 4 }, { false, 8 }, { true, 4 }, { true, 8 } };

    for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
        Image *im = image_build(cases[c].is64, cases[c].descsz);
        FakeGuest *g = fake_guest_new();
        PvhImageInfo info = { 0 };
        Error *err = NULL;

        g_test_message("ELF%d, descsz %u", cases[c].is64 ? 64 : 32, cases[c].descsz);
        g_assert_null(probe_copy(im->buf, im->size, &info));
        g_assert_cmphex(info.entry, ==, ENTRY);
        g_assert_cmphex(info.low, ==, TEXT_PADDR);
        g_assert_cmphex(info.high, ==, DATA_PADDR + DATA_MEMSZ);

        memset(&info, 0, sizeof(info));
        g_assert_true(pvh_elf_load(im->buf, im->size, fake_write, g, &info, &err));
        g_assert_null(err);
        g_assert_cmphex(info.entry, ==, ENTRY);
        check_loaded(im, g);
        fake_guest_free(g);
        image_free(im);
    }
}

/* Segments of other types are ignored, and a zero-memsz PT_LOAD writes nothing. */
static void test_ignored_segments(void)
{
    for (int is64 = 0; is64 <= 1; is64++) {
        Image *im = image_build(is64, 4);
        FakeGuest *g = fake_guest_new();
        PvhImageInfo info;
        Error *err = NULL;

        /* The data segment becomes PT_GNU_STACK with absurd values. */
        im->seg[2] = (Seg) { PT_GNU_STACK, UINT32_MAX, UINT32_MAX, UINT32_MAX, 1 };
        image_put_seg(im, 2);
        g_assert_true(pvh_elf_load(im->buf, im->size, fake_write, g, &info, &err));
        g_assert_cmphex(info.high, ==, TEXT_PADDR + TEXT_SIZE);
        g_assert_cmpuint(g->ram[DATA_PADDR], ==, RAM_POISON);

        /* An empty PT_LOAD does not count as loadable. */
        im->seg[0].memsz = im->seg[0].filesz = 0;
        image_put_seg(im, 0);
        g_assert_false(pvh_elf_probe(im->buf, im->size, &info, &err));
        g_assert_nonnull(strstr(error_get_pretty(err), "no loadable segment"));
        error_free(err);
        fake_guest_free(g);
        image_free(im);
    }
}

/* A segment outside the callback's RAM: load fails with a clear message. */
static void test_does_not_fit(void)
{
    for (int is64 = 0; is64 <= 1; is64++) {
        Image *im = image_build(is64, 4);
        FakeGuest *g = fake_guest_new();
        PvhImageInfo info;
        Error *err = NULL;

        im->seg[2].paddr = is64 ? 0x100000000ULL : 0xfff00000;
        image_put_seg(im, 2);
        g_assert_null(probe_copy(im->buf, im->size, NULL));
        g_assert_false(pvh_elf_load(im->buf, im->size, fake_write, g, &info, &err));
        g_assert_nonnull(strstr(error_get_pretty(err), "does not fit in guest RAM"));
        error_free(err);
        fake_guest_free(g);
        image_free(im);
    }
}

/* ---- Hostile images ---- */

static void test_truncated(void)
{
    for (int is64 = 0; is64 <= 1; is64++) {
        for (uint32_t d = 4; d <= 8; d += 4) {
            Image *im = image_build(is64, d);

            for (size_t len = 0; len < im->size; len++) {
                g_autofree char *msg = probe_copy(im->buf, len, NULL);
                if (!msg) {
                    g_error("ELF%d image truncated to %zu of %zu bytes was accepted",
                            is64 ? 64 : 32, len, im->size);
                }
            }
            image_free(im);
        }
    }
}

static void test_bad_header(void)
{
    for (int is64 = 0; is64 <= 1; is64++) {
        Image *im = image_build(is64, 4);
        g_autofree uint8_t *orig = g_memdup2(im->buf, im->size);

#define RESET() memcpy(im->buf, orig, im->size)
        im->buf[1] = 'X';
        expect_fail(im, "not an ELF file");
        RESET();
        im->buf[EI_DATA] = ELFDATA2MSB;
        expect_fail(im, "not little-endian");
        RESET();
        im->buf[EI_DATA] = 0;
        expect_fail(im, "not little-endian");
        RESET();
        for (int cls = 0; cls < 256; cls += 1) {
            if (cls == ELFCLASS32 || cls == ELFCLASS64) {
                continue;
            }
            im->buf[EI_CLASS] = cls;
            expect_fail(im, "invalid ELF class");
        }
        RESET();
        /* The other class: the headers no longer parse consistently. */
        im->buf[EI_CLASS] = is64 ? ELFCLASS32 : ELFCLASS64;
        expect_fail(im, "ELF");
        RESET();
        image_set_half(im, e_machine, EM_ARM);
        expect_fail(im, "is not x86");
        RESET();
        image_set_half(im, e_machine, EM_AARCH64);
        expect_fail(im, "is not x86");
        RESET();
        image_set_half(im, e_phnum, 0);
        expect_fail(im, "program headers are invalid");
        RESET();
        image_set_half(im, e_phnum, 0xffff);
        expect_fail(im, "program headers are invalid");
        RESET();
        image_set_half(im, e_phentsize, 0);
        expect_fail(im, "program headers are invalid");
        RESET();
        image_set_half(im, e_phentsize, 0xffff);
        expect_fail(im, "program headers are invalid");
        RESET();
        image_set_half(im, e_phentsize, is64 ? sizeof(Elf32_Phdr) : sizeof(Elf64_Phdr));
        expect_fail(im, "program headers are invalid");
        RESET();
        {
            static const uint64_t phoffs[] = {
                0, 1, 0x1000, 0x7fffffff, 0xffffffff, 0x100000000ULL,
                0x7fffffffffffffffULL, 0xfffffffffffffff0ULL, 0xffffffffffffffffULL,
            };
            for (size_t i = 0; i < G_N_ELEMENTS(phoffs); i++) {
                uint64_t v = phoffs[i];
                g_autofree char *msg = NULL;

                image_set_phoff(im, v);
                msg = probe_copy(im->buf, im->size, NULL);
                /* phoff 0 or 1 parses garbage as headers; it may fail any way but must fail. */
                g_assert_nonnull(msg);
            }
            image_set_phoff(im, im->size);
            expect_fail(im, "program headers are invalid");
            image_set_phoff(im, im->size - 1);
            expect_fail(im, "program headers are invalid");
        }
#undef RESET
        image_free(im);
    }
}

/* Program header values that point outside the file or overflow. */
static void test_bad_segments(void)
{
    for (int is64 = 0; is64 <= 1; is64++) {
        uint64_t max = is64 ? UINT64_MAX : UINT32_MAX;

        for (int s = 0; s < 3; s++) {
            Image *im = image_build(is64, 4);
            Seg orig = im->seg[s];

#define TRY(field, val, want) do {                      \
        im->seg[s] = orig;                              \
        im->seg[s].field = (val);                       \
        image_put_seg(im, s);                           \
        expect_fail(im, want);                          \
    } while (0)
            TRY(offset, im->size, "lies outside the file");
            TRY(offset, im->size - orig.filesz + 1, "lies outside the file");
            TRY(offset, max, "lies outside the file");
            TRY(offset, max - 3, "lies outside the file");
            TRY(filesz, im->size, "lies outside the file");
            TRY(filesz, max, "lies outside the file");
            if (orig.type == PT_LOAD) {
                TRY(memsz, orig.filesz - 1, "invalid sizes");
                TRY(memsz, 0, "invalid sizes");
                if (is64) {
                    TRY(paddr, max - orig.memsz + 2, "invalid sizes");
                }
            }
#undef TRY
            im->seg[s] = orig;
            image_put_seg(im, s);
            g_assert_null(probe_copy(im->buf, im->size, NULL));
            image_free(im);
        }
    }
}

/* paddr + memsz wrapping around 2^64 (ELF64 only: ELF32 fields cannot wrap). */
static void test_paddr_wrap(void)
{
    static const struct {
        uint64_t paddr, memsz;
    } cases[] = {
        { 0xfffffffffffff000ULL, 0x1000 },      /* ends exactly at 2^64 */
        { 0xffffffffffffffffULL, 0x100 },
        { 0x8000000000000000ULL, 0x8000000000000000ULL },
        { 1, 0xffffffffffffffffULL },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Image *im = image_build(true, 4);

        im->seg[2].paddr = cases[i].paddr;
        im->seg[2].memsz = cases[i].memsz;
        image_put_seg(im, 2);
        expect_fail(im, "invalid sizes");
        image_free(im);
    }
}

/* Notes: huge name/desc sizes, wrong sizes, wrong names and types, none at all. */
static void test_bad_notes(void)
{
    for (int is64 = 0; is64 <= 1; is64++) {
        Image *im = image_build(is64, 8);
        g_autofree uint8_t *orig = g_memdup2(im->buf, im->size);
        uint8_t *xen = im->buf + im->xen_note_off;
        static const uint32_t huge[] = {
            0x7fffffff, 0x80000000, 0xfffffffc, 0xfffffffd, 0xffffffff, 0x10000,
        };

        for (size_t i = 0; i < G_N_ELEMENTS(huge); i++) {
            memcpy(im->buf, orig, im->size);
            memcpy(xen, &huge[i], 4);                   /* namesz */
            expect_fail(im, "without PVH ELF Note");
            memcpy(im->buf, orig, im->size);
            memcpy(xen + 4, &huge[i], 4);               /* descsz */
            expect_fail(im, "without PVH ELF Note");
            /* The same on the first (empty) note hides every later note. */
            memcpy(im->buf, orig, im->size);
            memcpy(im->buf + im->seg[1].offset, &huge[i], 4);
            expect_fail(im, "without PVH ELF Note");
        }
        {
            /* Only 4 and 8 are entry sizes; the others make the walk go astray. */
            static const uint32_t descsz[] = { 0, 1, 2, 3, 5, 6, 7 };
            for (size_t i = 0; i < G_N_ELEMENTS(descsz); i++) {
                memcpy(im->buf, orig, im->size);
                memcpy(xen + 4, &descsz[i], 4);
                expect_fail(im, "without PVH ELF Note");
            }
        }
        /* An entry above 4 GiB is not a 32-bit entry point. */
        memcpy(im->buf, orig, im->size);
        {
            uint64_t e = 0x100000000ULL;
            memcpy(im->buf + im->note_entry_off, &e, 8);
        }
        expect_fail(im, "without PVH ELF Note");
        /* Wrong owner name, wrong type, wrong namesz. */
        memcpy(im->buf, orig, im->size);
        memcpy(xen + 12, "Xem", 4);
        expect_fail(im, "without PVH ELF Note");
        memcpy(im->buf, orig, im->size);
        xen[8] = XEN_ELFNOTE_PHYS32_ENTRY + 1;
        expect_fail(im, "without PVH ELF Note");
        memcpy(im->buf, orig, im->size);
        xen[0] = 3;
        expect_fail(im, "without PVH ELF Note");
        /* The note segment shorter than the Xen note, or not a note at all. */
        memcpy(im->buf, orig, im->size);
        im->seg[1].filesz = im->xen_note_off + 12 + 4 + 4 - im->seg[1].offset;
        image_put_seg(im, 1);
        expect_fail(im, "without PVH ELF Note");
        memcpy(im->buf, orig, im->size);
        im->seg[1].type = PT_NULL;
        image_put_seg(im, 1);
        expect_fail(im, "Error loading uncompressed kernel without PVH ELF Note");
        image_free(im);
    }
}

/* A bzImage is recognised by "HdrS" at 0x202 and refused with a hint. */
static void test_bzimage(void)
{
    g_autofree uint8_t *bz = g_malloc0(0x400);

    memcpy(bz + 0x202, "HdrS", 4);
    bz[0x1fe] = 0x55;
    bz[0x1ff] = 0xaa;
    {
        g_autofree char *msg = probe_copy(bz, 0x400, NULL);
        g_assert_nonnull(msg);
        g_assert_nonnull(strstr(msg, "bzImage"));
    }
    /* Exactly long enough for the magic, and one byte short of it. */
    {
        g_autofree char *msg = probe_copy(bz, 0x206, NULL);
        g_assert_nonnull(strstr(msg, "bzImage"));
    }
    {
        g_autofree char *msg = probe_copy(bz, 0x205, NULL);
        g_assert_nonnull(strstr(msg, "not an ELF file"));
    }
}

/* Random bytes, with and without an ELF magic in front: always refused, never a crash. */
static void test_random(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED);

    for (int i = 0; i < 4000; i++) {
        size_t len = g_rand_int_range(r, 0, 2048);
        g_autofree uint8_t *buf = g_malloc(len + 1);
        g_autofree char *msg = NULL;

        for (size_t k = 0; k < len; k++) {
            buf[k] = g_rand_int(r);
        }
        if (i % 2 && len >= EI_NIDENT) {
            memcpy(buf, ELFMAG, SELFMAG);
            buf[EI_CLASS] = g_rand_boolean(r) ? ELFCLASS64 : ELFCLASS32;
            buf[EI_DATA] = ELFDATA2LSB;
        }
        msg = probe_copy(buf, len, NULL);
        g_assert_nonnull(msg);
    }
}

/*
 * Random byte flips of a valid image: anything may happen except a crash, an
 * out-of-bounds read (the sanitizer build checks), or a load that writes
 * outside what probe reported.
 */
static void test_mutated(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 1);
    FakeGuest *g = fake_guest_new();

    for (int i = 0; i < 3000; i++) {
        Image *im = image_build(g_rand_boolean(r), g_rand_boolean(r) ? 4 : 8);
        int flips = g_rand_int_range(r, 1, 4);
        Guarded copy;
        PvhImageInfo info;
        Error *err = NULL;

        for (int f = 0; f < flips; f++) {
            /* Mostly the headers and notes, where the interesting fields are. */
            size_t at = g_rand_int_range(r, 0, MIN(im->size, (size_t)im->seg[0].offset + 8));
            im->buf[at] = g_rand_boolean(r) ? g_rand_int(r) : im->buf[at] ^ (1 << (i % 8));
        }
        copy = guarded_copy(im->buf, im->size);
        g_array_set_size(g->log, 0);
        if (pvh_elf_load(copy.data, im->size, fake_write, g, &info, &err)) {
            g_assert_cmpuint(info.low, <, info.high);
            for (guint k = 0; k < g->log->len; k++) {
                FakeWrite *w = &g_array_index(g->log, FakeWrite, k);
                g_assert_cmpuint(w->gpa, >=, info.low);
                g_assert_cmpuint(w->gpa + w->len, <=, info.high);
            }
        } else {
            g_assert_nonnull(err);
            error_free(err);
        }
        guarded_free(&copy);
        image_free(im);
    }
    fake_guest_free(g);
}

/* Our own firmware (built beside this test) probes and loads. */
static void test_firmware(void)
{
    g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
    g_autofree char *dir = exe ? g_path_get_dirname(exe) : NULL;
    g_autofree char *path = g_getenv("VMTEST_FIRMWARE") ? g_strdup(g_getenv("VMTEST_FIRMWARE"))
                            : g_build_filename(dir ? dir : ".", "..", "guest", "workload.elf",
                                               NULL);
    g_autofree char *data = NULL;
    gsize len;
    PvhImageInfo info;
    Error *err = NULL;
    FakeGuest *g;

    if (!g_file_get_contents(path, &data, &len, NULL)) {
        g_autofree char *why = g_strdup_printf("firmware %s not built", path);
        g_printerr("\n*** SKIPPING TEST: %s ***\n", why);
        g_test_skip(why);
        return;
    }
    g_assert_null(probe_copy((uint8_t *)data, len, &info));
    g_assert_cmphex(info.low, >=, 0x100000);
    g_assert_cmphex(info.low, <, info.high);
    g_assert_cmphex(info.entry, >=, info.low);
    g_assert_cmphex(info.entry, <, info.high);
    g_assert_cmphex(info.high, <=, RAM_SIZE);
    g = fake_guest_new();
    g_assert_true(pvh_elf_load((uint8_t *)data, len, fake_write, g, &info, &err));
    g_assert_null(err);
    g_assert_cmpuint(g->log->len, >, 0);
    g_assert_cmpuint(g->ram[info.low - 1], ==, RAM_POISON);
    fake_guest_free(g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pvh/good", test_good);
    g_test_add_func("/pvh/ignored-segments", test_ignored_segments);
    g_test_add_func("/pvh/does-not-fit", test_does_not_fit);
    g_test_add_func("/pvh/truncated", test_truncated);
    g_test_add_func("/pvh/bad-header", test_bad_header);
    g_test_add_func("/pvh/bad-segments", test_bad_segments);
    g_test_add_func("/pvh/paddr-wrap", test_paddr_wrap);
    g_test_add_func("/pvh/bad-notes", test_bad_notes);
    g_test_add_func("/pvh/bzimage", test_bzimage);
    g_test_add_func("/pvh/random", test_random);
    g_test_add_func("/pvh/mutated", test_mutated);
    g_test_add_func("/pvh/firmware", test_firmware);
    return g_test_run();
}
