/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Screendumps of a running VM: see picture.h. */
#include <glib/gstdio.h>
#include <stdio.h>
#include "picture.h"

void picture_load(Picture *p, const char *file)
{
    gsize len;
    int off = 0;

    g_assert_true(g_file_get_contents(file, &p->data, &len, NULL));
    g_assert_cmpint(sscanf(p->data, "P6\n%d %d\n255\n%n", &p->w, &p->h, &off), ==, 2);
    g_assert_cmpint(off, >, 0);
    g_assert_cmpuint(len, ==, (gsize)off + (gsize)p->w * p->h * 3);
    p->rgb = (guchar *)p->data + off;
}

void picture_screendump(VM *vm, const char *name, Picture *p)
{
    g_autofree char *file = g_strdup_printf("%s/%s.ppm", vmtest_tmpdir(), name);

    g_unlink(file);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'screendump', 'arguments': "
                              "{'filename': '%s'}}", file));
    picture_load(p, file);
    g_unlink(file);
}

void picture_free(Picture *p)
{
    g_free(p->data);
    p->data = NULL;
    p->rgb = NULL;
}
