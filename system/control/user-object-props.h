/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to system/control/: an object's properties as the user gave
 * them, read with QEMU's words for every refusal. From -object key=value
 * and HMP object_add every value is text ("on", "5"); from QMP object-add
 * and -object's JSON syntax values have JSON types and must have the
 * right one, as QEMU's visitors demand. Main thread.
 */
#ifndef SYSTEM_CONTROL_USER_OBJECT_PROPS_H
#define SYSTEM_CONTROL_USER_OBJECT_PROPS_H

#include <json-glib/json-glib.h>
#include "qemu/typedefs.h"

typedef struct UOProps {
    JsonObject *o;              /* qom-type, id and the type's properties; borrowed */
    bool text;                  /* key=value: every value a JSON string */
} UOProps;

/* Every member but qom-type and id must be in @known (NULL-ended). */
bool uo_props_check_known(const UOProps *p, const char *const *known, Error **errp);
/* *@out: the string, or NULL when absent (then @required is an error). */
bool uo_prop_str(const UOProps *p, const char *name, bool required, const char **out,
                 Error **errp);
bool uo_prop_bool(const UOProps *p, const char *name, bool def, bool *out, Error **errp);
/* *@out: the index of the value in @values (NULL-ended), @def when absent. */
bool uo_prop_enum(const UOProps *p, const char *name, const char *const *values, int def,
                  int *out, Error **errp);

#endif
