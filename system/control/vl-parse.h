/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to system/control/: vl-parse.c's option parsers, called by vl.c. */
#ifndef SYSTEM_CONTROL_VL_PARSE_H
#define SYSTEM_CONTROL_VL_PARSE_H

#include "vl-config.h"

/*
 * The options that take parameters, into @cfg (false with @errp set for
 * what is refused).
 */
bool vl_parse_machine(Config *cfg, const char *arg, Error **errp);
bool vl_parse_accel(Config *cfg, const char *arg, Error **errp);
bool vl_parse_cpu(const char *arg, Error **errp);
bool vl_parse_memory_size(Config *cfg, const char *arg, Error **errp);
bool vl_parse_smp(Config *cfg, const char *arg, Error **errp);
bool vl_parse_uuid(Config *cfg, const char *arg, Error **errp);
bool vl_parse_overcommit(Config *cfg, const char *arg, Error **errp);
bool vl_parse_rtc(const char *arg, Error **errp);
bool vl_parse_boot(const char *arg, Error **errp);
bool vl_parse_msg(const char *arg, Error **errp);
bool vl_parse_audiodev(const char *arg, Error **errp);
bool vl_parse_name(const char *arg, Error **errp);
bool vl_parse_display(Config *cfg, const char *arg, Error **errp);
bool vl_parse_global(const char *arg, Error **errp);

#endif
