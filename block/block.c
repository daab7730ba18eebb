/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The block layer's graph: nodes opened from options (children first),
 * their names and the image locks their users need. The migration
 * handover (inactivate, activate) is activate.c, over the same locks.
 *
 * The invariant: a protocol node holds exactly the locks that its users
 * need now (bdrv_refresh_perms), so a process that holds the "write" lock
 * byte of an image is the only one writing it (QEMU honours the same
 * bytes). Users are backends (read, plus write when the device writes;
 * a device also keeps every other process from writing) and formats
 * (perm_passthrough: what their own users need; otherwise read, write and
 * resize when writable, and nobody else writes or resizes). An inactive
 * node needs nothing, as QEMU's incoming side holds no lock: so the source
 * and the destination never both hold "write", and the destination takes
 * it only at activation, after the source dropped it in inactivation.
 * Every change goes through bdrv_refresh_perms, which takes the new locks
 * of every node first and rolls all back if one fails: a failed attach or
 * activation leaves the locks as they were.
 *
 * Everything here runs under the BQL with no request in flight.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/option.h"
#include "block/job.h"
#include "block-int.h"

BlockLayer *block_layer_new(void)
{
    BlockLayer *bl = g_new0(BlockLayer, 1);

    bl->nodes = g_ptr_array_new();
    bl->backends = g_ptr_array_new();
    bl->jobs = job_registry_new();
    return bl;
}

void block_layer_set_incoming(BlockLayer *bl)
{
    bl->incoming = true;
}

/* The backends are the layer's too: their names share the node names' space. */
BlockBackend *blk_by_name(BlockLayer *bl, const char *name)
{
    for (guint i = 0; i < bl->backends->len; i++) {
        BlockBackend *blk = g_ptr_array_index(bl->backends, i);

        if (blk->name[0] && !strcmp(blk->name, name)) {
            return blk;
        }
    }
    return NULL;
}

static void bdrv_close(BlockDriverState *bs)
{
    BdrvNode *n = bdrv_node(bs);

    if (bs->drv->set_lock && n->locked) {
        bs->drv->set_lock(bs, 0, NULL);
    }
    if (bs->drv->close) {
        bs->drv->close(bs);
    }
    g_ptr_array_remove(bs->bl->nodes, bs);
    if (bs->backing) {
        bdrv_unref(bs->backing);
    }
    if (bs->file) {
        bdrv_unref(bs->file);
    }
    g_free(bs->opaque);
    g_free(bs->node_name);
    g_free(bs->filename);
    g_free(n);
}

void bdrv_unref(BlockDriverState *bs)
{
    assert(bs->refcnt > 0);
    if (--bs->refcnt == 0) {
        bdrv_close(bs);
    }
}

const BlockDriver *bdrv_find_driver(const char *format_name)
{
    for (size_t i = 0; bdrv_drivers[i]; i++) {
        if (!strcmp(bdrv_drivers[i]->format_name, format_name)) {
            return bdrv_drivers[i];
        }
    }
    return NULL;
}

const BlockDriver *bdrv_find_protocol(const char *filename)
{
    for (size_t i = 0; bdrv_drivers[i]; i++) {
        const char *const *p = bdrv_drivers[i]->protocol_prefixes;

        for (; p && *p; p++) {
            if (g_str_has_prefix(filename, *p)) {
                return bdrv_drivers[i];
            }
        }
    }
    return &bdrv_file;
}

BlockDriverState *bdrv_find_node(BlockLayer *bl, const char *node_name)
{
    for (guint i = 0; i < bl->nodes->len; i++) {
        BlockDriverState *bs = g_ptr_array_index(bl->nodes, i);

        if (!strcmp(bs->node_name, node_name)) {
            return bs;
        }
    }
    return NULL;
}

bool bdrv_check_options(BlockDriverState *bs, QemuOpts *opts, const char *const *known,
                        Error **errp)
{
    BdrvNode *n = bdrv_node(bs);

    for (size_t i = 0; i < qemu_opts_count(opts); i++) {
        const char *name = qemu_opts_nth(opts, i)->name;
        const char *const *k;

        for (k = known; k && *k && strcmp(*k, name); k++) {
        }
        if (k && *k) {
            continue;
        }
        if (n->from_drive) {
            error_setg(errp, "Block %s '%s' does not support the option '%s'",
                       bs->drv->is_protocol ? "protocol" : "format",
                       bs->drv->format_name, name);
        } else {
            error_setg(errp, "Parameter '%s%s' is unexpected", n->opt_prefix, name);
        }
        return false;
    }
    return true;
}

/* ---- Opening ---- */

/* The options every node takes, which the core reads and the driver never sees. */
static const char *const bdrv_common_options[] = {
    "driver", "node-name", "read-only", "cache.direct", "cache.no-flush", "discard",
    "detect-zeroes", "auto-read-only", "force-share", NULL,
};

static bool is_common_option(const char *name)
{
    for (size_t i = 0; bdrv_common_options[i]; i++) {
        if (!strcmp(bdrv_common_options[i], name)) {
            return true;
        }
    }
    return false;
}

/* The options under @child. ("file.filename" -> "filename"), NULL if none. */
static QemuOpts *opts_child(QemuOpts *opts, const char *child)
{
    size_t len = strlen(child);
    QemuOpts *sub = NULL;

    for (size_t i = 0; i < qemu_opts_count(opts); i++) {
        const QemuOpt *o = qemu_opts_nth(opts, i);

        if (!strncmp(o->name, child, len) && o->name[len] == '.') {
            if (!sub) {
                sub = qemu_opts_new();
            }
            qemu_opt_set(sub, o->name + len + 1, o->value);
        }
    }
    return sub;
}

/* The node's own options: neither common nor a child's ("file.*"). */
static QemuOpts *opts_own(QemuOpts *opts)
{
    QemuOpts *own = qemu_opts_new();

    for (size_t i = 0; i < qemu_opts_count(opts); i++) {
        const QemuOpt *o = qemu_opts_nth(opts, i);

        if (is_common_option(o->name) || g_str_has_prefix(o->name, "file.") ||
            !strcmp(o->name, "file") || !strcmp(o->name, "backing")) {
            continue;
        }
        qemu_opt_set(own, o->name, o->value);
    }
    return own;
}

/* read-only, cache.*, discard over the parent's @flags; detect-zeroes into @dz. */
static bool parse_common_flags(QemuOpts *opts, const char *prefix, int *flags,
                               BlockdevDetectZeroes *dz, Error **errp)
{
    bool ro = !(*flags & BDRV_O_RDWR), direct = *flags & BDRV_O_NOCACHE;
    bool no_flush = *flags & BDRV_O_NO_FLUSH;
    const char *v;

    if (!qemu_opt_get_bool(opts, "read-only", ro, &ro, errp) ||
        !qemu_opt_get_bool(opts, "cache.direct", direct, &direct, errp) ||
        !qemu_opt_get_bool(opts, "cache.no-flush", no_flush, &no_flush, errp)) {
        return false;
    }
    *flags = (*flags & ~(BDRV_O_RDWR | BDRV_O_NOCACHE | BDRV_O_NO_FLUSH)) |
             (ro ? 0 : BDRV_O_RDWR) | (direct ? BDRV_O_NOCACHE : 0) |
             (no_flush ? BDRV_O_NO_FLUSH : 0);
    v = qemu_opt_get(opts, "discard");
    if (v) {
        if (!strcmp(v, "unmap") || !strcmp(v, "on")) {
            *flags |= BDRV_O_UNMAP;
        } else if (!strcmp(v, "ignore") || !strcmp(v, "off")) {
            *flags &= ~BDRV_O_UNMAP;
        } else {
            error_setg(errp, "Parameter '%sdiscard' does not accept value '%s'", prefix, v);
            return false;
        }
    }
    v = qemu_opt_get(opts, "detect-zeroes");
    if (v) {
        if (!strcmp(v, "off")) {
            *dz = BDRV_DETECT_ZEROES_OFF;
        } else if (!strcmp(v, "on")) {
            *dz = BDRV_DETECT_ZEROES_ON;
        } else if (!strcmp(v, "unmap")) {
            *dz = BDRV_DETECT_ZEROES_UNMAP;
        } else {
            error_setg(errp, "Parameter '%sdetect-zeroes' does not accept value '%s'",
                       prefix, v);
            return false;
        }
    }
    if (*dz == BDRV_DETECT_ZEROES_UNMAP && !(*flags & BDRV_O_UNMAP)) {
        error_setg(errp, "setting detect-zeroes to unmap is not allowed without "
                   "setting discard operation to unmap");
        return false;
    }
    return true;
}

static char *bdrv_make_node_name(BlockLayer *bl)
{
    /* QEMU's shape: a counter and two random digits, so nobody relies on the number. */
    return g_strdup_printf("#block%u%02d", bl->node_counter++, g_random_int_range(0, 100));
}

/* The file child: a node named by "file=NAME", the "file.*" options, or @given. */
static BlockDriverState *open_file_child(BlockLayer *bl, QemuOpts *opts,
                                         BlockDriverState *given, int flags,
                                         bool from_drive, const char *prefix, Error **errp)
{
    g_autoptr(QemuOpts) sub = opts_child(opts, "file");
    const char *ref = qemu_opt_get(opts, "file");
    g_autofree char *sub_prefix = g_strdup_printf("%sfile.", prefix);
    BlockDriverState *file;

    if (given) {
        given->refcnt++;
        return given;
    }
    if (ref && !sub) {
        file = bdrv_find_node(bl, ref);
        if (!file) {
            error_setg(errp, "Cannot find device='%s' nor node-name='%s'", ref, ref);
            return NULL;
        }
        file->refcnt++;
        return file;
    }
    if (!sub) {
        error_setg(errp, "Parameter '%sfile' is missing", prefix);
        return NULL;
    }
    return bdrv_open_opts(bl, sub, NULL, flags, from_drive, sub_prefix, errp);
}

/*
 * drv->open; with auto-read-only=on (libvirt's storage nodes), a protocol
 * that may not be opened for writing opens read-only instead, as QEMU's.
 */
static bool bdrv_open_driver(BlockDriverState *bs, QemuOpts *opts, QemuOpts *own, int flags,
                             Error **errp)
{
    Error *local_err = NULL;
    bool auto_ro = false;
    int ret;

    if (!qemu_opt_get_bool(opts, "auto-read-only", false, &auto_ro, errp)) {
        return false;
    }
    ret = bs->drv->open(bs, own, flags, &local_err);
    if (ret < 0 && auto_ro && bs->drv->is_protocol && (flags & BDRV_O_RDWR) &&
        (ret == -EACCES || ret == -EPERM || ret == -EROFS)) {
        error_free(local_err);
        local_err = NULL;
        memset(bs->opaque, 0, bs->drv->instance_size);
        bs->open_flags = flags & ~BDRV_O_RDWR;
        bs->read_only = true;
        ret = bs->drv->open(bs, own, bs->open_flags, &local_err);
    }
    error_propagate(errp, local_err);
    return ret >= 0;
}

BlockDriverState *bdrv_open_opts(BlockLayer *bl, QemuOpts *opts, BlockDriverState *file,
                                 int flags, bool from_drive, const char *prefix,
                                 Error **errp)
{
    const char *driver = qemu_opt_get(opts, "driver");
    const char *node_name = qemu_opt_get(opts, "node-name");
    BlockdevDetectZeroes dz = BDRV_DETECT_ZEROES_OFF;
    g_autoptr(QemuOpts) own = NULL;
    const BlockDriver *drv;
    BlockDriverState *bs;
    BdrvNode *n;

    /* A -drive without format=: the format is probed once its file is open. */
    bool probe = !driver && from_drive && !prefix[0];

    if (!driver && !probe) {
        error_setg(errp, "Parameter '%sdriver' is missing", prefix);
        return NULL;
    }
    drv = driver ? bdrv_find_driver(driver) : NULL;
    if (!drv && !probe) {
        if (from_drive) {
            error_setg(errp, "Unknown driver '%s'", driver);
        } else {
            error_setg(errp, "Parameter '%sdriver' does not accept value '%s'", prefix, driver);
        }
        return NULL;
    }
    if (node_name) {
        if (!block_id_wellformed(node_name)) {
            error_setg(errp, "Invalid node-name: '%s'", node_name);
            return NULL;
        }
        if (bdrv_find_node(bl, node_name)) {
            error_setg(errp, "Duplicate nodes with node-name='%s'", node_name);
            return NULL;
        }
        if (blk_by_name(bl, node_name)) {
            error_setg(errp, "node-name=%s is conflicting with a device id", node_name);
            return NULL;
        }
    }
    if (!parse_common_flags(opts, prefix, &flags, &dz, errp)) {
        return NULL;
    }
    if (bl->incoming) {
        flags |= BDRV_O_INACTIVE;
    }

    n = g_new0(BdrvNode, 1);
    bs = &n->bs;
    bs->bl = bl;
    bs->refcnt = 1;
    bs->open_flags = flags;
    bs->read_only = !(flags & BDRV_O_RDWR);
    n->from_drive = from_drive;
    n->opt_prefix = prefix;
    n->detect_zeroes = dz;
    if (!drv || !drv->is_protocol) {
        bs->file = open_file_child(bl, opts, file, flags, from_drive, prefix, errp);
        if (!bs->file) {
            g_free(n);
            return NULL;
        }
        bs->filename = g_strdup(bs->file->filename);
        if (!drv) {
            drv = bdrv_probe_format(bs->file);
            n->probed = true;
            if (drv == &bdrv_raw) {
                fprintf(stderr, "WARNING: Image format was not specified for '%s' and probing "
                        "guessed raw.\n"
                        "         Automatically detecting the format is dangerous for raw "
                        "images, write operations on block 0 will be restricted.\n"
                        "         Specify the 'raw' format explicitly to remove the "
                        "restrictions.\n", bs->filename);
            }
        }
    } else {
        bs->filename = g_strdup(qemu_opt_get(opts, "filename"));
    }
    if (qemu_opt_has(opts, "backing")) {
        const char *ref = qemu_opt_get(opts, "backing");

        n->backing_given = true;
        if (ref[0]) {
            n->backing_node = bdrv_find_node(bl, ref);
            if (!n->backing_node) {
                error_setg(errp, "Could not open backing file: Cannot find device='%s' nor "
                           "node-name='%s'", ref, ref);
                bdrv_unref(bs->file);
                g_free(bs->filename);
                g_free(n);
                return NULL;
            }
        }
    }
    bs->drv = drv;
    bs->opaque = g_malloc0(drv->instance_size ? drv->instance_size : 1);
    own = opts_own(opts);
    if (!bdrv_open_driver(bs, opts, own, flags, errp)) {
        /* A backing chain the driver opened before failing goes too. */
        if (bs->backing) {
            bdrv_unref(bs->backing);
        }
        if (bs->file) {
            bdrv_unref(bs->file);
        }
        g_free(bs->opaque);
        g_free(bs->filename);
        g_free(n);
        return NULL;
    }
    n->opt_prefix = NULL;
    bs->node_name = node_name ? g_strdup(node_name) : bdrv_make_node_name(bl);
    n->length = drv->getlength(bs);
    g_ptr_array_add(bl->nodes, bs);
    return bs;
}

int bdrv_open_backing(BlockDriverState *bs, const char *filename, const char *format,
                      Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_new();
    int flags = bs->open_flags & ~(BDRV_O_RDWR | BDRV_O_UNMAP);
    BlockDriverState *file, *backing;
    const BlockDriver *drv;
    BdrvNode *n = bdrv_node(bs);

    if (n->backing_given) {
        /* The options named the backing node (or none): the header's name is not opened. */
        if (n->backing_node) {
            n->backing_node->refcnt++;
            bs->backing = n->backing_node;
        }
        return 0;
    }

    /* A relative backing name is relative to the image's directory, as QEMU reads it. */
    g_autofree char *dir = g_path_get_dirname(bs->filename ? bs->filename : ".");
    g_autofree char *path = g_path_is_absolute(filename) || !strcmp(dir, ".")
                            ? g_strdup(filename) : g_build_filename(dir, filename, NULL);

    qemu_opt_set(opts, "driver", "file");
    qemu_opt_set(opts, "filename", path);
    file = bdrv_open_opts(bs->bl, opts, NULL, flags, false, "backing.file.", errp);
    if (!file) {
        return -EINVAL;
    }
    if (format) {
        drv = bdrv_find_driver(format);
        if (!drv || drv->is_protocol) {
            error_setg(errp, "Unknown driver '%s'", format);
            bdrv_unref(file);
            return -EINVAL;
        }
    } else {
        drv = bdrv_probe_format(file);
    }
    qemu_opts_del(opts);
    opts = qemu_opts_new();
    qemu_opt_set(opts, "driver", drv->format_name);
    backing = bdrv_open_opts(bs->bl, opts, file, flags, false, "backing.", errp);
    bdrv_unref(file);                   /* the backing node holds its own reference */
    if (!backing) {
        return -EINVAL;
    }
    bs->backing = backing;
    return 0;
}

const BlockDriver *bdrv_probe_format(BlockDriverState *file)
{
    uint8_t buf[2048] = { 0 };
    int64_t len = bdrv_getlength(file);
    const BlockDriver *best = &bdrv_raw;
    int best_score = 0;

    if (len > 0 && bdrv_pread(file, 0, buf, MIN((uint64_t)len, sizeof(buf))) < 0) {
        return best;
    }
    for (size_t i = 0; bdrv_drivers[i]; i++) {
        int score = bdrv_drivers[i]->probe ?
                    bdrv_drivers[i]->probe(buf, MIN((uint64_t)MAX(len, 0), sizeof(buf))) : 0;

        if (score > best_score) {
            best = bdrv_drivers[i];
            best_score = score;
        }
    }
    return best;
}

/* ---- Permissions and locks ---- */

/* What a format node passes down to its file child, given what its users need. */
static unsigned child_need(BlockDriverState *bs, unsigned need)
{
    unsigned perm;

    if (bs->open_flags & BDRV_O_INACTIVE) {
        return 0;
    }
    if (bs->drv->perm_passthrough) {
        return need;
    }
    perm = BLK_PERM_READ;
    if (!bs->read_only) {
        perm |= BLK_PERM_WRITE | BLK_PERM_RESIZE;
    }
    return perm | BLK_PERM_UNSHARE(BLK_PERM_WRITE | BLK_PERM_RESIZE);
}

/* What every node's users need now, into n->need. */
static void compute_needs(BlockLayer *bl)
{
    for (guint i = 0; i < bl->nodes->len; i++) {
        bdrv_node(g_ptr_array_index(bl->nodes, i))->need = 0;
    }
    for (guint i = 0; i < bl->backends->len; i++) {
        BlockBackend *blk = g_ptr_array_index(bl->backends, i);
        BdrvNode *n = bdrv_node(blk->root);

        if (blk->root->open_flags & BDRV_O_INACTIVE) {
            continue;
        }
        /* QEMU: a drive no device took only reads; a device keeps others from writing. */
        n->need |= BLK_PERM_READ;
        if (blk->dev_name) {
            n->need |= blk->perm | BLK_PERM_UNSHARE(BLK_PERM_WRITE);
        }
    }
    /* Parents come after their children in bl->nodes: walk down from the top. */
    for (guint i = bl->nodes->len; i-- > 0;) {
        BlockDriverState *bs = g_ptr_array_index(bl->nodes, i);

        if (bs->file) {
            bdrv_node(bs->file)->need |= child_need(bs, bdrv_node(bs)->need);
        }
        if (bs->backing && !(bs->open_flags & BDRV_O_INACTIVE)) {
            bdrv_node(bs->backing)->need |=
                BLK_PERM_READ | BLK_PERM_UNSHARE(BLK_PERM_WRITE | BLK_PERM_RESIZE);
        }
    }
}

bool bdrv_refresh_perms(BlockLayer *bl, Error **errp)
{
    compute_needs(bl);
    for (guint i = 0; i < bl->nodes->len; i++) {
        BlockDriverState *bs = g_ptr_array_index(bl->nodes, i);
        BdrvNode *n = bdrv_node(bs);
        unsigned old = n->locked;

        if (!bs->drv->set_lock || n->need == n->locked) {
            continue;
        }
        if (bs->drv->set_lock(bs, n->need, errp) < 0) {
            /* Put back what the earlier nodes held: the locks are as before the call. */
            for (guint j = 0; j < i; j++) {
                BlockDriverState *b = g_ptr_array_index(bl->nodes, j);
                BdrvNode *bn = bdrv_node(b);

                if (b->drv->set_lock && bn->locked != bn->need) {
                    b->drv->set_lock(b, bn->locked, NULL);
                }
            }
            n->locked = old;
            return false;
        }
    }
    for (guint i = 0; i < bl->nodes->len; i++) {
        BdrvNode *n = bdrv_node(g_ptr_array_index(bl->nodes, i));

        if (n->bs.drv->set_lock) {
            n->locked = n->need;
        }
    }
    return true;
}

int bdrv_flush_all(BlockLayer *bl)
{
    int first = 0;

    for (guint i = bl->nodes->len; i-- > 0;) {
        int ret = bdrv_flush(g_ptr_array_index(bl->nodes, i));

        if (ret < 0 && !first) {
            first = ret;
        }
    }
    return first;
}
