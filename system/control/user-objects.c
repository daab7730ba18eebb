/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The object registry (QEMU's /objects container): objects made by name
 * with -object, object-add and object_add, looked up by id when a
 * migration names them, deleted with object-del unless something holds
 * them. Rows per type are in user-object-types.c; this file keeps the
 * ids, the references and QEMU's words for the registry's own refusals.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qapi/qapi-commands.h"
#include "qemu/option.h"
#include "qapi/qapi-json.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "system/user-objects.h"
#include "user-object-types.h"

typedef struct UserObject {
    char *id;
    const UserObjectType *type;
    void *obj;                  /* the registry's reference */
} UserObject;

/*
 * One per process, made by qemu_init() before the command line is parsed
 * and never freed (objects live until object-del or exit). Main thread
 * only: every function here runs in it, and what leaves it is a
 * reference, never the table.
 */
typedef struct UserObjects {
    GHashTable *by_id;          /* id -> UserObject *, owns both */
} UserObjects;

/*
 * The lookups (include/system/user-objects.h) and the generated QMP
 * dispatch take no instance, so the one registry is reached through this
 * pointer; it is set once by user_objects_init() and read only in the
 * main thread.
 */
static UserObjects *registry;

static void user_object_free(gpointer p)
{
    UserObject *uo = p;

    user_object_release(uo->type->cls, uo->obj);
    g_free(uo->id);
    g_free(uo);
}

void user_objects_init(void)
{
    g_assert(!registry);
    registry = g_new0(UserObjects, 1);
    registry->by_id = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, user_object_free);
}

bool user_objects_knows_type(const char *type)
{
    return user_object_type_find(type) != NULL;
}


static UserObject *find(const char *id)
{
    return g_hash_table_lookup(registry->by_id, id);
}

/* For tls-creds-x509's passwordid: QEMU's qcrypto_secret_lookup_as_utf8(). */
static char *secret_text(void *opaque, const char *id, Error **errp)
{
    UserObject *o = find(id);
    const GByteArray *b;

    if (!o) {
        error_setg(errp, "No secret with id '%s'", id);
        return NULL;
    }
    if (o->type->cls != UO_CLASS_SECRET) {
        error_setg(errp, "Object with id '%s' is not a secret", id);
        return NULL;
    }
    b = user_secret_bytes(o->obj);
    if (memchr(b->data, 0, b->len) || !g_utf8_validate((const char *)b->data, b->len, NULL)) {
        error_setg(errp, "Data from secret %s is not valid UTF-8", id);
        return NULL;
    }
    return g_strndup((const char *)b->data, b->len);
}

static bool add(const UOProps *p, UserObjectSource src, Error **errp)
{
    const UserObjectType *type;
    const char *type_name, *id;
    UserObject *o;
    void *obj;

    if (!uo_prop_str(p, "qom-type", true, &type_name, errp)) {
        return false;
    }
    type = user_object_type_find(type_name);
    if (!type) {
        error_setg(errp, "Parameter 'qom-type' does not accept value '%s'", type_name);
        return false;
    }
    if (!uo_prop_str(p, "id", true, &id, errp)) {
        return false;
    }
    if (!id_wellformed(id)) {
        error_setg(errp, "Parameter 'id' expects an identifier");
        return false;
    }
    if (find(id)) {
        if (src == USER_OBJECT_CMDLINE) {
            error_setg(errp, "Duplicate ID '%s' for object", id);
        } else {
            error_setg(errp, "attempt to add duplicate property '%s' to object "
                       "(type 'container')", id);
        }
        return false;
    }
    obj = type->create(id, p, secret_text, registry, errp);
    if (!obj) {
        return false;
    }
    o = g_new0(UserObject, 1);
    o->id = g_strdup(id);
    o->type = type;
    o->obj = obj;
    g_hash_table_insert(registry->by_id, o->id, o);
    return true;
}

bool user_objects_add_json(JsonObject *props, UserObjectSource src, Error **errp)
{
    UOProps p = { .o = props, .text = false };

    return add(&p, src, errp);
}

bool user_objects_add_text(const char *text, UserObjectSource src, Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(text, "qom-type", errp);
    g_autoptr(JsonObject) o = NULL;
    UOProps p;

    if (!opts) {
        return false;
    }
    o = json_object_new();
    for (size_t i = 0; i < qemu_opts_count(opts); i++) {
        const QemuOpt *opt = qemu_opts_nth(opts, i);

        json_object_set_string_member(o, opt->name, opt->value);
    }
    p = (UOProps) { .o = o, .text = true };
    return add(&p, src, errp);
}

bool user_objects_del(const char *id, Error **errp)
{
    UserObject *o = find(id);

    if (!o) {
        error_setg(errp, "object '%s' not found", id);
        return false;
    }
    if (user_object_in_use(o->type->cls, o->obj)) {
        error_setg(errp, "object '%s' is in use, can not be deleted", id);
        return false;
    }
    g_hash_table_remove(registry->by_id, id);
    return true;
}

TLSCreds *user_objects_tls_creds(const char *id, Error **errp)
{
    UserObject *o = find(id);

    if (!o) {
        error_setg(errp, "No TLS credentials with id '%s'", id);
        return NULL;
    }
    if (o->type->cls != UO_CLASS_TLS_CREDS) {
        error_setg(errp, "Object with id '%s' is not TLS credentials", id);
        return NULL;
    }
    return tls_creds_ref(o->obj);
}

Authz *user_objects_authz(const char *id, Error **errp)
{
    UserObject *o = find(id);

    if (!o) {
        error_setg(errp, "Cannot find QAuthZ object ID %s", id);
        return NULL;
    }
    if (o->type->cls != UO_CLASS_AUTHZ) {
        error_setg(errp, "Object '%s' is not a QAuthZ subclass", id);
        return NULL;
    }
    return authz_ref(o->obj);
}

/* ---- QMP and HMP: one implementation, two presentations ---- */

JsonNode *qmp_object_add(JsonObject *args, Error **errp)
{
    return user_objects_add_json(args, USER_OBJECT_MONITOR, errp)
           ? qapi_object_to_json(json_object_new()) : NULL;
}

bool qmp_object_del(const char *id, Error **errp)
{
    return user_objects_del(id, errp);
}

void hmp_object_add(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    user_objects_add_text(hmp_arg_str(args, "object"), USER_OBJECT_MONITOR, &err);
    hmp_handle_error(mon, err);
}

void hmp_object_del(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    qmp_object_del(hmp_arg_str(args, "id"), &err);
    hmp_handle_error(mon, err);
}
