/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The driver rows, in one place: a new format or protocol is one line
 * here (and its file in meson.build). The order is QEMU's probe order
 * among formats of equal score.
 */
#include "qemu/osdep.h"
#include "block-int.h"

const BlockDriver *const bdrv_drivers[] = {
    &bdrv_file,
    &bdrv_nbd,
    &bdrv_raw,
    &bdrv_qcow2,
    NULL,
};
