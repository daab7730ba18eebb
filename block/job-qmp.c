/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The block jobs' QMP and HMP (qapi/job.json): the registry's hooks as
 * QEMU's events, blockdev-mirror and drive-mirror, the queries and the
 * verbs; and blockdev-add/blockdev-del, which make and drop a mirror's
 * target node. Main thread, BQL; the machine's layer is
 * current_machine->block.
 */
#include "qemu/osdep.h"
#include <json-glib/json-glib.h>
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "qapi/qapi-events.h"
#include "hw/boards.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "block/mirror.h"
#include "block-int.h"

static BlockLayer *machine_block(void)
{
    return current_machine ? current_machine->block : NULL;
}

/* ---- The registry's hooks ---- */

static void qmp_job_defer(void *opaque, void (*fn)(void *arg), void *arg)
{
    qemu_bh_schedule_oneshot(fn, arg);
}

static void qmp_job_status_change(void *opaque, Job *job)
{
    qapi_event_send_job_status_change(job->id, job->status);
}

#define JOB_PROGRESS(job) \
    (int64_t)__atomic_load_n(&(job)->len, __ATOMIC_SEQ_CST), \
    (int64_t)__atomic_load_n(&(job)->offset, __ATOMIC_SEQ_CST), \
    (int64_t)__atomic_load_n(&(job)->speed, __ATOMIC_SEQ_CST)

static void qmp_job_ready(void *opaque, Job *job)
{
    qapi_event_send_block_job_ready(job->drv->type, job->device, JOB_PROGRESS(job));
}

static void qmp_job_finished(void *opaque, Job *job, bool cancelled, const char *error)
{
    if (cancelled) {
        qapi_event_send_block_job_cancelled(job->drv->type, job->device, JOB_PROGRESS(job));
    } else {
        qapi_event_send_block_job_completed(job->drv->type, job->device, JOB_PROGRESS(job),
                                            error);
    }
}

static void qmp_job_io_error(void *opaque, Job *job, bool is_read, BlockErrorAction action)
{
    qapi_event_send_block_job_error(job->device,
                                    is_read ? IO_OPERATION_TYPE_READ : IO_OPERATION_TYPE_WRITE,
                                    action == BLOCK_ERROR_ACTION_IGNORE
                                        ? BLOCKIO_ERROR_ACTION_IGNORE
                                        : BLOCKIO_ERROR_ACTION_REPORT);
}

static const JobHooks qmp_job_hooks = {
    .defer = qmp_job_defer,
    .status_change = qmp_job_status_change,
    .ready = qmp_job_ready,
    .finished = qmp_job_finished,
    .io_error = qmp_job_io_error,
};

void block_jobs_register_qmp(BlockLayer *bl)
{
    job_registry_set_hooks(block_layer_jobs(bl), &qmp_job_hooks, bl);
}

/* ---- Queries ---- */

static JobRegistry *machine_jobs(void)
{
    BlockLayer *bl = machine_block();

    return bl ? block_layer_jobs(bl) : NULL;
}

BlockJobInfoList *qmp_query_block_jobs(Error **errp)
{
    JobRegistry *reg = machine_jobs();
    BlockJobInfoList *head = NULL, **tail = &head;
    Job *job;

    for (guint i = 0; reg && (job = job_nth(reg, i)); i++) {
        BlockJobInfo *info = g_new0(BlockJobInfo, 1);

        info->type = g_strdup(JobType_str(job->drv->type));
        info->device = g_strdup(job->device);
        info->len = __atomic_load_n(&job->len, __ATOMIC_SEQ_CST);
        info->offset = __atomic_load_n(&job->offset, __ATOMIC_SEQ_CST);
        info->busy = __atomic_load_n(&job->busy, __ATOMIC_SEQ_CST);
        info->paused = false;
        info->speed = __atomic_load_n(&job->speed, __ATOMIC_SEQ_CST);
        info->io_status = BLOCK_DEVICE_IO_STATUS_OK;
        info->ready = job->status == JOB_STATUS_READY || job->status == JOB_STATUS_STANDBY;
        info->status = job->status;
        info->auto_finalize = job->auto_finalize;
        info->auto_dismiss = job->auto_dismiss;
        info->error = g_strdup(job->status == JOB_STATUS_CONCLUDED ? job->error : NULL);
        *tail = g_new0(BlockJobInfoList, 1);
        (*tail)->value = info;
        tail = &(*tail)->next;
    }
    return head;
}

JobInfoList *qmp_query_jobs(Error **errp)
{
    JobRegistry *reg = machine_jobs();
    JobInfoList *head = NULL, **tail = &head;
    Job *job;

    for (guint i = 0; reg && (job = job_nth(reg, i)); i++) {
        JobInfo *info = g_new0(JobInfo, 1);

        info->id = g_strdup(job->id);
        info->type = job->drv->type;
        info->status = job->status;
        info->current_progress = __atomic_load_n(&job->offset, __ATOMIC_SEQ_CST);
        info->total_progress = __atomic_load_n(&job->len, __ATOMIC_SEQ_CST);
        info->error = g_strdup(job->status == JOB_STATUS_CONCLUDED ? job->error : NULL);
        *tail = g_new0(JobInfoList, 1);
        (*tail)->value = info;
        tail = &(*tail)->next;
    }
    return head;
}

/* "info block-jobs", in QEMU's words. */
void hmp_info_block_jobs(Monitor *mon, const HMPArgs *args)
{
    JobRegistry *reg = machine_jobs();
    Job *job = reg ? job_nth(reg, 0) : NULL;

    if (!job) {
        monitor_printf(mon, "No active jobs\n");
        return;
    }
    for (guint i = 0; (job = job_nth(reg, i)); i++) {
        monitor_printf(mon, "Type %s, device %s: Completed %" PRIu64 " of %" PRIu64
                       " bytes, speed limit %" PRId64 " bytes/s\n",
                       JobType_str(job->drv->type), job->device,
                       __atomic_load_n(&job->offset, __ATOMIC_SEQ_CST),
                       __atomic_load_n(&job->len, __ATOMIC_SEQ_CST),
                       __atomic_load_n(&job->speed, __ATOMIC_SEQ_CST));
    }
}

/* ---- Verbs ---- */

static Job *find_job(const char *id, Error **errp)
{
    JobRegistry *reg = machine_jobs();
    Job *job = reg ? job_find(reg, id) : NULL;

    if (!job) {
        error_setg(errp, "Block job '%s' not found", id);
    }
    return job;
}

bool qmp_block_job_set_speed(const char *device, int64_t speed, Error **errp)
{
    Job *job = find_job(device, errp);

    return job && job_set_speed(job, speed, errp);
}

bool qmp_block_job_cancel(const char *device, bool has_force, bool force, Error **errp)
{
    Job *job = find_job(device, errp);

    return job && job_user_cancel(job, has_force && force, errp);
}

bool qmp_block_job_complete(const char *device, Error **errp)
{
    Job *job = find_job(device, errp);

    return job && job_user_complete(job, errp);
}

bool qmp_job_complete(const char *id, Error **errp)
{
    Job *job = find_job(id, errp);

    return job && job_user_complete(job, errp);
}

bool qmp_job_cancel(const char *id, Error **errp)
{
    Job *job = find_job(id, errp);

    return job && job_user_cancel(job, true, errp);
}

bool qmp_job_finalize(const char *id, Error **errp)
{
    Job *job = find_job(id, errp);

    return job && job_finalize(job, errp);
}

bool qmp_job_dismiss(const char *id, Error **errp)
{
    Job *job = find_job(id, errp);

    return job && job_dismiss(job, errp);
}

/* ---- Starting a mirror ---- */

/* The source: a drive's backend (by id or its node's name) or a node nobody attached. */
static BlockDriverState *find_source(BlockLayer *bl, const char *device, BlockBackend **blk,
                                     Error **errp)
{
    BlockDriverState *bs;

    *blk = blk_find(bl, device);
    if (*blk) {
        return blk_bs(*blk);
    }
    bs = bdrv_find_node(bl, device);
    if (!bs) {
        error_setg(errp, "Cannot find device='%s' nor node-name='%s'", device, device);
    }
    return bs;
}

/* QEMU's default job id: the drive's name; a bare node needs one given. */
static const char *default_job_id(BlockBackend *blk, const char *job_id, Error **errp)
{
    if (job_id) {
        return job_id;
    }
    if (blk && blk_name(blk)[0]) {
        return blk_name(blk);
    }
    error_setg(errp, "An explicit job ID is required for this node");
    return NULL;
}

#define MIRROR_ARGS_TO_OPTIONS(o, arg) do {                                     \
    mirror_options_init(o);                                                     \
    (o)->sync = (arg)->sync;                                                    \
    if ((arg)->has_speed) { (o)->speed = (arg)->speed; }                        \
    if ((arg)->has_granularity) { (o)->granularity = (arg)->granularity; }      \
    if ((arg)->has_buf_size) { (o)->buf_size = (arg)->buf_size; }               \
    if ((arg)->has_on_source_error) { (o)->on_source_error = (arg)->on_source_error; } \
    if ((arg)->has_on_target_error) { (o)->on_target_error = (arg)->on_target_error; } \
    if ((arg)->has_copy_mode) { (o)->copy_mode = (arg)->copy_mode; }            \
    if ((arg)->has_auto_finalize) { (o)->auto_finalize = (arg)->auto_finalize; } \
    if ((arg)->has_auto_dismiss) { (o)->auto_dismiss = (arg)->auto_dismiss; }   \
} while (0)

/*
 * QEMU's @replaces: the node whose users get the target when the job
 * completes. Nothing here stacks a quorum or a filter above a drive's
 * node, so the one node a mirror's target can stand in for is its source,
 * which completion replaces anyway: naming it is accepted, any other node
 * refused (its data is not what was mirrored).
 */
static bool check_replaces(BlockLayer *bl, BlockDriverState *source, const char *replaces,
                           Error **errp)
{
    BlockDriverState *bs;

    if (!replaces) {
        return true;
    }
    bs = bdrv_find_node(bl, replaces);
    if (!bs) {
        error_setg(errp, "Node name '%s' not found", replaces);
        return false;
    }
    if (bs != source) {
        error_setg(errp, "Cannot replace '%s' by a node mirrored from '%s': only the mirror's "
                   "source can be replaced", replaces, source->node_name);
        return false;
    }
    return true;
}

bool qmp_blockdev_mirror(const BlockdevMirror *arg, Error **errp)
{
    BlockLayer *bl = machine_block();
    BlockBackend *blk;
    BlockDriverState *source, *target;
    const char *id;
    MirrorOptions o;

    if (!bl || !(source = find_source(bl, arg->device, &blk, errp))) {
        return false;
    }
    target = bdrv_find_node(bl, arg->target);
    if (!target) {
        error_setg(errp, "Cannot find device='%s' nor node-name='%s'", arg->target,
                   arg->target);
        return false;
    }
    if (!check_replaces(bl, source, arg->replaces, errp)) {
        return false;
    }
    id = default_job_id(blk, arg->job_id, errp);
    if (!id) {
        return false;
    }
    MIRROR_ARGS_TO_OPTIONS(&o, arg);
    return mirror_start(bl, id, blk, source, target, &o, errp) != NULL;
}

bool qmp_drive_mirror(const DriveMirror *arg, Error **errp)
{
    BlockLayer *bl = machine_block();
    g_autoptr(QemuOpts) opts = NULL;
    BlockBackend *blk;
    BlockDriverState *source, *target;
    const char *id;
    MirrorOptions o;
    Job *job;

    if (!bl || !(source = find_source(bl, arg->device, &blk, errp))) {
        return false;
    }
    if (!arg->has_mode || arg->mode != NEW_IMAGE_MODE_EXISTING) {
        error_setg(errp, "drive-mirror can only open an image that exists here: "
                   "create it (qemu-img create) and pass mode=existing");
        return false;
    }
    /* QEMU's rule: what replaces a named node must be named itself. */
    if (arg->replaces && !arg->node_name) {
        error_setg(errp, "a node-name must be provided when replacing a named node of the "
                   "graph");
        return false;
    }
    if (!check_replaces(bl, source, arg->replaces, errp)) {
        return false;
    }
    if (arg->node_name && bdrv_find_node(bl, arg->node_name)) {
        error_setg(errp, "Duplicate nodes with node-name='%s'", arg->node_name);
        return false;
    }
    id = default_job_id(blk, arg->job_id, errp);
    if (!id) {
        return false;
    }
    opts = qemu_opts_new();
    if (arg->format) {
        qemu_opt_set(opts, "driver", arg->format);
    }
    if (arg->node_name) {
        qemu_opt_set(opts, "node-name", arg->node_name);
    }
    /*
     * libvirt without -blockdev names an NBD export here ("nbd:host:port:
     * exportname=x", "nbd+unix://..."): the nbd protocol row opens it when
     * the layer has one, as its filename.
     */
    if (g_str_has_prefix(arg->target, "nbd:") || g_str_has_prefix(arg->target, "nbd+")) {
        if (!bdrv_find_driver("nbd")) {
            error_setg(errp, "Unknown protocol 'nbd'");
            return false;
        }
        qemu_opt_set(opts, "file.driver", "nbd");
    } else {
        qemu_opt_set(opts, "file.driver", "file");
    }
    qemu_opt_set(opts, "file.filename", arg->target);
    /* Without format=, probed as -drive does (from_drive). */
    target = bdrv_open_opts(bl, opts, NULL, BDRV_O_RDWR, !arg->format, "", errp);
    if (!target) {
        return false;
    }
    if (!bdrv_refresh_perms(bl, errp)) {
        bdrv_unref(target);
        return false;
    }
    MIRROR_ARGS_TO_OPTIONS(&o, arg);
    job = mirror_start(bl, id, blk, source, target, &o, errp);
    /* The job holds the target now, and closes it when it goes. */
    bdrv_unref(target);
    return job != NULL;
}

/* ---- blockdev-add, blockdev-del ---- */

JsonNode *qmp_blockdev_add(JsonObject *args, Error **errp)
{
    BlockLayer *bl = machine_block();
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);
    g_autofree char *text = NULL;

    if (!bl) {
        error_setg(errp, "No block layer");
        return NULL;
    }
    /* -blockdev's JSON form: the same flattening and checks. */
    json_node_set_object(node, args);
    text = json_to_string(node, FALSE);
    if (!blockdev_parse(bl, text, errp)) {
        return NULL;
    }
    return json_node_init_object(json_node_alloc(), json_object_new());
}

bool qmp_blockdev_del(const char *node_name, Error **errp)
{
    BlockLayer *bl = machine_block();
    BlockDriverState *bs = bl ? bdrv_find_node(bl, node_name) : NULL;

    if (!bs) {
        error_setg(errp, "Failed to find node with node-name='%s'", node_name);
        return false;
    }
    if (mirror_node_busy(bl, bs)) {
        error_setg(errp, "Node '%s' is busy: block device is in use by block job: mirror",
                   node_name);
        return false;
    }
    for (guint i = 0; i < bl->nodes->len; i++) {
        BlockDriverState *p = g_ptr_array_index(bl->nodes, i);

        if (p->file == bs || p->backing == bs) {
            error_setg(errp, "Node %s is not owned by the monitor", node_name);
            return false;
        }
    }
    for (guint i = 0; i < bl->backends->len; i++) {
        BlockBackend *blk = g_ptr_array_index(bl->backends, i);

        if (blk->root == bs) {
            error_setg(errp, "Node '%s' is busy: it is the drive '%s'", node_name,
                       blk->name[0] ? blk->name : (blk->dev_name ? blk->dev_name : ""));
            return false;
        }
    }
    bdrv_unref(bs);
    bdrv_refresh_perms(bl, NULL);
    return true;
}
