/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to system/control/: vl-devices.c's -device and -object, parsed
 * into the Config by vl.c's option loop and created by qemu_init().
 */
#ifndef SYSTEM_CONTROL_VL_DEVICES_H
#define SYSTEM_CONTROL_VL_DEVICES_H

#include "qemu/option.h"
#include "block/block.h"
#include "vl-config.h"

/*
 * @arg as QemuOpts, from key=value (with @implied_key for a
 * leading bare value) or, if it starts with '{', a JSON object of scalars
 * (libvirt's -object/-device/-audiodev syntax): strings as they are,
 * numbers in decimal, booleans as on/off.
 */
QemuOpts *vl_opts_parse_json_or_keyval(const char *arg, const char *implied_key, Error **errp);
/* -device and -object, parsed into @cfg (nothing created yet). */
bool vl_parse_device(Config *cfg, const char *arg, Error **errp);
bool vl_parse_object(Config *cfg, const char *arg, Error **errp);
/* qemu_init(), in its order: one -object memory-backend-*, then the virtio devices. */
bool vl_create_memory_backend(QemuOpts *opts, Error **errp);
/* The -device virtio-*-device in command-line order (disks on @bl's drives), then -nic's. */
void vl_create_virtio_devices(Config *cfg, BlockLayer *bl);

#endif
