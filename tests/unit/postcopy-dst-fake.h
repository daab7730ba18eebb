/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The refusing postcopy destination of the loader's unit tests. */
#ifndef TESTS_POSTCOPY_DST_FAKE_H
#define TESTS_POSTCOPY_DST_FAKE_H

/* Commands that got past the loader's checks to the (fake) destination. */
extern int postcopy_fake_calls;

#endif
