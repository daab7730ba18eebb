/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file a screendump writes: a new file beside the target, renamed over
 * it once complete, so that a failed screendump changes nothing on disk.
 */
#ifndef UI_SCREENDUMP_FILE_H
#define UI_SCREENDUMP_FILE_H

typedef struct ScreendumpFile {
    char *filename; /* as the client gave it, for messages */
    int dirfd;      /* O_PATH on the target's directory, or -1; all names are in it */
    char *base;     /* the regular file or new name the dump replaces */
    char *tmp;      /* our exclusively created file; NULL once renamed or removed */
    int fd;         /* open on tmp, or -1 */
} ScreendumpFile;

/*
 * screendump_file_open: check @filename and create the file to write.
 *
 * Refuses a target that exists and is not a regular file (a symlink
 * included) without opening it. Returns false with @errp set, and
 * nothing created, on failure.
 */
bool screendump_file_open(ScreendumpFile *f, const char *filename, Error **errp);

/* Closes the written file and renames it over the target; on failure as _abort. */
bool screendump_file_commit(ScreendumpFile *f, Error **errp);

/* Removes our file and nothing else. Safe to call twice. */
void screendump_file_abort(ScreendumpFile *f);

#endif
