/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one machine a fuzz target process creates (see fuzz.h). */
#include "qemu/osdep.h"
#include "system/system.h"
#include "fuzz.h"

/*
 * Keep in step with scripts/fuzz-corpus, whose streams must load here:
 * the same RAM, a serial port (which, as in QEMU, exists only with a
 * -serial backend), a virtio-net on slirp (its QEMU-layout section and
 * slirp's are fuzzed too) and a virtio-blk on a raw image of this size,
 * made empty for the run (its section too).
 */
#define FUZZ_MACHINE_MEM "16M"
#define FUZZ_MACHINE_DISK (1 << 20)

/* The disk's file, removed as the process ends. */
static char *fuzz_disk_path;

static void fuzz_disk_remove(void)
{
    unlink(fuzz_disk_path);
}

static const char *fuzz_disk_drive(void)
{
    g_autoptr(GError) gerr = NULL;
    int fd = g_file_open_tmp("fuzz-disk-XXXXXX.raw", &fuzz_disk_path, &gerr);

    if (fd < 0 || ftruncate(fd, FUZZ_MACHINE_DISK) < 0) {
        fprintf(stderr, "fuzz machine: cannot make its disk: %s\n",
                gerr ? gerr->message : g_strerror(errno));
        exit(1);
    }
    close(fd);
    atexit(fuzz_disk_remove);
    return g_strdup_printf("file=%s,format=raw,if=none,id=d0", fuzz_disk_path);
}

static void fuzz_machine_init(const char *argv0, const char *firmware, const char *drive)
{
    const char *argv[] = {
        argv0, "-M", "microvm", "-accel", "kvm", "-cpu", "host",
        "-m", FUZZ_MACHINE_MEM, "-smp", "1", "-nodefaults", "-no-user-config",
        "-display", "none", "-serial", "null", "-netdev", "user,id=n0",
        "-device", "virtio-net-device,netdev=n0", "-drive", drive,
        "-device", "virtio-blk-device,drive=d0", "-S", "-kernel", firmware, "-incoming", "defer",
        NULL,
    };

    /* qemu_init() only reads its arguments. */
    qemu_init(G_N_ELEMENTS(argv) - 1, (char **)argv);
    /*
     * qemu_init() routes SIGINT, SIGTERM and SIGHUP to the main loop, which
     * never runs here: give them back, so that Ctrl-C stops a fuzz run
     * (libFuzzer installs its own handlers only where none exists).
     */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
}

void fuzz_machine_start(const char *argv0)
{
    const char *firmware = getenv("VMTEST_FIRMWARE") ? getenv("VMTEST_FIRMWARE") : FUZZ_FIRMWARE;
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

    if (fd < 0) {
        fprintf(stderr, "%s: SKIP: cannot open /dev/kvm (%s); the fuzz targets need KVM\n",
                argv0, g_strerror(errno));
        exit(77);
    }
    close(fd);
    fuzz_machine_init(argv0, firmware, fuzz_disk_drive());
}

void fuzz_assert_printable(const char *what, const char *msg)
{
    for (const char *p = msg; *p; p++) {
        if (*p < 0x20 || *p > 0x7e) {
            fprintf(stderr, "%s: byte 0x%02x at offset %td of the message: %s\n", what,
                    (uint8_t)*p, p - msg, msg);
            abort();
        }
    }
}
