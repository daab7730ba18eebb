/* SPDX-License-Identifier: GPL-2.0-or-later */
/* query-chardev: every chardev, its backend as QEMU describes it, and whether it is in use. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "chardev/char.h"

ChardevInfoList *qmp_query_chardev(Error **errp)
{
    ChardevInfoList *head = NULL, **tail = &head;
    Chardev *chr;

    for (guint i = 0; (chr = qemu_chr_nth(i)); i++) {
        ChardevInfo *info = g_new0(ChardevInfo, 1);

        info->label = g_strdup(qemu_chr_label(chr));
        info->filename = qemu_chr_filename(chr);
        info->frontend_open = qemu_chr_frontend_open(chr);
        *tail = g_new0(ChardevInfoList, 1);
        (*tail)->value = info;
        tail = &(*tail)->next;
    }
    return head;
}
