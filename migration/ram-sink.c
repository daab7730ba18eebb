/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which page sink a migration uses (ram-sink.h): the first row whose
 * transport this migration connected. The only place that knows there
 * are several.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/qemu-file.h"
#include "mapped-ram-out.h"
#include "multifd-send.h"
#include "ram-codec.h"
#include "ram-sink.h"

static bool mapped_connected(void)
{
    return mapped_ram_out() != NULL;
}

static bool multifd_connected(void)
{
    return multifd_sender() != NULL;
}

static const struct {
    const RAMSinkOps *ops;
    bool (*connected)(void);    /* NULL: always there (the main stream) */
} ram_sink_rows[] = {
    { &ram_mapped_sink, mapped_connected },
    { &ram_multifd_sink, multifd_connected },
    { &ram_records_sink, NULL },
};

bool ram_sink_open(RAMPageWriter *w, QEMUFile *f, const RAMSinkConfig *cfg, Error **errp)
{
    ram_sink_free(w);
    for (size_t i = 0; i < G_N_ELEMENTS(ram_sink_rows); i++) {
        const RAMSinkOps *ops = ram_sink_rows[i].ops;

        if (ram_sink_rows[i].connected && !ram_sink_rows[i].connected()) {
            continue;
        }
        w->ops = ops;
        w->sink = ops->open(f, cfg, errp);
        if (!w->sink) {
            w->ops = NULL;
            return false;
        }
        return true;
    }
    g_assert_not_reached();
}
