/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared by test-qmp-dispatch.c and test-qmp-json.c: see qmp-test.c. */
#ifndef TESTS_UNIT_QMP_TEST_H
#define TESTS_UNIT_QMP_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <glib.h>
#include "test-qapi-types.h"
#include "test-qapi-visit.h"
#include "test-qapi-commands.h"
#include "test-qapi-events.h"

/* How the last fake handler was called (its own text); the test frees it. */
extern char *last_call;
/* "NAME data" per emitted event; the test creates and frees the array. */
extern GPtrArray *events;

/* A TestInfo with @id; @full adds every optional member. */
TestInfo *make_info(const char *id, bool full);
/* @json re-serialised by json-glib, so expectations may use any spacing. */
char *normalize(const char *json);
/* Runs @req[0..len); returns the response text ("" for none). */
char *run_len(const char *req, size_t len, bool negotiated, bool *done);
char *run_full(const char *req, bool negotiated, bool *done);
char *run(const char *req);
void check_response(const char *req, const char *expected);
void check_return(const char *req, const char *ret);
/* @desc ending in '*' matches any description starting with the rest. */
void check_error_full(const char *req, bool negotiated, const char *cls, const char *desc);
void check_error(const char *req, const char *desc);
/* A malformed request: a GenericError without "id". */
void check_parse_error(const char *req, size_t len);

#endif
