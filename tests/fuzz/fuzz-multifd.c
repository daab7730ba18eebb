/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the multifd receiving side (migration/incoming/multifd-recv.c and
 * the decoders of multifd-compress.c), fed over real sockets into the
 * paused fuzz machine's RAM, driven the way mig/dst drives it: flush after
 * flush until one fails. A failure must come with a printable message;
 * nothing may crash, hang or leak, and no more rounds may complete than
 * the input has room for SYNC packets. Seeds: channel streams written by
 * scripts/fuzz-corpus's own encoder from pages of the workload guest.
 *
 * The input: byte 0 picks multifd-compression (none, zlib, zstd: b % 3);
 * byte 1 holds flags: MF_TWO_CHANNELS sets multifd-channels to 2,
 * MF_ADD_INIT puts a valid MultiFDInit (id 0) in front of the rest, so
 * mutations mostly reach the packet parser. The rest is the byte stream
 * of channel 0. With two channels, channel 1 carries the same stream as
 * id 1 (its init's id byte replaced), so rounds complete on both and the
 * flush waits for both, and every expected channel connects: a flush that
 * waited for one that never comes would hang. MF_OTHER_SOURCE changes a
 * byte of channel 1's uuid, as if it came from another source.
 *
 * FUZZ_EXPECT_LOAD=1 (scripts/fuzz-run, over the seeds) makes a channel
 * failure, or an input that completes no round, abort.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include "qapi/error.h"
#include "io/channel.h"
#include "qemu/thread.h"
#include "migration/transport/multifd.h"
#include "migration/incoming/multifd-recv.h"
#include "migration/core/options.h"
#include "fuzz.h"

#define MF_TWO_CHANNELS 0x01
#define MF_ADD_INIT     0x02
#define MF_OTHER_SOURCE 0x04
#define MF_MAX_CHANNELS 2

static const MultiFDCompression mf_compression[] = {
    MULTIFD_COMPRESSION_NONE, MULTIFD_COMPRESSION_ZLIB, MULTIFD_COMPRESSION_ZSTD,
};

static bool expect_load;

/* One channel's peer: a thread writes the stream into its end of the socketpair. */
typedef struct MfWriter {
    QemuThread thread;
    int fd;                     /* owned by the main thread, which closes it */
    uint8_t *buf;               /* owned */
    size_t len;
} MfWriter;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    bool caps[MIGRATION_CAPABILITY__MAX];

    expect_load = getenv("FUZZ_EXPECT_LOAD") != NULL;
    fuzz_machine_start((*argv)[0]);
    memcpy(caps, migrate_caps(), sizeof(caps));
    caps[MIGRATION_CAPABILITY_MULTIFD] = true;
    migrate_caps_set(caps, false);
    /* The main thread keeps the BQL, as the main loop holds it when it cleans up. */
    return 0;
}

/*
 * Writes everything, then shuts its side down for writing, so the channel
 * reads EOF after the stream. A channel that stopped reading is closed by
 * multifd_recv_cleanup(), which makes send() fail here (MSG_NOSIGNAL: no
 * SIGPIPE), so this thread always ends.
 */
static void *mf_writer_thread(void *opaque)
{
    MfWriter *w = opaque;
    size_t off = 0;

    while (off < w->len) {
        ssize_t n = send(w->fd, w->buf + off, w->len - off, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        off += n;
    }
    shutdown(w->fd, SHUT_WR);
    return NULL;
}

/*
 * Channel @id's stream: @rest after a valid MultiFDInit, or @rest with its
 * init's id byte set to @id; @flags as in the input's byte 1.
 */
static uint8_t *mf_stream(const uint8_t *rest, size_t rest_len, uint8_t flags, uint8_t id,
                          size_t *len)
{
    static const uint8_t uuid[16] = "fuzz-multifd-src";
    bool add_init = flags & MF_ADD_INIT;
    size_t pre = add_init ? sizeof(MultiFDInit) : 0;
    uint8_t *buf = g_malloc(MAX(pre + rest_len, 1));

    if (add_init) {
        MultiFDInit init = {
            .magic = GUINT32_TO_BE(MULTIFD_MAGIC),
            .version = GUINT32_TO_BE(MULTIFD_VERSION),
            .id = id,
        };

        memcpy(init.uuid, uuid, sizeof(uuid));
        memcpy(buf, &init, sizeof(init));
    }
    memcpy(buf + pre, rest, rest_len);
    if (!add_init && id && rest_len > offsetof(MultiFDInit, id)) {
        buf[offsetof(MultiFDInit, id)] = id;
    }
    if ((flags & MF_OTHER_SOURCE) && id && pre + rest_len > offsetof(MultiFDInit, uuid)) {
        buf[offsetof(MultiFDInit, uuid)] ^= 0xff;
    }
    *len = pre + rest_len;
    return buf;
}

/* Connects channel @id and starts its writer; the receiver must take it. */
static void mf_connect(MfWriter *w, const uint8_t *rest, size_t rest_len, uint8_t flags,
                       uint8_t id)
{
    Error *err = NULL;
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        fprintf(stderr, "fuzz-multifd: socketpair: %s\n", g_strerror(errno));
        abort();
    }
    /* It takes the channel over sv[0] on success only. */
    if (!multifd_recv_add_channel(channel_socket_new(sv[0]), &err)) {
        fprintf(stderr, "fuzz-multifd: channel %u refused: %s\n", id, error_get_pretty(err));
        abort();
    }
    w->fd = sv[1];
    w->buf = mf_stream(rest, rest_len, flags, id, &w->len);
    if (qemu_thread_create(&w->thread, "fuzz/mfd-write", mf_writer_thread, w) < 0) {
        fprintf(stderr, "fuzz-multifd: cannot create a writer thread\n");
        abort();
    }
}

static void mf_check_error(const char *what, Error *err)
{
    const char *msg = error_get_pretty(err);

    if (!*msg) {
        fprintf(stderr, "fuzz-multifd: %s with an empty message\n", what);
        abort();
    }
    fuzz_assert_printable(what, msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t comp = size > 0 ? data[0] : 0, flags = size > 1 ? data[1] : 0;
    const uint8_t *rest = data + MIN(size, 2);
    size_t rest_len = size - MIN(size, 2);
    MigrationParameters p = {
        .has_multifd_channels = true,
        .multifd_channels = flags & MF_TWO_CHANNELS ? 2 : 1,
        .has_multifd_compression = true,
        .multifd_compression = mf_compression[comp % G_N_ELEMENTS(mf_compression)],
    };
    /* Every round needs a SYNC packet header on each channel. */
    uint64_t max_rounds = rest_len / sizeof(MultiFDPacketHdr), rounds = 0;
    MfWriter w[MF_MAX_CHANNELS];
    Error *err = NULL;

    migrate_params_apply(&p);
    for (int i = 0; i < p.multifd_channels; i++) {
        mf_connect(&w[i], rest, rest_len, flags, i);
    }

    /* mig/dst at one MULTIFD_FLUSH record after the other. */
    while (multifd_recv_flush(&err)) {
        if (++rounds > max_rounds) {
            fprintf(stderr, "fuzz-multifd: %" PRIu64 " rounds completed, but %zu bytes hold "
                    "at most %" PRIu64 " SYNC packets\n", rounds, rest_len, max_rounds);
            abort();
        }
    }
    mf_check_error("failed flush", err);
    error_free(err);
    err = NULL;
    if (multifd_recv_failed(&err)) {
        mf_check_error("failed channel", err);
        if (expect_load) {
            fprintf(stderr, "fuzz-multifd: a seed failed: %s\n", error_get_pretty(err));
            abort();
        }
        error_free(err);
    } else if (expect_load && !rounds) {
        fprintf(stderr, "fuzz-multifd: a seed of %zu bytes completed no round\n", size);
        abort();
    }

    multifd_recv_cleanup();
    for (int i = 0; i < p.multifd_channels; i++) {
        qemu_thread_join(&w[i].thread);
        close(w[i].fd);
        g_free(w[i].buf);
    }
    return 0;
}
