/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which page transport a migration uses (ram-sink.h), and the checks of
 * its URI: the only place that knows there are several. Rows go from the
 * most general to the most specific; a migration takes the last row its
 * capabilities select (mapped-ram's file overrides multifd's channels,
 * which override records on the stream), and every row checks the URI in
 * this order, so a refusal names the broadest rule first.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/qemu-file.h"
#include "migration/core/options.h"
#include "ram-codec.h"
#include "ram-sink.h"

static bool multifd_selected(void)
{
    return migrate_multifd();
}

static bool mapped_selected(void)
{
    return migrate_mapped_ram();
}

static const struct {
    const RAMSinkOps *ops;
    bool (*selected)(void);     /* the capabilities ask for it; NULL: the default */
} ram_sink_rows[] = {
    { &ram_records_sink, NULL },
    { &ram_multifd_sink, multifd_selected },
    { &ram_mapped_sink, mapped_selected },
};

const RAMSinkOps *ram_sink_select(void)
{
    const RAMSinkOps *ops = NULL;

    for (size_t i = 0; i < G_N_ELEMENTS(ram_sink_rows); i++) {
        if (!ram_sink_rows[i].selected || ram_sink_rows[i].selected()) {
            ops = ram_sink_rows[i].ops;
        }
    }
    return ops;
}

bool ram_sink_check_uri(const char *uri, Error **errp)
{
    for (size_t i = 0; i < G_N_ELEMENTS(ram_sink_rows); i++) {
        const RAMSinkOps *ops = ram_sink_rows[i].ops;

        if (ops->check_uri && !ops->check_uri(uri, errp)) {
            return false;
        }
    }
    return true;
}

bool ram_sink_open(RAMPageWriter *w, const RAMSinkOps *ops, QEMUFile *f,
                   const RAMSinkConfig *cfg, Error **errp)
{
    ram_sink_free(w);
    w->ops = ops;
    w->sink = ops->open(f, cfg, errp);
    if (!w->sink) {
        w->ops = NULL;
        return false;
    }
    return true;
}
