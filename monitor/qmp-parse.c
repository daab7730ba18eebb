/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * From QMP text to a request: a scan that bounds what json-glib will see
 * (nesting, one value, numbers), then json-glib's parser.
 *
 * Numbers are where json-glib (1.6) and QEMU part: json-glib takes 0x10,
 * 010, .5 and "- 1", wraps integers outside int64, and keeps every integer
 * as an int64, so 18446744073709551615 and -1 become the same node. The
 * scan refuses what is not a JSON number, rewrites integers outside
 * [INT64_MIN, UINT64_MAX] as floats, and lists every number in text order;
 * json-glib then makes exactly one number node per listed number, and its
 * "object-member"/"array-element" signals, emitted right after each value
 * is parsed, come in the same order. Matching the two lists names the
 * nodes whose literal was in [2^63, 2^64): the one bit the tree lacks,
 * handed to the decoders with the request (qapi-json.h).
 *
 * The rest of json-glib's scanner must agree with the scan too, or the
 * bound on nesting is void: comments and $hex integers are refused as
 * QEMU refuses them, and single-quoted strings are handed to json-glib
 * double-quoted (see scan_sq_string).
 */
#include "qemu/osdep.h"
#include <math.h>
#include "qapi/error.h"
#include "qapi/qapi-json.h"
#include "monitor/qmp-parse.h"
#include "qmp-text.h"

/*
 * What kind of node json-glib makes of a number of the text. A byte per
 * number: a request of 64 MiB holds up to 32 M of them.
 */
typedef enum QmpNumberKind {
    QMP_NUMBER_FLOAT,
    QMP_NUMBER_INT,
    QMP_NUMBER_UNSIGNED,        /* an integer literal in [2^63, 2^64) */
} QmpNumberKind;

/* The scan's results; freed by scan_free(). */
typedef struct QmpScan {
    int values;             /* top-level values */
    GString *fixed;         /* the text with overflowing integers as floats, or NULL */
    GByteArray *kinds;      /* QmpNumberKind of each number, in text order */
    GArray *unsigned_values; /* int64 json-glib stores for each QMP_NUMBER_UNSIGNED */
} QmpScan;

static void scan_free(QmpScan *scan)
{
    if (scan->fixed) {
        g_string_free(scan->fixed, TRUE);
    }
    g_byte_array_free(scan->kinds, TRUE);
    g_array_free(scan->unsigned_values, TRUE);
}

/*
 * RFC 8259's number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, as
 * QEMU's lexer takes it. *is_int: no fraction and no exponent.
 */
static bool json_number_valid(const char *s, size_t len, bool *is_int)
{
    size_t i = 0, d;

    *is_int = true;
    i += i < len && s[i] == '-';
    if (i < len && s[i] == '0') {
        i++;
    } else {
        for (d = i; i < len && g_ascii_isdigit(s[i]); i++) {
        }
        if (i == d) {
            return false;
        }
    }
    if (i < len && s[i] == '.') {
        *is_int = false;
        for (d = ++i; i < len && g_ascii_isdigit(s[i]); i++) {
        }
        if (i == d) {
            return false;
        }
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        *is_int = false;
        i++;
        i += i < len && (s[i] == '+' || s[i] == '-');
        for (d = i; i < len && g_ascii_isdigit(s[i]); i++) {
        }
        if (i == d) {
            return false;
        }
    }
    return i == len;
}

/*
 * A valid integer literal: false if outside [INT64_MIN, UINT64_MAX], which
 * json-glib would silently wrap; else its int64 as json-glib stores it,
 * and whether it was above INT64_MAX.
 */
static bool int_literal_fits(const char *word, size_t len, int64_t *value, bool *is_unsigned)
{
    g_autofree char *s = g_strndup(word, len);
    char *end;

    errno = 0;
    if (s[0] == '-') {
        *value = g_ascii_strtoll(s, &end, 10);
        *is_unsigned = false;
    } else {
        uint64_t u = g_ascii_strtoull(s, &end, 10);

        *value = (int64_t)u;
        *is_unsigned = u > INT64_MAX;
    }
    return errno != ERANGE;
}

/* A float literal too large for a double (json-glib would make it inf). */
static bool float_literal_overflows(const char *word, size_t len)
{
    g_autofree char *s = g_strndup(word, len);

    return isinf(g_ascii_strtod(s, NULL));
}

/*
 * A bare token that starts like a number: refused unless it is a JSON
 * number; listed; an integer json-glib would wrap is rewritten as a float
 * (so that integer arguments refuse it as QEMU does).
 */
static bool scan_number(QmpScan *scan, const char *text, size_t start, size_t end,
                        size_t *copied, Error **errp)
{
    bool is_int, is_unsigned = false;
    int64_t value;

    if (!json_number_valid(text + start, end - start, &is_int)) {
        g_autoptr(GString) shown = g_string_new(NULL);

        /* The reply is JSON: no raw bytes that are not UTF-8 in it. */
        for (size_t i = start; i < end && i < start + 32; i++) {
            if (g_ascii_isprint(text[i])) {
                g_string_append_c(shown, text[i]);
            } else {
                g_string_append_printf(shown, "\\x%02x", (uint8_t)text[i]);
            }
        }
        error_setg(errp, "JSON parse error, stray '%s'", shown->str);
        return false;
    }
    if (!is_int && float_literal_overflows(text + start, end - start)) {
        error_setg(errp, "JSON parse error, number out of range");
        return false;
    }
    if (is_int && !int_literal_fits(text + start, end - start, &value, &is_unsigned)) {
        is_int = is_unsigned = false;
        if (!scan->fixed) {
            scan->fixed = g_string_sized_new(end + 16);
        }
        g_string_append_len(scan->fixed, text + *copied, end - *copied);
        g_string_append(scan->fixed, ".0");
        *copied = end;
    }
    if (is_unsigned) {
        g_array_append_val(scan->unsigned_values, value);
    }
    g_byte_array_append(scan->kinds, (guint8[]) {
        is_unsigned ? QMP_NUMBER_UNSIGNED : is_int ? QMP_NUMBER_INT : QMP_NUMBER_FLOAT
    }, 1);
    return true;
}

/*
 * json-glib's scanner (1.6) skips comments (slash-star and slash-slash)
 * and takes $ff as an integer; QEMU's lexer refuses both, in these words.
 * Refused outside strings wherever they appear, also inside a bare token
 * ("true" ends where json-glib sees a comment begin): a quote inside a
 * comment would otherwise look like a string to this scan, the brackets
 * after it would not be counted, and json-glib, which recurses once per
 * bracket, would overflow the stack; and a $ number would escape the
 * listing of numbers.
 */
static void scan_refuse_stray(char c, Error **errp)
{
    error_setg(errp, "JSON parse error, stray '%c'", c);
}

/*
 * A single-quoted string, from its opening quote at @i; returns the index
 * past its closing quote (or @len). QEMU's lexer takes the escapes of a
 * double-quoted string in it, and \' for a quote; json-glib takes no
 * escape at all and ends the string at the first quote, so 'a\'[[[' would
 * be a string to one and brackets to the other. The string is therefore
 * rewritten as the double-quoted string QEMU means ('a\'"' is "a'\"")
 * and json-glib never sees a single quote: both agree with this scan on
 * where every string ends. Unterminated, it stays unterminated.
 */
static size_t scan_sq_string(QmpScan *scan, const char *text, size_t len, size_t i,
                             size_t *copied)
{
    GString *out;

    if (!scan->fixed) {
        scan->fixed = g_string_sized_new(len + 16);
    }
    out = scan->fixed;
    g_string_append_len(out, text + *copied, i - *copied);
    g_string_append_c(out, '"');
    for (i++; i < len && text[i] != '\''; i++) {
        if (text[i] == '\\' && i + 1 < len) {
            if (text[++i] != '\'') {
                g_string_append_c(out, '\\');
            }
            g_string_append_c(out, text[i]);
        } else if (text[i] == '\\') {
            g_string_append_c(out, '\\');   /* at the end: json-glib refuses it */
        } else if (text[i] == '"') {
            g_string_append(out, "\\\"");
        } else {
            g_string_append_c(out, text[i]);
        }
    }
    if (i < len) {
        g_string_append_c(out, '"');
        i++;
    }
    *copied = i;
    return i;
}

/*
 * One pass over the text, tracking strings and nesting like the splitter:
 * counts top-level values, bounds nesting, and checks and lists numbers.
 */
static bool scan_text(const char *text, size_t len, QmpScan *scan, Error **errp)
{
    size_t i = 0, copied = 0;
    int depth = 0;

    scan->values = 0;
    scan->fixed = NULL;
    scan->kinds = g_byte_array_new();
    scan->unsigned_values = g_array_new(FALSE, FALSE, sizeof(int64_t));
    while (i < len) {
        char c = text[i];

        if (qmp_is_json_space(c)) {
            i++;
        } else if (c == '"') {
            scan->values += depth == 0;
            for (i++; i < len && text[i] != c; i++) {
                if (text[i] == '\\') {
                    i++;
                }
            }
            i++;
        } else if (c == '\'') {
            scan->values += depth == 0;
            i = scan_sq_string(scan, text, len, i, &copied);
        } else if (c == '/' || c == '$') {
            scan_refuse_stray(c, errp);
            goto fail;
        } else if (c == '{' || c == '[') {
            scan->values += depth == 0;
            if (++depth > QMP_MAX_NESTING) {
                error_setg(errp, "JSON parse error, nesting deeper than %d "
                           "levels", QMP_MAX_NESTING);
                goto fail;
            }
            i++;
        } else if (c == '}' || c == ']' || c == ',' || c == ':') {
            /* A stray one at top level is a value for json-glib to reject. */
            scan->values += depth == 0;
            depth -= depth > 0 && (c == '}' || c == ']');
            i++;
        } else {
            size_t start = i;

            scan->values += depth == 0;
            while (i < len && !qmp_is_delimiter(text[i])) {
                if (text[i] == '/' || text[i] == '$') {
                    scan_refuse_stray(text[i], errp);
                    goto fail;
                }
                i++;
            }
            /* Anything else is not a number: json-glib judges it. */
            if (c && strchr("-+.0123456789", c) &&
                !scan_number(scan, text, start, i, &copied, errp)) {
                goto fail;
            }
        }
    }
    if (scan->fixed) {
        g_string_append_len(scan->fixed, text + copied, len - copied);
    }
    return true;

fail:
    scan_free(scan);
    return false;
}

/* Pairs the scan's numbers with json-glib's number nodes, in text order. */
typedef struct QmpNumberMatch {
    const QmpScan *scan;
    guint next;                 /* the next unpaired number */
    guint next_unsigned;        /* ... and unsigned value */
    GHashTable *unsigned_ints;  /* the nodes of unsigned literals (a ref each) */
    bool out_of_step;           /* json-glib's numbers are not the scan's */
} QmpNumberMatch;

static void match_node(QmpNumberMatch *m, JsonNode *node)
{
    QmpNumberKind kind;
    GType type;

    if (!node || !JSON_NODE_HOLDS_VALUE(node)) {
        return;
    }
    type = json_node_get_value_type(node);
    if (type != G_TYPE_INT64 && type != G_TYPE_DOUBLE) {
        return;
    }
    if (m->next >= m->scan->kinds->len) {
        m->out_of_step = true;
        return;
    }
    kind = m->scan->kinds->data[m->next++];
    if ((kind != QMP_NUMBER_FLOAT) != (type == G_TYPE_INT64)) {
        m->out_of_step = true;
        return;
    }
    if (kind != QMP_NUMBER_UNSIGNED) {
        return;
    }
    if (g_array_index(m->scan->unsigned_values, int64_t, m->next_unsigned++) !=
        json_node_get_int(node)) {
        m->out_of_step = true;
        return;
    }
    /*
     * A ref: a duplicate member frees the node it replaces, and a later
     * node at the same address must not inherit the bit.
     */
    g_hash_table_add(m->unsigned_ints, json_node_ref(node));
}

static void match_member(JsonParser *parser, JsonObject *object, const char *name,
                         gpointer opaque)
{
    match_node(opaque, json_object_get_member(object, name));
}

static void match_element(JsonParser *parser, JsonArray *array, gint index,
                          gpointer opaque)
{
    match_node(opaque, json_array_get_element(array, index));
}

/* json-glib says "<data>:1:7: Parse error: unexpected ..."; keep the end. */
static const char *parse_error_text(const char *msg)
{
    const char *p = strstr(msg, "Parse error: ");

    if (p) {
        return p + strlen("Parse error: ");
    }
    if (g_str_has_prefix(msg, "<data>:")) {
        p = strstr(msg, ": ");
        if (p) {
            return p + 2;
        }
    }
    return msg;
}

JsonNode *qmp_parse_request(const char *text, size_t len, GHashTable **unsigned_ints,
                            Error **errp)
{
    g_autoptr(JsonParser) parser = NULL;
    QmpNumberMatch match = { 0 };
    GError *gerr = NULL;
    QmpScan scan;
    JsonNode *root;
    bool ok;

    *unsigned_ints = NULL;
    if (!scan_text(text, len, &scan, errp)) {
        return NULL;
    }
    if (scan.values != 1) {
        if (scan.values > 1) {
            error_setg(errp, "JSON parse error, more than one value in a request");
        }
        scan_free(&scan);
        return NULL;
    }
    parser = json_parser_new_immutable();
    /* Only a request with such a literal needs its nodes found. */
    if (scan.unsigned_values->len) {
        match.scan = &scan;
        match.unsigned_ints = g_hash_table_new_full(g_direct_hash, g_direct_equal,
                                                    (GDestroyNotify)json_node_unref, NULL);
        g_signal_connect(parser, "object-member", G_CALLBACK(match_member), &match);
        g_signal_connect(parser, "array-element", G_CALLBACK(match_element), &match);
    }
    if (scan.fixed) {
        ok = json_parser_load_from_data(parser, scan.fixed->str, scan.fixed->len, &gerr);
    } else {
        ok = json_parser_load_from_data(parser, text, len, &gerr);
    }
    root = ok ? json_parser_steal_root(parser) : NULL;
    if (!ok) {
        error_setg(errp, "JSON parse error, %s", parse_error_text(gerr->message));
        g_error_free(gerr);
    } else if (!root) {
        error_setg(errp, "JSON parse error, expecting value");
    } else if (match.unsigned_ints) {
        match_node(&match, root);       /* a lone number has no signal */
        if (match.out_of_step || match.next != scan.kinds->len) {
            /*
             * json-glib made numbers the scan did not list (it skips
             * comments, say): no node may be guessed at.
             */
            error_setg(errp, "JSON parse error, numbers not understood");
            g_clear_pointer(&root, json_node_unref);
        }
    }
    scan_free(&scan);
    if (!root) {
        g_clear_pointer(&match.unsigned_ints, g_hash_table_unref);
    }
    *unsigned_ints = match.unsigned_ints;
    return root;
}
