/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMUFile: a buffered, big-endian byte stream over a channel
 * (include/io/channel.h) or a memory buffer, with a sticky error. After the first error every put is a no-op
 * and every get returns zeroes, so callers check once per section with
 * qemu_file_get_error(). Outgoing files batch small puts into a buffer and
 * send guest pages by reference (iovec) without copying them.
 *
 * A QEMUFile is used by one thread at a time; qemu_file_shutdown() may be
 * called from any thread to make blocked I/O fail.
 */
#ifndef MIGRATION_QEMU_FILE_H
#define MIGRATION_QEMU_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "qemu/typedefs.h"

/*
 * Over a channel; the file takes the caller's reference to @ch and drops
 * it at qemu_fclose() (the connection closes once no one else, such as the
 * return path, holds one). @name is for messages.
 */
QEMUFile *qemu_file_new_output(Channel *ch, const char *name);
QEMUFile *qemu_file_new_input(Channel *ch, const char *name);
/* Memory-backed output (device state of a background snapshot). */
QEMUFile *qemu_file_new_buffer_output(void);
/* Memory-backed input over @data (not copied; must outlive the file). */
QEMUFile *qemu_file_new_buffer_input(const uint8_t *data, size_t len);
/* The bytes written so far to a buffer output. */
const uint8_t *qemu_file_buffer_data(QEMUFile *f, size_t *len);
/* Flushes, closes, frees. Returns the first error (0 or -errno). */
int qemu_fclose(QEMUFile *f);
const char *qemu_file_name(QEMUFile *f);
/*
 * The channel's descriptor (channel_fd(); -1 for a memory buffer), for
 * what is not stream I/O: poll() for readability, fstat, positional I/O
 * on a mapped-ram file. @f still owns it; never read or write it.
 */
int qemu_file_fd(QEMUFile *f);
/* The channel under @f (NULL for a memory buffer), borrowed: channel_ref() to keep it. */
Channel *qemu_file_channel(QEMUFile *f);

void qemu_put_byte(QEMUFile *f, uint8_t v);
void qemu_put_be16(QEMUFile *f, uint16_t v);
void qemu_put_be32(QEMUFile *f, uint32_t v);
void qemu_put_be64(QEMUFile *f, uint64_t v);
void qemu_put_buffer(QEMUFile *f, const void *buf, size_t len);
/*
 * Queue @buf by reference: it must stay valid and unchanged until the next
 * qemu_fflush() (which every reference-holding caller must issue before it
 * lets the memory change, e.g. before un-write-protecting it).
 */
void qemu_put_buffer_async(QEMUFile *f, const void *buf, size_t len);
/* 1-byte length + bytes (at most 255), as QEMU's counted strings. */
void qemu_put_counted_string(QEMUFile *f, const char *s);
void qemu_fflush(QEMUFile *f);

uint8_t qemu_get_byte(QEMUFile *f);
uint16_t qemu_get_be16(QEMUFile *f);
uint32_t qemu_get_be32(QEMUFile *f);
uint64_t qemu_get_be64(QEMUFile *f);
/* Reads exactly @len bytes (else sets the error and zero-fills). */
void qemu_get_buffer(QEMUFile *f, void *buf, size_t len);
/* Input bytes read ahead and not consumed yet: what can be read without waiting. */
size_t qemu_file_input_buffered(QEMUFile *f);
/* Reads a counted string into @buf (>= 256 bytes); false on error. */
bool qemu_get_counted_string(QEMUFile *f, char *buf);
/* Returns the byte @offset ahead without consuming it, or -1 at EOF/error. */
int qemu_peek_byte(QEMUFile *f, size_t offset);
/* Skips @len bytes. */
void qemu_file_skip(QEMUFile *f, size_t len);
/*
 * Input: from now on every byte consumed (got or skipped, not peeked, not
 * read ahead) is also fed to @st, in order; NULL stops. The caller owns
 * @st and keeps it alive until it stops.
 */
typedef struct Xxh64State Xxh64State;
void qemu_file_hash_consumed(QEMUFile *f, Xxh64State *st);

int qemu_file_get_error(QEMUFile *f);
/* Records @err (negative errno) unless an error is already set. */
void qemu_file_set_error(QEMUFile *f, int err);
/* Like qemu_file_set_error, with a message for the user. */
void qemu_file_set_error_msg(QEMUFile *f, int err, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* The message of the first error ("" if none had a message). */
const char *qemu_file_error_msg(QEMUFile *f);
/*
 * Makes pending and future blocking I/O fail with -EIO, on every row
 * (channel_shutdown() on both directions). Any thread.
 */
void qemu_file_shutdown(QEMUFile *f);

/*
 * Seekable fd-backed files (a file: URI): the absolute position of the
 * next byte put (output, after a flush) or consumed (input), or -errno.
 */
int64_t qemu_file_tell(QEMUFile *f);
/*
 * Moves the next put or get to absolute position @pos (output flushes
 * first, input drops what it read ahead). False with the error set on @f.
 */
bool qemu_file_seek(QEMUFile *f, int64_t pos);
/* Bytes put (output) or consumed (input) so far, buffered ones included. */
uint64_t qemu_file_transferred(QEMUFile *f);
/*
 * Counts @len bytes the migration sent on other connections (multifd
 * channels) as if put here: in qemu_file_transferred() and against the
 * rate limit. Called by the file's one user thread.
 */
void qemu_file_count_side_bytes(QEMUFile *f, uint64_t len);

/*
 * Rate limiting in windows: @limit bytes may be put per window (0 = no
 * limit). qemu_file_rate_limit() tells the caller to stop putting until
 * qemu_file_reset_rate_window() opens the next window.
 */
void qemu_file_set_rate_limit(QEMUFile *f, uint64_t limit);
uint64_t qemu_file_get_rate_limit(QEMUFile *f);
bool qemu_file_rate_limit(QEMUFile *f);
void qemu_file_reset_rate_window(QEMUFile *f);

#endif
