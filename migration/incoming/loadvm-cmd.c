/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The loader's side of the stream's COMMAND records (layouts in
 * postcopy.h): each command's length and contents are checked before the
 * destination's postcopy side (postcopy-dst.h) acts on it; and, after a
 * confirmed load, the wait for the source's go.
 */
#include "qemu/osdep.h"
#include <poll.h>
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "migration/qemu-file.h"
#include "loadvm-cmd.h"
#include "migration/stream/postcopy.h"
#include "postcopy-dst.h"
#include "migration/stream/savevm-cmd.h"
#include "migration/stream/savevm-int.h"


static const char *const cmd_names[MIG_CMD_MAX] = {
    [MIG_CMD_OPEN_RETURN_PATH] = "CMD_OPEN_RETURN_PATH",
    [MIG_CMD_PING] = "CMD_PING",
    [MIG_CMD_POSTCOPY_ADVISE] = "CMD_POSTCOPY_ADVISE",
    [MIG_CMD_POSTCOPY_LISTEN] = "CMD_POSTCOPY_LISTEN",
    [MIG_CMD_POSTCOPY_RUN] = "CMD_POSTCOPY_RUN",
    [MIG_CMD_POSTCOPY_RAM_DISCARD] = "CMD_POSTCOPY_RAM_DISCARD",
    [MIG_CMD_PACKAGED] = "CMD_PACKAGED",
    [MIG_CMD_ENABLE_COLO] = "CMD_ENABLE_COLO",
    [MIG_CMD_POSTCOPY_RESUME] = "CMD_POSTCOPY_RESUME",
    [MIG_CMD_RECV_BITMAP] = "CMD_RECV_BITMAP",
    [MIG_CMD_SWITCHOVER_START] = "CMD_SWITCHOVER_START",
};

/* Fixed-length commands: the length they must have, or -1 for variable. */
static int loadvm_cmd_len(uint16_t cmd)
{
    switch (cmd) {
    case MIG_CMD_OPEN_RETURN_PATH:
    case MIG_CMD_POSTCOPY_LISTEN:
    case MIG_CMD_POSTCOPY_RUN:
    case MIG_CMD_POSTCOPY_RESUME:
    case MIG_CMD_SWITCHOVER_START:
        return 0;
    case MIG_CMD_PING:
        return 4;
    case MIG_CMD_POSTCOPY_ADVISE:
        return 16;
    default:
        return -1;
    }
}

/* DISCARD: version, block name, then (start, length) pairs, each range checked by the dst. */
static bool loadvm_discard(const uint8_t *buf, uint16_t len, Error **errp)
{
    char block[256];
    size_t name_len, pos;

    if (len < 3 + 1 + 16 || buf[0] != POSTCOPY_DISCARD_VERSION) {
        error_setg(errp, "CMD_POSTCOPY_RAM_DISCARD invalid (length %u, version %u)", len,
                   len ? buf[0] : 0);
        return false;
    }
    name_len = buf[1];
    pos = 2 + name_len;
    if (pos + 1 > len || buf[pos] != 0 || (len - pos - 1) % 16) {
        error_setg(errp, "CMD_POSTCOPY_RAM_DISCARD invalid length %u for a name of %zu bytes",
                   len, name_len);
        return false;
    }
    memcpy(block, buf + 2, name_len);
    block[name_len] = '\0';
    for (pos++; pos < len; pos += 16) {
        if (!postcopy_dst_discard(block, ldq_be_p(buf + pos), ldq_be_p(buf + pos + 8), errp)) {
            return false;
        }
    }
    return true;
}

LoadVMCmdResult loadvm_handle_command(QEMUFile *f, uint16_t cmd, uint16_t len, bool in_package,
                                      Error **errp)
{
    uint8_t buf[UINT16_MAX];
    int want;

    if (cmd == MIG_CMD_INVALID || cmd >= MIG_CMD_MAX) {
        error_setg(errp, "VM_COMMAND 0x%x out of range (max 0x%x)", cmd, MIG_CMD_MAX - 1);
        return LOADVM_CMD_ERROR;
    }
    want = loadvm_cmd_len(cmd);
    if (want >= 0 && len != want) {
        error_setg(errp, "%s received with bad length - expecting %d, got %u", cmd_names[cmd],
                   want, len);
        return LOADVM_CMD_ERROR;
    }
    qemu_get_buffer(f, buf, len);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading %s failed: %s", cmd_names[cmd], qemu_file_error_msg(f));
        return LOADVM_CMD_ERROR;
    }
    switch (cmd) {
    case MIG_CMD_OPEN_RETURN_PATH:
        return postcopy_dst_open_return_path(f, errp) ? LOADVM_CMD_CONTINUE : LOADVM_CMD_ERROR;
    case MIG_CMD_PING:
        return postcopy_dst_ping(ldl_be_p(buf), errp) ? LOADVM_CMD_CONTINUE : LOADVM_CMD_ERROR;
    case MIG_CMD_POSTCOPY_ADVISE:
        return postcopy_dst_advise(ldq_be_p(buf), ldq_be_p(buf + 8), errp)
               ? LOADVM_CMD_CONTINUE : LOADVM_CMD_ERROR;
    case MIG_CMD_POSTCOPY_RAM_DISCARD:
        return loadvm_discard(buf, len, errp) ? LOADVM_CMD_CONTINUE : LOADVM_CMD_ERROR;
    case MIG_CMD_POSTCOPY_LISTEN:
        return postcopy_dst_listen(errp) ? LOADVM_CMD_CONTINUE : LOADVM_CMD_ERROR;
    case MIG_CMD_POSTCOPY_RUN:
        if (!in_package) {
            /* The device state must be loaded first, and it comes in the package. */
            error_setg(errp, "CMD_POSTCOPY_RUN outside the packaged device state");
            return LOADVM_CMD_ERROR;
        }
        return postcopy_dst_run(errp) ? LOADVM_CMD_QUIT : LOADVM_CMD_ERROR;
    case MIG_CMD_RECV_BITMAP: {
        char block[256];

        if (len < 1 || len != 1 + buf[0]) {
            error_setg(errp, "CMD_RECV_BITMAP invalid length %u", len);
            return LOADVM_CMD_ERROR;
        }
        memcpy(block, buf + 1, buf[0]);
        block[buf[0]] = '\0';
        return postcopy_dst_recv_bitmap(block, errp) ? LOADVM_CMD_CONTINUE : LOADVM_CMD_ERROR;
    }
    case MIG_CMD_POSTCOPY_RESUME:
        return postcopy_dst_resume(errp) ? LOADVM_CMD_CONTINUE : LOADVM_CMD_ERROR;
    case MIG_CMD_SWITCHOVER_START:
        return LOADVM_CMD_CONTINUE;
    default:
        error_setg(errp, "%s is not supported here", cmd_names[cmd]);
        return LOADVM_CMD_ERROR;
    }
}

/*
 * After a confirmed load, the source's go: PING GO, the record's exact 9
 * bytes. Whatever comes before it is the rest of a vmdesc that arrived
 * damaged (its length then told us wrong); at most a vmdesc's worth is
 * skipped, and nothing else is taken for a go.
 */
bool loadvm_wait_go(QEMUFile *f, int64_t timeout_ms, Error **errp)
{
    uint8_t want[9] = { QEMU_VM_COMMAND, 0, MIG_CMD_PING, 0, 4 };
    uint8_t win[9] = { 0 };
    int64_t end = g_get_monotonic_time() + timeout_ms * 1000;
    size_t seen = 0;

    stl_be_p(want + 5, MIG_PING_GO);
    while (seen < VMDESC_MAX_LEN + sizeof(want)) {
        if (!qemu_file_input_buffered(f)) {
            struct pollfd pfd = { .fd = qemu_file_fd(f), .events = POLLIN };
            int64_t left = (end - g_get_monotonic_time()) / 1000;
            int r;

            if (left <= 0) {
                error_setg(errp, "no go from the source within %" PRId64 " s", timeout_ms / 1000);
                return false;
            }
            r = poll(&pfd, 1, MIN(left, INT_MAX));
            if (r < 0 && errno == EINTR) {
                continue;
            }
            if (r < 0) {
                error_setg_errno(errp, errno, "waiting for the source's go");
                return false;
            }
            if (r == 0) {
                continue;
            }
        }
        memmove(win, win + 1, sizeof(win) - 1);
        win[sizeof(win) - 1] = qemu_get_byte(f);
        if (qemu_file_get_error(f)) {
            error_setg(errp, "the stream ended without the source's go: %s",
                       qemu_file_error_msg(f));
            return false;
        }
        if (++seen >= sizeof(want) && !memcmp(win, want, sizeof(want))) {
            return true;
        }
    }
    error_setg(errp, "the source sent something else than its go after the stream");
    return false;
}
