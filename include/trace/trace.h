/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Trace points for the migration pipeline (see trace/trace.c). */
#ifndef TRACE_TRACE_H
#define TRACE_TRACE_H

#include <stdbool.h>
#include "qemu/typedefs.h"

/* -trace file=PATH[,events=GLOB]: returns false with @errp on a bad spec. */
bool trace_parse_option(const char *arg, Error **errp);

#endif
