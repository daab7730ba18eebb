/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vmdesc writer (migration/stream/vmdesc.c): the JSON text of the
 * stream's trailing description, written straight into one growing
 * buffer while the devices are saved.
 *
 * Why not json-glib's JsonBuilder: the vmdesc is built while the guest is
 * stopped. A builder allocates a GObject node per value and a hash table
 * per object, and a generator then walks that tree; for a microvm that was
 * a third of the device-state phase of the downtime. Here each call appends
 * a few bytes, and the text is ready when the root closes.
 *
 * How to use it (the calls mirror JsonBuilder's, one for one):
 *
 *   g_autoptr(VMDescWriter) w = vmdesc_new();
 *   vmdesc_begin_object(w);
 *   vmdesc_set_member_name(w, "page_size");
 *   vmdesc_add_int_value(w, 4096);
 *   vmdesc_set_member_name(w, "devices");
 *   vmdesc_begin_array(w);
 *   ...                                   one object per device
 *   vmdesc_end_array(w);
 *   vmdesc_end_object(w);
 *   text = vmdesc_get_data(w, &len);      no NUL counted in len
 *
 * The contract: a document is one value (normally an object); inside an
 * object every value is preceded by vmdesc_set_member_name(); inside an
 * array no name is given; every begin is closed by the matching end. A
 * call outside this grammar is a bug of the caller and asserts, so every
 * sequence that runs through yields valid JSON (RFC 8259).
 *
 * The text is what json-glib 1.6's generator (not pretty) printed for the
 * same calls, byte for byte, so the vmdesc on the wire did not change: no
 * whitespace, members in call order, integers in decimal, strings with
 * '"' and '\\' escaped, \b \f \n \r \t short, other control characters and
 * DEL as \u00xx (lower-case hex), other bytes (UTF-8 included) as they are.
 * One exception: json-glib printed U+001F raw, which RFC 8259 forbids;
 * it is \u001f here (no vmdesc name holds one).
 *
 * A writer is owned by the thread that makes it (the migration thread
 * during a switchover, a test); it holds no state shared with anything.
 */
#ifndef MIGRATION_VMDESC_H
#define MIGRATION_VMDESC_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

typedef struct VMDescWriter VMDescWriter;

VMDescWriter *vmdesc_new(void);
void vmdesc_free(VMDescWriter *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(VMDescWriter, vmdesc_free)

void vmdesc_begin_object(VMDescWriter *w);
void vmdesc_end_object(VMDescWriter *w);
void vmdesc_begin_array(VMDescWriter *w);
void vmdesc_end_array(VMDescWriter *w);
/* The name of the next member of the innermost object; @name is escaped. */
void vmdesc_set_member_name(VMDescWriter *w, const char *name);
/* @value is a NUL-terminated string (never NULL), escaped as above. */
void vmdesc_add_string_value(VMDescWriter *w, const char *value);
void vmdesc_add_int_value(VMDescWriter *w, int64_t value);

/*
 * The complete document (its root value closed; asserts otherwise),
 * NUL-terminated, @len bytes without the NUL. It stays the writer's and
 * is valid until vmdesc_free().
 */
const char *vmdesc_get_data(VMDescWriter *w, size_t *len);

#endif
