/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The two character classes that the QMP splitter (qmp-dispatch.c) and the
 * request scanner (qmp-parse.c) must agree on.
 */
#ifndef MONITOR_QMP_TEXT_H
#define MONITOR_QMP_TEXT_H

static inline bool qmp_is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Ends a bare token (number, true, garbage).  Careful: strchr() finds NUL. */
static inline bool qmp_is_delimiter(char c)
{
    return qmp_is_json_space(c) || (c && strchr("{}[],:\"'", c));
}

#endif
