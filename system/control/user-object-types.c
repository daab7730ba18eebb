/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rows of the object registry: secret, tls-creds-{x509,psk,anon},
 * authz-{simple,list,listfile}. Each reads its properties with QEMU's
 * names and defaults and makes the object from crypto/ or authz/; the
 * checks of the objects' own content (files, rules) are theirs.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "crypto/tls-creds.h"
#include "authz/authz-objects.h"
#include "user-object-types.h"

/* -object secret: its bytes, immutable, read once when made. */
typedef struct UserSecret {
    GByteArray *bytes;
} UserSecret;

static const char *const secret_formats[] = { "raw", "base64", NULL };

static bool base64_ok(const char *s, gsize len)
{
    for (gsize i = 0; i < len; i++) {
        if (!g_ascii_isalnum(s[i]) && !strchr("+/=\r\n", s[i])) {
            return false;
        }
    }
    return true;
}

static void *secret_create(const char *id, const UOProps *p, UOSecretLookup *lookup,
                           void *opaque, Error **errp)
{
    static const char *const known[] = { "data", "file", "format", "keyid", "iv", NULL };
    g_autoptr(GError) gerr = NULL;
    g_autofree char *contents = NULL;
    const char *data, *file, *keyid;
    UserSecret *s;
    gsize len = 0;
    int format;

    if (!uo_props_check_known(p, known, errp) || !uo_prop_str(p, "data", false, &data, errp) ||
        !uo_prop_str(p, "file", false, &file, errp) ||
        !uo_prop_str(p, "keyid", false, &keyid, errp) ||
        !uo_prop_enum(p, "format", secret_formats, 0, &format, errp)) {
        return NULL;
    }
    if (keyid || json_object_has_member(p->o, "iv")) {
        /* AES-encrypted secrets (libvirt's with its master key) need a cipher we have not wired. */
        error_setg(errp, "Secret '%s': encrypted secrets (keyid, iv) are not supported", id);
        return NULL;
    }
    if (data && file) {
        error_setg(errp, "'file' and 'data' are mutually exclusive");
        return NULL;
    }
    if (!data && !file) {
        error_setg(errp, "Either 'file' or 'data' must be provided");
        return NULL;
    }
    if (file && !g_file_get_contents(file, &contents, &len, &gerr)) {
        error_setg(errp, "Unable to read %s: %s", file, gerr->message);
        return NULL;
    }
    if (data) {
        contents = g_strdup(data);
        len = strlen(data);
    }
    s = g_new0(UserSecret, 1);
    if (format == 1) {
        guchar *raw;
        gsize rawlen;

        if (!base64_ok(contents, len)) {
            error_setg(errp, "Base64 data contains invalid characters");
            g_free(s);
            return NULL;
        }
        raw = g_base64_decode(contents, &rawlen);
        s->bytes = g_byte_array_new_take(raw, rawlen);
    } else {
        s->bytes = g_byte_array_new_take((guint8 *)g_steal_pointer(&contents), len);
    }
    return s;
}

const GByteArray *user_secret_bytes(void *obj)
{
    return ((UserSecret *)obj)->bytes;
}

static const char *const endpoints[] = { "client", "server", NULL };

/*
 * The properties all three credential types share into @o; the strings
 * stay @p's. @known: the type's whole list.
 */
static bool tls_common(const char *type, const char *id, const UOProps *p,
                       const char *const *known, TLSCredsOptions *o, Error **errp)
{
    int endpoint;

    *o = (TLSCredsOptions) { .type = type, .id = id };
    if (!uo_props_check_known(p, known, errp) || !uo_prop_str(p, "dir", false, &o->dir, errp) ||
        !uo_prop_enum(p, "endpoint", endpoints, 0, &endpoint, errp) ||
        !uo_prop_bool(p, "verify-peer", true, &o->verify_peer, errp) ||
        !uo_prop_str(p, "priority", false, &o->priority, errp)) {
        return false;
    }
    o->endpoint_server = endpoint == 1;
    return true;
}

static void *tls_x509_create(const char *id, const UOProps *p, UOSecretLookup *lookup,
                             void *opaque, Error **errp)
{
    static const char *const known[] = { "dir", "endpoint", "verify-peer", "priority",
                                         "passwordid", "sanity-check", NULL };
    g_autofree char *password = NULL;
    const char *passwordid;
    TLSCredsOptions o;

    if (!tls_common("tls-creds-x509", id, p, known, &o, errp) ||
        !uo_prop_str(p, "passwordid", false, &passwordid, errp) ||
        !uo_prop_bool(p, "sanity-check", true, &o.sanity_check, errp)) {
        return NULL;
    }
    if (passwordid) {
        password = lookup(opaque, passwordid, errp);
        if (!password) {
            return NULL;
        }
        o.key_password = password;
    }
    return tls_creds_new(&o, errp);
}

static void *tls_psk_create(const char *id, const UOProps *p, UOSecretLookup *lookup,
                            void *opaque, Error **errp)
{
    static const char *const known[] = { "dir", "endpoint", "verify-peer", "priority",
                                         "username", NULL };
    TLSCredsOptions o;

    if (!tls_common("tls-creds-psk", id, p, known, &o, errp) ||
        !uo_prop_str(p, "username", false, &o.username, errp)) {
        return NULL;
    }
    return tls_creds_new(&o, errp);
}

static void *tls_anon_create(const char *id, const UOProps *p, UOSecretLookup *lookup,
                             void *opaque, Error **errp)
{
    static const char *const known[] = { "dir", "endpoint", "verify-peer", "priority", NULL };
    TLSCredsOptions o;

    return tls_common("tls-creds-anon", id, p, known, &o, errp) ? tls_creds_new(&o, errp)
                                                                  : NULL;
}

static void *authz_simple_create(const char *id, const UOProps *p, UOSecretLookup *lookup,
                                 void *opaque, Error **errp)
{
    static const char *const known[] = { "identity", NULL };
    const char *identity;

    if (!uo_props_check_known(p, known, errp) ||
        !uo_prop_str(p, "identity", true, &identity, errp)) {
        return NULL;
    }
    return authz_simple_new(id, identity);
}

static void *authz_list_create(const char *id, const UOProps *p, UOSecretLookup *lookup,
                               void *opaque, Error **errp)
{
    static const char *const known[] = { "policy", "rules", NULL };

    /* The values, JSON-typed or text, are the reader's to check (rules exist only in JSON). */
    return uo_props_check_known(p, known, errp) ? authz_list_new(id, p->o, errp) : NULL;
}

static void *authz_listfile_create(const char *id, const UOProps *p, UOSecretLookup *lookup,
                                   void *opaque, Error **errp)
{
    static const char *const known[] = { "filename", "refresh", NULL };
    const char *filename;
    bool refresh;

    if (!uo_props_check_known(p, known, errp) ||
        !uo_prop_str(p, "filename", true, &filename, errp) ||
        !uo_prop_bool(p, "refresh", true, &refresh, errp)) {
        return NULL;
    }
    return authz_listfile_new(id, filename, refresh, errp);
}

static const UserObjectType types[] = {
    { "secret", UO_CLASS_SECRET, secret_create },
    { "tls-creds-x509", UO_CLASS_TLS_CREDS, tls_x509_create },
    { "tls-creds-psk", UO_CLASS_TLS_CREDS, tls_psk_create },
    { "tls-creds-anon", UO_CLASS_TLS_CREDS, tls_anon_create },
    { "authz-simple", UO_CLASS_AUTHZ, authz_simple_create },
    { "authz-list", UO_CLASS_AUTHZ, authz_list_create },
    /* QEMU's spelling of the type, and the one issue 36 gave it: the same object. */
    { "authz-list-file", UO_CLASS_AUTHZ, authz_listfile_create },
    { "authz-listfile", UO_CLASS_AUTHZ, authz_listfile_create },
};

const UserObjectType *user_object_type_find(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(types); i++) {
        if (!strcmp(types[i].name, name)) {
            return &types[i];
        }
    }
    return NULL;
}

bool user_object_in_use(UserObjectClass cls, void *obj)
{
    switch (cls) {
    case UO_CLASS_TLS_CREDS:
        return tls_creds_in_use(obj);
    case UO_CLASS_AUTHZ:
        return authz_in_use(obj);
    case UO_CLASS_SECRET:
        /* Its users copied its bytes when they were made. */
        return false;
    }
    return false;
}

void user_object_release(UserObjectClass cls, void *obj)
{
    switch (cls) {
    case UO_CLASS_TLS_CREDS:
        tls_creds_unref(obj);
        break;
    case UO_CLASS_AUTHZ:
        authz_unref(obj);
        break;
    case UO_CLASS_SECRET: {
        UserSecret *s = obj;

        /* The bytes may be a key's password: not left in freed memory. */
        memset(s->bytes->data, 0, s->bytes->len);
        g_byte_array_unref(s->bytes);
        g_free(s);
        break;
    }
    }
}
