/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * authz-listfile: authz-list's rules, read from a JSON file. With refresh,
 * every check first compares the file with the one the rules came from
 * (inode, size, mtime, ctime, to the nanosecond) and reads it again when
 * it changed. A check is a TLS handshake, rare next to a stat(), and
 * asking at the check needs no watcher thread or main-loop hook, so a
 * change is seen by the first handshake after it, in whatever thread.
 *
 * A new version that cannot be read or parsed replaces the rules with its
 * error: every check fails with it until a good version appears (QEMU
 * denies everyone then too), rather than going on with rules the user
 * has already replaced.
 */
#include "qemu/osdep.h"
#include <sys/stat.h>
#include "qapi/error.h"
#include "authz/authz-objects.h"
#include "authz-int.h"

/* A listfile is an ACL of a few lines; anything bigger is not one. */
#define LISTFILE_MAX_BYTES (1024 * 1024)

typedef struct AuthzListFile {
    Authz base;
    char *filename;             /* immutable */
    bool refresh;               /* immutable */
    GMutex lock;                /* protects the three below; held across a reload */
    AuthzRules *rules;          /* lock: NULL while the file's version is bad */
    Error *bad;                 /* lock: why @rules is NULL */
    struct stat seen;           /* lock: the file @rules (or @bad) came from */
} AuthzListFile;

static bool stat_same(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * Reads and parses @filename; *@st is the file as it was before reading.
 * Stat first: a write between the two leaves a stamp older than the text,
 * which only costs one more reload; the other order could miss it forever.
 */
static AuthzRules *listfile_read(const char *filename, struct stat *st, Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autofree char *text = NULL;
    size_t len = 0;
    int fd;

    /*
     * One descriptor for the checks and the read, non-blocking: a FIFO or a
     * device named here must neither hang a handshake thread (this runs
     * under the object's lock) nor feed it without end.
     */
    fd = open(filename, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, st) < 0) {
        error_setg_errno(errp, errno, "Unable to read '%s'", filename);
        if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    if (!S_ISREG(st->st_mode)) {
        error_setg(errp, "Authorization list file '%s' is not a regular file", filename);
        close(fd);
        return NULL;
    }
    /* One byte past the limit tells a file that grew since fstat. */
    text = g_malloc(LISTFILE_MAX_BYTES + 2);
    while (len <= LISTFILE_MAX_BYTES) {
        ssize_t n = read(fd, text + len, LISTFILE_MAX_BYTES + 1 - len);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            error_setg_errno(errp, errno, "Unable to read '%s'", filename);
            close(fd);
            return NULL;
        }
        if (n == 0) {
            break;
        }
        len += n;
    }
    close(fd);
    if (len > LISTFILE_MAX_BYTES) {
        error_setg(errp, "Authorization list file '%s' is larger than %d bytes", filename,
                   LISTFILE_MAX_BYTES);
        return NULL;
    }
    text[len] = '\0';
    root = json_from_string(text, &gerr);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        error_setg(errp, "Authorization list file '%s': %s", filename,
                   gerr ? gerr->message : "not a JSON object");
        return NULL;
    }
    return authz_rules_from_json(json_node_get_object(root), true, errp);
}

/* Called with @f->lock held. */
static void listfile_reload_locked(AuthzListFile *f)
{
    Error *err = NULL;
    AuthzRules *rules = listfile_read(f->filename, &f->seen, &err);

    authz_rules_free(f->rules);
    error_free(f->bad);
    f->rules = rules;
    f->bad = err;
    if (err) {
        error_prepend(&f->bad, "authz-listfile '%s': ", f->base.id);
    }
}

static AuthzAnswer listfile_check(Authz *a, const char *identity, Error **errp)
{
    AuthzListFile *f = container_of(a, AuthzListFile, base);
    g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&f->lock);
    struct stat now;

    if (f->refresh) {
        /* A file that is gone is a change too: its error replaces the rules. */
        if (stat(f->filename, &now) < 0 || !stat_same(&now, &f->seen)) {
            listfile_reload_locked(f);
        }
    }
    if (!f->rules) {
        error_setg(errp, "%s", error_get_pretty(f->bad));
        return AUTHZ_ERROR;
    }
    return authz_rules_decide(f->rules, identity) == AUTHZ_POLICY_ALLOW ? AUTHZ_ALLOW
                                                                        : AUTHZ_DENY;
}

static void listfile_finalize(Authz *a)
{
    AuthzListFile *f = container_of(a, AuthzListFile, base);

    authz_rules_free(f->rules);
    error_free(f->bad);
    g_mutex_clear(&f->lock);
    g_free(f->filename);
}

static const AuthzOps listfile_ops = {
    .check = listfile_check,
    .finalize = listfile_finalize,
};

Authz *authz_listfile_new(const char *id, const char *filename, bool refresh, Error **errp)
{
    struct stat st;
    AuthzRules *rules = listfile_read(filename, &st, errp);
    AuthzListFile *f;

    if (!rules) {
        return NULL;
    }
    f = g_new0(AuthzListFile, 1);
    authz_init(&f->base, &listfile_ops, id);
    f->filename = g_strdup(filename);
    f->refresh = refresh;
    g_mutex_init(&f->lock);
    f->rules = rules;
    f->seen = st;
    return &f->base;
}
