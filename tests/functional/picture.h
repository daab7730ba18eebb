/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Screendumps (binary PPM, P6) of a running VM, loaded for pixel checks. */
#ifndef PICTURE_H
#define PICTURE_H

#include <glib.h>
#include "libvmtest.h"

typedef struct Picture {
    int w, h;
    guchar *rgb;        /* w * h * 3, inside data */
    char *data;         /* the whole file */
} Picture;

/* Loads @file, asserting it is a P6 PPM of exactly w * h pixels. */
void picture_load(Picture *p, const char *file);
/* QMP screendump into the test's directory as @name.ppm, then loaded. */
void picture_screendump(VM *vm, const char *name, Picture *p);
void picture_free(Picture *p);

#endif
