/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line's drives: -drive (a format node over a file node and a
 * backend named by id=) and -blockdev (one node and its children, as
 * key=value with dotted children or as JSON). Both become one set of node
 * options with dotted keys ("file.filename") that block.c opens; every
 * value is checked there or here, with QEMU's words for each form.
 */
#include "qemu/osdep.h"
#include <json-glib/json-glib.h>
#include "qapi/error.h"
#include "qemu/option.h"
#include "block-int.h"

/* The -drive keys that are the drive's own; the rest go to its format node. */
static const char *const drive_own_keys[] = {
    "file", "format", "if", "id", "index", "bus", "unit", "media", "cache", "aio",
    "readonly", "werror", "rerror", "snapshot", "copy-on-read", NULL,
};

static bool is_drive_key(const char *name)
{
    for (size_t i = 0; drive_own_keys[i]; i++) {
        if (!strcmp(drive_own_keys[i], name)) {
            return true;
        }
    }
    return false;
}

/* QEMU's BlockInterfaceType names; microvm has none of their buses. */
static const char *const if_names[] = {
    "none", "ide", "scsi", "floppy", "pflash", "mtd", "sd", "virtio", "xen", NULL,
};

static bool drive_parse_if(const char *v, Error **errp)
{
    size_t i;

    for (i = 0; if_names[i] && strcmp(if_names[i], v); i++) {
    }
    if (!if_names[i]) {
        error_setg(errp, "unsupported bus type '%s'", v);
        return false;
    }
    if (!strcmp(v, "virtio")) {
        error_setg(errp, "No 'PCI' bus found for device 'virtio-blk-pci'");
        return false;
    }
    if (strcmp(v, "none")) {
        error_setg(errp, "machine type does not support if=%s,bus=0,unit=0", v);
        return false;
    }
    return true;
}

static bool drive_parse_on_error(const char *v, bool is_read, BlockdevOnError *out,
                                 Error **errp)
{
    if (!v) {
        return true;
    }
    if (!strcmp(v, "report")) {
        *out = BLOCKDEV_ON_ERROR_REPORT;
    } else if (!strcmp(v, "ignore")) {
        *out = BLOCKDEV_ON_ERROR_IGNORE;
    } else if (!strcmp(v, "stop")) {
        *out = BLOCKDEV_ON_ERROR_STOP;
    } else if (!strcmp(v, "enospc") && !is_read) {
        *out = BLOCKDEV_ON_ERROR_ENOSPC;
    } else {
        error_setg(errp, "'%s' invalid %s error action", v, is_read ? "read" : "write");
        return false;
    }
    return true;
}

/* cache=MODE: the node's direct and no-flush, and the guest-visible write cache. */
static bool drive_parse_cache(const char *v, bool *direct, bool *no_flush, bool *writeback,
                              Error **errp)
{
    *direct = *no_flush = false;
    *writeback = true;
    if (!v || !strcmp(v, "writeback")) {
        return true;
    }
    if (!strcmp(v, "none") || !strcmp(v, "off")) {
        *direct = true;
    } else if (!strcmp(v, "writethrough")) {
        *writeback = false;
    } else if (!strcmp(v, "directsync")) {
        *direct = true;
        *writeback = false;
    } else if (!strcmp(v, "unsafe")) {
        *no_flush = true;
    } else {
        error_setg(errp, "invalid cache option");
        return false;
    }
    return true;
}

bool drive_parse(BlockLayer *bl, const char *optstr, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(optstr, NULL, errp);
    g_autoptr(QemuOpts) node = NULL;
    g_autofree char *id = NULL;
    const char *v, *file, *format;
    bool direct, no_flush, writeback;
    BlockdevOnError rerror = BLOCKDEV_ON_ERROR_REPORT, werror = BLOCKDEV_ON_ERROR_ENOSPC;
    BlockDriverState *root;
    BlockBackend *blk;

    if (!opts) {
        return false;
    }
    v = qemu_opt_get(opts, "id");
    if (v && !block_id_wellformed(v)) {
        error_setg(errp, "Parameter 'id' expects an identifier");
        error_append_hint(errp, "Identifiers consist of letters, digits, '-', '.', '_', "
                          "starting with a letter.\n");
        return false;
    }
    if (v && blk_by_name(bl, v)) {
        error_setg(errp, "Duplicate ID '%s' for drive", v);
        return false;
    }
    if (v && bdrv_find_node(bl, v)) {
        error_setg(errp, "Device name '%s' conflicts with an existing node name", v);
        return false;
    }
    id = v ? g_strdup(v) : g_strdup_printf("none0%u", bl->drive_counter);
    if (!drive_parse_if(qemu_opt_get(opts, "if") ?: "none", errp) ||
        !drive_parse_cache(qemu_opt_get(opts, "cache"), &direct, &no_flush, &writeback, errp) ||
        !drive_parse_on_error(qemu_opt_get(opts, "werror"), false, &werror, errp) ||
        !drive_parse_on_error(qemu_opt_get(opts, "rerror"), true, &rerror, errp)) {
        return false;
    }
    /* index=, bus=, unit= place a drive on a bus: if=none has none, QEMU ignores them. */
    for (const char *const *k = (const char *const[]){ "snapshot", "copy-on-read", NULL };
         *k; k++) {
        if (qemu_opt_has(opts, *k)) {
            error_setg(errp, "-drive %s= is not supported by this machine", *k);
            return false;
        }
    }
    v = qemu_opt_get(opts, "media");
    if (v && strcmp(v, "disk")) {
        error_setg(errp, "media=%s is not supported by this machine", v);
        return false;
    }
    v = qemu_opt_get(opts, "discard");
    if (v && strcmp(v, "ignore") && strcmp(v, "off") && strcmp(v, "unmap") && strcmp(v, "on")) {
        error_setg(errp, "Invalid discard option");
        return false;
    }
    v = qemu_opt_get(opts, "detect-zeroes");
    if (v && strcmp(v, "off") && strcmp(v, "on") && strcmp(v, "unmap")) {
        error_setg(errp, "invalid parameter value: %s", v);
        return false;
    }
    file = qemu_opt_get(opts, "file");
    if (!file && !qemu_opt_has(opts, "file.filename")) {
        error_setg(errp, "Device needs media, but drive is empty");
        return false;
    }
    format = qemu_opt_get(opts, "format");
    if (format && !bdrv_find_driver(format)) {
        error_setg(errp, "Unknown driver '%s'", format);
        return false;
    }

    /* The format node's options: what is not the drive's, then the drive's translated. */
    node = qemu_opts_new();
    for (size_t i = 0; i < qemu_opts_count(opts); i++) {
        const QemuOpt *o = qemu_opts_nth(opts, i);

        if (!is_drive_key(o->name)) {
            qemu_opt_set(node, o->name, o->value);
        }
    }
    if (format) {
        qemu_opt_set(node, "driver", format);
    }
    if (format && bdrv_find_driver(format)->is_protocol) {
        /* format=file: the file node is the drive's top. */
        if (file) {
            qemu_opt_set(node, "filename", file);
        }
        if (qemu_opt_has(opts, "aio")) {
            qemu_opt_set(node, "aio", qemu_opt_get(opts, "aio"));
        }
    } else {
        if (!qemu_opt_has(node, "file.driver")) {
            /* file=nbd:... opens an nbd node, as QEMU's protocol prefixes do. */
            qemu_opt_set(node, "file.driver",
                         file ? bdrv_find_protocol(file)->format_name : "file");
        }
        if (file) {
            qemu_opt_set(node, "file.filename", file);
        }
        if (qemu_opt_has(opts, "aio")) {
            qemu_opt_set(node, "file.aio", qemu_opt_get(opts, "aio"));
        }
    }
    if (qemu_opt_has(opts, "readonly")) {
        qemu_opt_set(node, "read-only", qemu_opt_get(opts, "readonly"));
    }
    if (!qemu_opt_has(node, "cache.direct")) {
        qemu_opt_set(node, "cache.direct", direct ? "on" : "off");
    }
    if (!qemu_opt_has(node, "cache.no-flush")) {
        qemu_opt_set(node, "cache.no-flush", no_flush ? "on" : "off");
    }

    root = bdrv_open_opts(bl, node, NULL, BDRV_O_RDWR, true, "", errp);
    if (!root) {
        return false;
    }
    blk = blk_new(bl, id, root);
    bdrv_unref(root);                   /* the backend holds it now */
    blk->write_cache = writeback;
    blk->on_read_error = rerror;
    blk->on_write_error = werror;
    blk->if_name = g_strdup(qemu_opt_get(opts, "if") ?: "none");
    if (!bdrv_refresh_perms(bl, errp)) {
        blk_free(blk);
        return false;
    }
    if (!qemu_opt_has(opts, "id")) {
        bl->drive_counter++;
    }
    return true;
}

void drive_check_orphans(BlockLayer *bl)
{
    for (guint i = 0; i < bl->backends->len; i++) {
        BlockBackend *blk = g_ptr_array_index(bl->backends, i);

        /* if=none drives are for -device to take, and QEMU says nothing of them. */
        if (blk->if_name && strcmp(blk->if_name, "none") && !blk->dev_name) {
            warn_report("Orphaned drive without device: id=%s,file=%s,if=%s,bus=0,unit=0",
                        blk->name, blk->root->filename, blk->if_name);
        }
    }
}

/* ---- -blockdev ---- */

/* A JSON object's members as dotted keys under @prefix. */
static bool json_flatten(JsonObject *obj, const char *prefix, QemuOpts *opts, Error **errp)
{
    g_autoptr(GList) members = json_object_get_members(obj);

    for (GList *l = members; l; l = l->next) {
        const char *name = l->data;
        JsonNode *node = json_object_get_member(obj, name);
        g_autofree char *key = g_strdup_printf("%s%s", prefix, name);

        if (JSON_NODE_HOLDS_OBJECT(node)) {
            g_autofree char *sub = g_strdup_printf("%s.", key);

            if (!json_flatten(json_node_get_object(node), sub, opts, errp)) {
                return false;
            }
        } else if (JSON_NODE_HOLDS_VALUE(node)) {
            GType t = json_node_get_value_type(node);
            g_autofree char *val = NULL;

            if (t == G_TYPE_BOOLEAN) {
                val = g_strdup(json_node_get_boolean(node) ? "on" : "off");
            } else if (t == G_TYPE_INT64) {
                val = g_strdup_printf("%" PRId64, json_node_get_int(node));
            } else if (t == G_TYPE_STRING) {
                val = g_strdup(json_node_get_string(node));
            } else {
                error_setg(errp, "Invalid parameter type for '%s', expected: string", key);
                return false;
            }
            qemu_opt_set(opts, key, val);
        } else if (JSON_NODE_HOLDS_NULL(node) && !strcmp(name, "backing")) {
            /* "backing": null, as libvirt passes it: no backing image at all. */
            qemu_opt_set(opts, key, "");
        } else {
            error_setg(errp, "Parameter '%s' is unexpected", key);
            return false;
        }
    }
    return true;
}

static QemuOpts *blockdev_opts_json(const char *optstr, Error **errp)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) gerr = NULL;
    JsonNode *root;
    QemuOpts *opts;

    if (!json_parser_load_from_data(parser, optstr, -1, &gerr)) {
        error_setg(errp, "JSON parse error, %s", gerr->message);
        return NULL;
    }
    root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        error_setg(errp, "Invalid parameter type, expected: object");
        return NULL;
    }
    opts = qemu_opts_new();
    if (!json_flatten(json_node_get_object(root), "", opts, errp)) {
        qemu_opts_del(opts);
        return NULL;
    }
    return opts;
}

bool blockdev_parse(BlockLayer *bl, const char *optstr, Error **errp)
{
    g_autoptr(QemuOpts) opts = NULL;
    BlockDriverState *bs;

    opts = optstr[0] == '{' ? blockdev_opts_json(optstr, errp)
                            : qemu_opts_parse_keyval(optstr, NULL, errp);
    if (!opts) {
        return false;
    }
    if (!qemu_opt_get(opts, "driver")) {
        error_setg(errp, "Parameter 'driver' is missing");
        return false;
    }
    if (!qemu_opt_get(opts, "node-name")) {
        error_setg(errp, "'node-name' must be specified for the root node");
        return false;
    }
    /* The node keeps the reference open gave it: -blockdev nodes live until the end. */
    bs = bdrv_open_opts(bl, opts, NULL, BDRV_O_RDWR, false, "", errp);
    if (!bs) {
        return false;
    }
    if (!bdrv_refresh_perms(bl, errp)) {
        bdrv_unref(bs);
        return false;
    }
    return true;
}
