/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * COMMAND records of the stream (layouts in postcopy.h): the writers the
 * outgoing modes call. The loader's side is loadvm-cmd.c.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "migration/qemu-file.h"
#include "postcopy.h"
#include "savevm-cmd.h"

/* ---- writers ---- */

static void savevm_put_command(QEMUFile *f, uint16_t cmd, uint16_t len, const uint8_t *data)
{
    qemu_put_byte(f, QEMU_VM_COMMAND);
    qemu_put_be16(f, cmd);
    qemu_put_be16(f, len);
    if (len) {
        qemu_put_buffer(f, data, len);
    }
}

void qemu_savevm_send_open_return_path(QEMUFile *f)
{
    savevm_put_command(f, MIG_CMD_OPEN_RETURN_PATH, 0, NULL);
}

void qemu_savevm_send_ping(QEMUFile *f, uint32_t value)
{
    uint8_t buf[4];

    stl_be_p(buf, value);
    savevm_put_command(f, MIG_CMD_PING, sizeof(buf), buf);
}

void qemu_savevm_send_postcopy_advise(QEMUFile *f)
{
    uint8_t buf[16];

    /* Every RAMBlock here uses the host's base page. */
    stq_be_p(buf, (uint64_t)sysconf(_SC_PAGESIZE));
    stq_be_p(buf + 8, TARGET_PAGE_SIZE);
    savevm_put_command(f, MIG_CMD_POSTCOPY_ADVISE, sizeof(buf), buf);
}

void qemu_savevm_send_postcopy_listen(QEMUFile *f)
{
    savevm_put_command(f, MIG_CMD_POSTCOPY_LISTEN, 0, NULL);
}

void qemu_savevm_send_postcopy_run(QEMUFile *f)
{
    savevm_put_command(f, MIG_CMD_POSTCOPY_RUN, 0, NULL);
}

void qemu_savevm_send_postcopy_discard(QEMUFile *f, const char *block, const uint64_t *start,
                                       const uint64_t *len, int n)
{
    size_t name_len = strlen(block);
    uint8_t buf[3 + 255 + 16 * POSTCOPY_DISCARDS_PER_COMMAND];
    size_t pos = 0;

    assert(name_len <= 255 && n > 0 && n <= POSTCOPY_DISCARDS_PER_COMMAND);
    buf[pos++] = POSTCOPY_DISCARD_VERSION;
    buf[pos++] = name_len;
    memcpy(buf + pos, block, name_len);
    pos += name_len;
    buf[pos++] = 0;
    for (int i = 0; i < n; i++) {
        stq_be_p(buf + pos, start[i]);
        stq_be_p(buf + pos + 8, len[i]);
        pos += 16;
    }
    savevm_put_command(f, MIG_CMD_POSTCOPY_RAM_DISCARD, pos, buf);
}

void qemu_savevm_send_recv_bitmap(QEMUFile *f, const char *block)
{
    uint8_t buf[1 + 255];
    size_t n = strlen(block);

    assert(n <= 255);
    buf[0] = n;
    memcpy(buf + 1, block, n);
    savevm_put_command(f, MIG_CMD_RECV_BITMAP, 1 + n, buf);
}

void qemu_savevm_send_postcopy_resume(QEMUFile *f)
{
    savevm_put_command(f, MIG_CMD_POSTCOPY_RESUME, 0, NULL);
}

void qemu_savevm_send_packaged_header(QEMUFile *f, uint32_t len)
{
    uint8_t buf[4];

    stl_be_p(buf, len);
    savevm_put_command(f, MIG_CMD_PACKAGED, sizeof(buf), buf);
}
