#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
qapi-gen.py: turn the QAPI schema (qapi/*.json) into C.

    qapi-gen.py [-o OUTDIR] [-p PREFIX] [-d DEPFILE] SCHEMA.json

writes PREFIX + qapi-types.{h,c}, qapi-visit.{h,c}, qapi-commands.{h,c},
qapi-events.{h,c} and qapi-introspect.c into OUTDIR: one set for the whole
schema, whatever the number of modules.  With -d it also writes a Makefile
dependency file listing every schema file read (for meson's depfile:).

The schema language is QEMU's (top-level dicts with single-quoted strings,
'#' comments, '##' doc blocks), restricted to what this project uses:

  { 'include': 'FILE' }                 relative to the including file
  { 'pragma': { 'doc-required': BOOL } }  default true: every definition
                                        needs a doc block naming it and
                                        every member/value documented
  { 'enum': 'Name', 'data': [ 'value' | {'name': 'value'}, ... ],
    '*prefix': 'C_PREFIX' }
  { 'struct': 'Name', 'data': { 'member': TYPE, '*optional': TYPE,
                                'm': { 'type': TYPE } }, '*base': 'Name' }
  { 'command': 'name', '*data': { ... } | 'Struct', '*boxed': true,
    '*returns': TYPE, '*gen': false }
  { 'event': 'NAME', '*data': { ... } | 'Struct', '*boxed': true }

TYPE is a builtin (str, int, int8..int64, uint8..uint64, size, bool,
number, any), an enum or struct name, or a one-element list ['TYPE'].
'if', 'features' and 'allow-preconfig' are accepted and ignored; unions
and alternates are not supported.

Our dialect's 'gen': false: the marshaller still checks the arguments
against 'data', then hands the raw argument object to
`JsonNode *qmp_<name>(JsonObject *args, Error **errp)`, which returns the
result as JSON (used for commands whose result is built from JSON data,
such as query-qmp-schema).

The C conventions are documented in the generated headers; see also
include/monitor/qmp-dispatch.h.
"""

import argparse
import json
import os
import re
import sys
import textwrap


# ---------------------------------------------------------------------------
# Errors and source locations

class Loc:
    def __init__(self, fname, line, col=None):
        self.fname = fname
        self.line = line
        self.col = col

    def __str__(self):
        if self.col is None:
            return f'{self.fname}:{self.line}'
        return f'{self.fname}:{self.line}:{self.col}'


class SchemaError(Exception):
    def __init__(self, loc, msg):
        super().__init__(f'{loc}: {msg}')


# ---------------------------------------------------------------------------
# Reading schema files: a tokenizer, a value parser and doc blocks

class Doc:
    """A '##' doc block: the symbol it documents and its @member lines."""

    SECTION = re.compile(r'(Returns|Errors|Since|Notes?|Examples?|TODO|'
                         r'Features|Caution|Use):(\s|$)')

    def __init__(self, loc):
        self.loc = loc
        self.symbol = None
        self.members = {}        # name -> Loc
        self.features = {}

    def parse(self, lines):
        section = None
        for loc, text in lines:
            if self.symbol is None and not section:
                if not text:
                    continue
                m = re.fullmatch(r'@([A-Za-z0-9_.-]+):\s*', text)
                if m:
                    self.symbol = m.group(1)
                    section = 'args'
                    continue
                # Free-form block (module or section heading): keep nothing.
                section = 'free'
                continue
            if section == 'free':
                continue
            m = self.SECTION.match(text)
            if m:
                section = 'features' if m.group(1) == 'Features' else 'other'
                continue
            m = re.match(r'@([A-Za-z0-9_.-]+):', text)
            if m and section in ('args', 'features'):
                table = self.members if section == 'args' else self.features
                if m.group(1) in table:
                    raise SchemaError(loc, f"'@{m.group(1)}' documented twice")
                table[m.group(1)] = loc


class Expr:
    def __init__(self, value, loc, doc):
        self.value = value
        self.loc = loc
        self.doc = doc


class FileParser:
    """Splits one schema file into top-level expressions with their docs."""

    def __init__(self, fname, text):
        self.fname = fname
        self.text = text
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.doc_lines = None     # lines of the '##' block being read
        self.doc_loc = None
        self.pending_doc = None   # finished block waiting for its definition
        self.depth = 0

    def loc(self):
        return Loc(self.fname, self.line, self.pos - self.line_start + 1)

    def error(self, msg):
        raise SchemaError(self.loc(), msg)

    def _comment(self):
        end = self.text.find('\n', self.pos)
        if end < 0:
            end = len(self.text)
        body = self.text[self.pos:end].rstrip()
        at_line_start = self.text[self.line_start:self.pos].strip() == ''
        loc = self.loc()
        self.pos = end
        if body == '##' and at_line_start:
            if self.depth:
                raise SchemaError(loc, "doc comment inside a definition")
            if self.doc_lines is None:
                if self.pending_doc is not None:
                    self._reject_orphan(self.pending_doc)
                self.doc_lines = []
                self.doc_loc = loc
            else:
                doc = Doc(self.doc_loc)
                doc.parse(self.doc_lines)
                self.pending_doc = doc
                self.doc_lines = None
            return
        if self.doc_lines is not None:
            if body != '#' and not body.startswith('# '):
                raise SchemaError(loc, "doc comment lines must start with '# '")
            self.doc_lines.append((loc, body[2:]))

    def _reject_orphan(self, doc):
        if doc.symbol:
            raise SchemaError(doc.loc, f"documentation for '{doc.symbol}' "
                              "is not followed by its definition")

    def _skip_space(self):
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == '\n':
                self.pos += 1
                self.line += 1
                self.line_start = self.pos
            elif ch in ' \t\r':
                self.pos += 1
            elif ch == '#':
                self._comment()
            else:
                if self.doc_lines is not None:
                    self.error("unterminated doc comment (missing '##')")
                return
        if self.doc_lines is not None:
            raise SchemaError(self.doc_loc, "unterminated doc comment")

    def _string(self):
        start = self.loc()
        self.pos += 1
        out = []
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == '\n':
                raise SchemaError(start, "unterminated string")
            ch = self.text[self.pos]
            self.pos += 1
            if ch == "'":
                return ''.join(out)
            if ch == '\\':
                nxt = self.text[self.pos:self.pos + 1]
                if nxt not in ("'", '\\'):
                    self.error(f"unsupported escape '\\{nxt}' in string")
                out.append(nxt)
                self.pos += 1
            else:
                out.append(ch)

    def _value(self):
        self._skip_space()
        if self.pos >= len(self.text):
            self.error("unexpected end of file, expected a value")
        ch = self.text[self.pos]
        if ch == '{':
            return self._dict()
        if ch == '[':
            return self._list()
        if ch == "'":
            return self._string()
        m = re.compile(r'[A-Za-z0-9_-]+').match(self.text, self.pos)
        if m and m.group(0) in ('true', 'false'):
            self.pos = m.end()
            return m.group(0) == 'true'
        if ch == '"':
            self.error("strings use single quotes")
        self.error("expected a string, dict, list, true or false, got "
                   f"'{m.group(0) if m else ch}'")

    def _expect(self, chars, what):
        self._skip_space()
        ch = self.text[self.pos:self.pos + 1]
        if not ch or ch not in chars:
            self.error(f"expected {what}, got "
                       f"{repr(ch) if ch else 'end of file'}")
        self.pos += 1
        return ch

    def _dict(self):
        self.pos += 1
        self.depth += 1
        out = {}
        self._skip_space()
        if self.text[self.pos:self.pos + 1] == '}':
            self.pos += 1
            self.depth -= 1
            return out
        while True:
            self._skip_space()
            if self.text[self.pos:self.pos + 1] == '"':
                self.error("strings use single quotes")
            if self.text[self.pos:self.pos + 1] != "'":
                self.error("expected a string key")
            kloc = self.loc()
            key = self._string()
            if key in out:
                raise SchemaError(kloc, f"duplicate key '{key}'")
            self._expect(':', "':'")
            out[key] = self._value()
            if self._expect(',}', "',' or '}'") == '}':
                self.depth -= 1
                return out

    def _list(self):
        self.pos += 1
        self.depth += 1
        out = []
        self._skip_space()
        if self.text[self.pos:self.pos + 1] == ']':
            self.pos += 1
            self.depth -= 1
            return out
        while True:
            out.append(self._value())
            if self._expect(',]', "',' or ']'") == ']':
                self.depth -= 1
                return out

    def exprs(self):
        while True:
            self._skip_space()
            if self.pos >= len(self.text):
                if self.pending_doc is not None:
                    self._reject_orphan(self.pending_doc)
                return
            loc = Loc(self.fname, self.line)
            if self.text[self.pos] != '{':
                self.error("expected '{' starting a top-level definition")
            doc, self.pending_doc = self.pending_doc, None
            value = self._dict()
            yield Expr(value, loc, doc)


def read_schema(path, seen, deps, out, pragma, included_at=None):
    """Appends the expressions of path (and its includes) to out."""
    real = os.path.realpath(path)
    if real in seen:
        return
    seen.add(real)
    deps.append(path)
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, 'strerror', None) or str(e)
        raise SchemaError(included_at or Loc(path, 1),
                          f"can't read {path}: {why}")
    for expr in FileParser(path, text).exprs():
        v = expr.value
        if 'include' in v:
            check_keys(expr, 'include', ['include'])
            inc = v['include']
            if not isinstance(inc, str):
                raise SchemaError(expr.loc, "'include' needs a file name")
            read_schema(os.path.join(os.path.dirname(path), inc),
                        seen, deps, out, pragma, expr.loc)
        elif 'pragma' in v:
            check_keys(expr, 'pragma', ['pragma'])
            p = v['pragma']
            if not isinstance(p, dict):
                raise SchemaError(expr.loc, "'pragma' needs a dict")
            for key, val in p.items():
                if key != 'doc-required':
                    raise SchemaError(expr.loc, f"unknown pragma '{key}'")
                if not isinstance(val, bool):
                    raise SchemaError(expr.loc, "'doc-required' needs a bool")
                pragma[key] = val
        else:
            out.append(expr)


# ---------------------------------------------------------------------------
# Names

C_RESERVED = set('''
    auto break case char const continue default do double else enum extern
    float for goto if inline int long register restrict return short signed
    sizeof static struct switch typedef union unsigned void volatile while
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
    _Static_assert _Thread_local bool true false unix linux errp
'''.split())


def c_name(name, protect=True):
    """Schema name -> C identifier ('-' and '.' become '_')."""
    s = re.sub(r'[^A-Za-z0-9_]', '_', name)
    if protect and (s in C_RESERVED or s[0].isdigit()):
        s = 'q_' + s
    return s


def upper_words(type_name):
    """
    CamelCase type name -> UPPER_CASE enum prefix, with QEMU's word split:
    an upper-case letter starts a word when the next letter is lower case
    or the previous character is a digit (so 'RunState' -> RUN_STATE,
    'QMPCapability' -> QMP_CAPABILITY, 'MultiFDCompression' ->
    MULTIFD_COMPRESSION).  All-caps names are kept as they are.
    """
    name = c_name(type_name, False)
    if name.isupper():
        return name
    words = []
    for i, ch in enumerate(name):
        if i and ch.isupper() and name[i - 1] != '_':
            next_lower = i + 1 < len(name) and name[i + 1].islower()
            if next_lower or name[i - 1].isdigit():
                words.append('_')
        words.append(ch)
    return ''.join(words).lstrip('_').upper()


TYPE_NAME = re.compile(r'[A-Z][A-Za-z0-9]*')
COMMAND_NAME = re.compile(r'[a-z][a-z0-9_-]*')
EVENT_NAME = re.compile(r'[A-Z][A-Z0-9_]*')
MEMBER_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]*')


# ---------------------------------------------------------------------------
# The type model.  Every type knows its C spelling and how generated code
# frees, copies, encodes and decodes a value of it.

class QType:
    name = None
    is_ptr = False

    def c_param(self):
        return self.c_type()

    def free_stmt(self, lval):
        return None

    def clone_expr(self, expr):
        return expr

    def list_name(self):
        return self.c_name() + 'List'


class Builtin(QType):
    # name: (C type, introspection json-type, decoder stem, encoder)
    TABLE = {
        'str': ('char *', 'string', 'str', 'qapi_str_to_json'),
        'int': ('int64_t', 'int', 'int', 'qapi_int_to_json'),
        'int8': ('int8_t', 'int', 'int8', 'qapi_int_to_json'),
        'int16': ('int16_t', 'int', 'int16', 'qapi_int_to_json'),
        'int32': ('int32_t', 'int', 'int32', 'qapi_int_to_json'),
        'int64': ('int64_t', 'int', 'int64', 'qapi_int_to_json'),
        'uint8': ('uint8_t', 'int', 'uint8', 'qapi_uint_to_json'),
        'uint16': ('uint16_t', 'int', 'uint16', 'qapi_uint_to_json'),
        'uint32': ('uint32_t', 'int', 'uint32', 'qapi_uint_to_json'),
        'uint64': ('uint64_t', 'int', 'uint64', 'qapi_uint_to_json'),
        'size': ('uint64_t', 'int', 'size', 'qapi_uint_to_json'),
        'bool': ('bool', 'boolean', 'bool', 'qapi_bool_to_json'),
        'number': ('double', 'number', 'number', 'qapi_number_to_json'),
        'any': ('JsonNode *', 'value', 'any', 'qapi_any_to_json'),
    }

    def __init__(self, name):
        self.name = name
        self.ctype, self.json_type, self.stem, self.encoder = self.TABLE[name]
        self.is_ptr = name in ('str', 'any')

    def c_name(self):
        return self.name

    def c_type(self):
        return self.ctype

    def c_param(self):
        return 'const char *' if self.name == 'str' else self.ctype

    def free_stmt(self, lval):
        if self.name == 'str':
            return f'g_free({lval});'
        if self.name == 'any':
            return f'qapi_free_any({lval});'
        return None

    def clone_expr(self, expr):
        if self.name == 'str':
            return f'g_strdup({expr})'
        if self.name == 'any':
            return f'qapi_any_clone({expr})'
        return expr

    def decode(self, node, path, lval):
        return f'qapi_{self.stem}_from_json({node}, {path}, &{lval}, errp)'

    def encode(self, expr):
        return f'{self.encoder}({expr})'


class Definition:
    """Something defined in the schema: a type, a command or an event."""
    meta = None

    def __init__(self, expr, name):
        self.expr = expr
        self.loc = expr.loc if expr else None
        self.doc = expr.doc if expr else None
        self.name = name

    def what(self):
        return f"{self.meta} '{self.name}'"

    def error(self, msg):
        raise SchemaError(self.loc, f'{self.what()}: {msg}')


class Enum(Definition, QType):
    meta = 'enum'

    def __init__(self, expr, name, values, prefix=None):
        Definition.__init__(self, expr, name)
        self.values = values
        self.prefix = prefix or upper_words(name)

    def c_name(self):
        return c_name(self.name)

    def c_type(self):
        return self.c_name()

    def const(self, value):
        return f'{self.prefix}_{c_name(value, False).upper()}'

    def max_const(self):
        return f'{self.prefix}__MAX'

    def decode(self, node, path, lval):
        return f'qapi_{self.c_name()}_from_json({node}, {path}, &{lval}, errp)'

    def encode(self, expr):
        return f'qapi_{self.c_name()}_to_json({expr})'


class Member:
    def __init__(self, name, typeref, optional, loc):
        self.name = name
        self.typeref = typeref
        self.type = None
        self.optional = optional
        self.loc = loc
        self.cname = c_name(name)

    def has_flag(self):
        """Optional members of non-pointer type carry a has_ flag."""
        return self.optional and not self.type.is_ptr


class Struct(Definition, QType):
    meta = 'struct'
    is_ptr = True

    def __init__(self, expr, name, members, base=None, implicit=False,
                 cname=None):
        Definition.__init__(self, expr, name)
        self.own_members = members
        self.base_ref = base
        self.base = None
        self.implicit = implicit
        self.cname = cname or c_name(name)
        self.owner = None       # for implicit ones: "command 'x'"

    def what(self):
        return self.owner or Definition.what(self)

    def c_name(self):
        return self.cname

    def c_type(self):
        return self.cname + ' *'

    def c_param(self):
        return f'const {self.cname} *'

    def members(self):
        return (self.base.members() if self.base else []) + self.own_members

    def free_stmt(self, lval):
        return f'qapi_free_{self.cname}({lval});'

    def clone_expr(self, expr):
        return f'qapi_{self.cname}_clone({expr})'

    def decode(self, node, path, lval):
        return f'({lval} = qapi_{self.cname}_from_json({node}, {path}, errp))'

    def encode(self, expr):
        return f'qapi_{self.cname}_to_json({expr})'


class Array(QType):
    is_ptr = True

    def __init__(self, element):
        self.element = element
        self.name = f'[{element.name}]'

    def c_name(self):
        return self.element.list_name()

    def c_type(self):
        return self.c_name() + ' *'

    def c_param(self):
        return f'const {self.c_name()} *'

    def free_stmt(self, lval):
        return f'qapi_free_{self.c_name()}({lval});'

    def clone_expr(self, expr):
        return f'qapi_{self.c_name()}_clone({expr})'

    def decode(self, node, path, lval):
        return f'qapi_{self.c_name()}_from_json({node}, {path}, &{lval}, errp)'

    def encode(self, expr):
        return f'qapi_{self.c_name()}_to_json({expr})'


class Command(Definition):
    meta = 'command'

    def __init__(self, expr, name, arg_type, boxed, ret_ref, gen):
        Definition.__init__(self, expr, name)
        self.arg_type = arg_type
        self.boxed = boxed
        self.ret_ref = ret_ref
        self.ret_type = None
        self.gen = gen
        self.cname = c_name(name, False)


class Event(Definition):
    meta = 'event'

    def __init__(self, expr, name, arg_type, boxed):
        Definition.__init__(self, expr, name)
        self.arg_type = arg_type
        self.boxed = boxed


# ---------------------------------------------------------------------------
# From expressions to a checked schema

def check_keys(expr, meta, allowed, required=()):
    for key in expr.value:
        if key not in allowed:
            raise SchemaError(expr.loc, f"{meta} has unknown key '{key}'")
    for key in required:
        if key not in expr.value:
            raise SchemaError(expr.loc, f"{meta} lacks key '{key}'")


IGNORED_KEYS = ['if', 'features']


class Schema:
    def __init__(self, path):
        self.deps = []
        self.pragma = {'doc-required': True}
        exprs = []
        read_schema(path, set(), self.deps, exprs, self.pragma)
        self.builtins = {n: Builtin(n) for n in Builtin.TABLE}
        self.defs = {}          # types by name
        self.commands = []
        self.events = []
        self.arrays = {}        # element name -> Array
        self.order = []         # user types in definition order
        for expr in exprs:
            self._define(expr)
        for t in self.order:
            if isinstance(t, Struct):
                self._resolve_struct(t)
        for cmd in self.commands:
            self._resolve_command(cmd)
        for ev in self.events:
            self._resolve_event(ev)
        self._check_c_names()
        self.event_enum = Enum(None, 'QAPIEvent',
                               [ev.name for ev in self.events], 'QAPI_EVENT')
        if self.pragma['doc-required']:
            for d in self.order + self.commands + self.events:
                self._check_doc(d)

    # -- definitions --------------------------------------------------------

    def _name(self, expr, meta, pattern, what):
        name = expr.value[meta]
        if not isinstance(name, str) or not pattern.fullmatch(name):
            raise SchemaError(expr.loc, f"{meta} name {name!r} is not valid "
                              f"(expected {what})")
        return name

    def _add_type(self, t):
        if t.name in self.defs or t.name in self.builtins:
            old = self.defs.get(t.name)
            where = f' at {old.loc}' if old else ' as a builtin type'
            t.error(f'already defined{where}')
        self.defs[t.name] = t
        self.order.append(t)

    def _define(self, expr):
        v = expr.value
        if 'enum' in v:
            check_keys(expr, 'enum', ['enum', 'data', 'prefix'] + IGNORED_KEYS,
                       ['data'])
            name = self._name(expr, 'enum', TYPE_NAME, 'CamelCase')
            data = v['data']
            if not isinstance(data, list):
                raise SchemaError(expr.loc, f"enum '{name}': 'data' must be "
                                  "a list")
            values = []
            for item in data:
                if isinstance(item, dict):
                    extra = set(item) - {'name', 'if', 'features'}
                    if extra or 'name' not in item:
                        raise SchemaError(expr.loc, f"enum '{name}': value "
                                          "dicts take 'name' (and 'if')")
                    item = item['name']
                if not isinstance(item, str) or not MEMBER_NAME.fullmatch(item):
                    raise SchemaError(expr.loc, f"enum '{name}': invalid "
                                      f"value {item!r}")
                values.append(item)
            prefix = v.get('prefix')
            if prefix is not None and not (isinstance(prefix, str) and
                                           re.fullmatch(r'[A-Z][A-Z0-9_]*',
                                                        prefix)):
                raise SchemaError(expr.loc, f"enum '{name}': invalid prefix")
            self._add_type(Enum(expr, name, values, prefix))
        elif 'struct' in v:
            check_keys(expr, 'struct', ['struct', 'data', 'base'] + IGNORED_KEYS,
                       ['data'])
            name = self._name(expr, 'struct', TYPE_NAME, 'CamelCase')
            members = self._members(expr, f"struct '{name}'", v['data'])
            base = v.get('base')
            if base is not None and not isinstance(base, str):
                raise SchemaError(expr.loc, f"struct '{name}': 'base' must "
                                  "name a struct")
            self._add_type(Struct(expr, name, members, base))
        elif 'command' in v:
            check_keys(expr, 'command',
                       ['command', 'data', 'returns', 'boxed', 'gen',
                        'allow-preconfig'] + IGNORED_KEYS)
            name = self._name(expr, 'command', COMMAND_NAME,
                              "lower case, words joined by '-'")
            arg, boxed = self._args(expr, f"command '{name}'", name)
            gen = v.get('gen', True)
            if not isinstance(gen, bool):
                raise SchemaError(expr.loc, f"command '{name}': 'gen' must "
                                  "be a bool")
            self.commands.append(Command(expr, name, arg, boxed,
                                         v.get('returns'), gen))
        elif 'event' in v:
            check_keys(expr, 'event', ['event', 'data', 'boxed'] + IGNORED_KEYS)
            name = self._name(expr, 'event', EVENT_NAME, 'UPPER_CASE')
            arg, boxed = self._args(expr, f"event '{name}'", name)
            self.events.append(Event(expr, name, arg, boxed))
        elif 'union' in v or 'alternate' in v:
            raise SchemaError(expr.loc, "unions and alternates are not "
                              "supported by this generator")
        else:
            raise SchemaError(expr.loc, "expected one of 'enum', 'struct', "
                              "'command', 'event', 'include', 'pragma'")

    def _members(self, expr, what, data):
        if not isinstance(data, dict):
            raise SchemaError(expr.loc, f"{what}: 'data' must be a dict")
        members = []
        for key, typeref in data.items():
            optional = key.startswith('*')
            name = key[1:] if optional else key
            if not MEMBER_NAME.fullmatch(name):
                raise SchemaError(expr.loc, f"{what}: invalid member name "
                                  f"{key!r}")
            if isinstance(typeref, dict):
                if 'type' not in typeref or set(typeref) - {'type', 'if',
                                                            'features'}:
                    raise SchemaError(expr.loc, f"{what}: member '{name}' "
                                      "dict takes 'type' (and 'if')")
                typeref = typeref['type']
            members.append(Member(name, typeref, optional, expr.loc))
        return members

    def _args(self, expr, what, name):
        v = expr.value
        data = v.get('data')
        boxed = v.get('boxed', False)
        if not isinstance(boxed, bool):
            raise SchemaError(expr.loc, f"{what}: 'boxed' must be a bool")
        if boxed and not isinstance(data, str):
            raise SchemaError(expr.loc, f"{what}: 'boxed': true needs 'data' "
                              "naming a struct")
        if data is None or isinstance(data, str):
            return data, boxed
        members = self._members(expr, what, data)
        implicit = Struct(expr, f'q_obj_{name}-arg', members, implicit=True,
                          cname=f'q_obj_{c_name(name, False)}_arg')
        implicit.owner = what
        return implicit, boxed

    # -- resolution ---------------------------------------------------------

    def lookup(self, ref, where, loc):
        if isinstance(ref, list):
            if len(ref) != 1:
                raise SchemaError(loc, f"{where}: an array type is written "
                                  "['Type'] with exactly one element")
            elem = self.lookup(ref[0], where, loc)
            if isinstance(elem, Array):
                raise SchemaError(loc, f"{where}: arrays of arrays are not "
                                  "supported")
            if elem.name not in self.arrays:
                self.arrays[elem.name] = Array(elem)
            return self.arrays[elem.name]
        if not isinstance(ref, str):
            raise SchemaError(loc, f"{where}: a type is a name or ['name']")
        t = self.builtins.get(ref) or self.defs.get(ref)
        if t is None:
            raise SchemaError(loc, f"{where} uses unknown type '{ref}'")
        return t

    def _resolve_members(self, owner):
        for m in owner.own_members:
            m.type = self.lookup(m.typeref, f"{owner.what()} member "
                                 f"'{m.name}'", m.loc)

    def _resolve_struct(self, s, stack=()):
        if s.base_ref is not None and s.base is None:
            base = self.lookup(s.base_ref, f"{s.what()} base", s.loc)
            if not isinstance(base, Struct):
                s.error(f"base '{s.base_ref}' is not a struct")
            if base in stack or base is s:
                s.error('base types form a cycle')
            self._resolve_struct(base, stack + (s,))
            s.base = base
        if s.own_members and s.own_members[0].type is None:
            self._resolve_members(s)
        self._check_member_clash(s)

    def _check_member_clash(self, s):
        seen = {}
        for m in s.members():
            names = [m.cname] + ([f'has_{m.cname}'] if m.has_flag() else [])
            for cn in names:
                if cn in seen:
                    s.error(f"member '{m.name}' clashes with '{seen[cn]}' "
                            f"(both are '{cn}' in C)")
                seen[cn] = m.name

    def _resolve_args(self, d):
        if d.arg_type is None:
            return
        if isinstance(d.arg_type, str):
            t = self.lookup(d.arg_type, f"{d.what()} 'data'", d.loc)
            if not isinstance(t, Struct):
                kind = {'enum': 'an enum', None: 'a builtin type'}[t.meta]
                d.error(f"'data' must be a dict or name a struct, "
                        f"'{d.arg_type}' is {kind}")
            self._resolve_struct(t)
            d.arg_type = t
        else:
            self._resolve_members(d.arg_type)
            self._check_member_clash(d.arg_type)
        for m in d.arg_type.members():
            if m.cname == 'errp' or (not d.boxed and m.cname == 'arg'):
                d.error(f"member '{m.name}' clashes with a generated "
                        "parameter")

    def _resolve_command(self, cmd):
        self._resolve_args(cmd)
        if cmd.ret_ref is not None:
            t = self.lookup(cmd.ret_ref, f"{cmd.what()} 'returns'", cmd.loc)
            if not (isinstance(t, (Struct, Array)) or
                    t.name in ('str', 'any')):
                cmd.error("'returns' must be a struct, an array, 'str' or "
                          "'any'")
            cmd.ret_type = t

    def _resolve_event(self, ev):
        self._resolve_args(ev)

    def _check_c_names(self):
        seen = {}

        def claim(cname, d):
            if cname in seen:
                d.error(f"its C name '{cname}' clashes with "
                        f"{seen[cname].what()}")
            seen[cname] = d

        for t in self.order:
            claim(t.c_name(), t)
            if isinstance(t, Enum):
                consts = {}
                for v in t.values:
                    c = t.const(v)
                    if c in consts:
                        t.error(f"values '{v}' and '{consts[c]}' are both "
                                f"'{c}' in C")
                    consts[c] = v
        for t in self.order:
            if t.list_name() in self.defs:
                t.error(f"'{t.list_name()}' is reserved for its list type")
        for cmd in self.commands:
            claim('qmp_' + cmd.cname, cmd)
        for ev in self.events:
            claim('qapi_event_send_' + c_name(ev.name, False).lower(), ev)

    def _check_doc(self, d):
        doc = d.doc
        if doc is None or doc.symbol is None:
            d.error('documentation comment missing (a ## block starting '
                    f"with '# @{d.name}:')")
        if doc.symbol != d.name:
            raise SchemaError(doc.loc, f"documentation comment is for "
                              f"'{doc.symbol}' but is followed by {d.what()}")
        if isinstance(d, Enum):
            names = d.values
        elif isinstance(d, Struct):
            names = [m.name for m in d.own_members]
        elif isinstance(d.arg_type, Struct) and d.arg_type.implicit:
            names = [m.name for m in d.arg_type.members()]
        else:
            names = []     # members documented with their named struct
        for n in names:
            if n not in doc.members:
                d.error(f"'{n}' is not documented")
        for n, loc in doc.members.items():
            if n not in names:
                raise SchemaError(loc, f"documented member '{n}' does not "
                                  f"exist in {d.what()}")

    # -- queries for the generators -----------------------------------------

    def structs(self):
        """Named structs, then implicit argument structs."""
        out = [t for t in self.order if isinstance(t, Struct)]
        for d in self.commands + self.events:
            if isinstance(d.arg_type, Struct) and d.arg_type.implicit:
                out.append(d.arg_type)
        return out

    def enums(self):
        return [t for t in self.order if isinstance(t, Enum)]

    def used_arrays(self):
        """Arrays in a stable order (element definition order)."""
        rank = {t.name: i for i, t in enumerate(self.order)}
        return sorted(self.arrays.values(),
                      key=lambda a: (rank.get(a.element.name, -1),
                                     a.element.name))


# ---------------------------------------------------------------------------
# C output helpers

class CFile:
    def __init__(self, fname, blurb, header=False):
        self.fname = fname
        self.header = header
        self.parts = []
        guard = re.sub(r'[^A-Za-z0-9]', '_', fname).upper()
        self.guard = guard
        blurb = '\n * '.join(textwrap.wrap(blurb, 74))
        self.add(f'/* SPDX-License-Identifier: GPL-2.0-or-later */\n'
                 f'/*\n * {blurb}\n *\n'
                 f' * Generated by scripts/qapi-gen.py from the QAPI schema: '
                 f'do not edit.\n */\n')
        if header:
            self.add(f'#ifndef {guard}\n#define {guard}\n')

    def add(self, text):
        self.parts.append(text)

    def text(self):
        body = '\n'.join(self.parts)
        if self.header:
            body += f'\n#endif /* {self.guard} */\n'
        return body


def c_string(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def cdecl(ctype, name):
    """'char *' + 'x' -> 'char *x'; 'bool' + 'x' -> 'bool x'."""
    return f'{ctype}{name}' if ctype.endswith('*') else f'{ctype} {name}'


def c_func(ret, name, params, end=''):
    """
    'ret name(p1, p2)' + end, wrapped at 80 columns with continuation
    lines aligned after the opening parenthesis.
    """
    head = cdecl(ret, name) + '('
    params = params or ['void']
    text = head + ', '.join(params) + ')' + end
    if len(text) <= 80:
        return text
    lines, cur = [], head
    for i, p in enumerate(params):
        piece = p + (',' if i + 1 < len(params) else ')' + end)
        if cur != head and len(cur) + 1 + len(piece) > 80:
            lines.append(cur)
            cur = ' ' * len(head) + piece
        else:
            cur += ('' if cur == head else ' ') + piece
    lines.append(cur)
    return '\n'.join(lines)


def params_of(arg_type, boxed):
    """C parameters for a command handler or event sender (no errp)."""
    if arg_type is None:
        return []
    if boxed:
        return [cdecl(arg_type.c_param(), 'arg')]
    out = []
    for m in arg_type.members():
        if m.has_flag():
            out.append(f'bool has_{m.cname}')
        out.append(cdecl(m.type.c_param(), m.cname))
    return out


# ---------------------------------------------------------------------------
# qapi-types.{h,c}: enums, structs, lists, free and clone

def gen_types(schema, prefix):
    h = CFile(f'{prefix}qapi-types.h', 'QAPI types: C structs and enums of '
              'the schema, with free and clone functions.', header=True)
    c = CFile(f'{prefix}qapi-types.c', 'QAPI types: enum tables, free and '
              'clone functions.')
    h.add('#include <stdbool.h>\n#include <stdint.h>\n#include <glib.h>\n'
          '#include <json-glib/json-glib.h>\n')
    c.add(f'#include "qemu/osdep.h"\n#include "qapi/qapi-json.h"\n'
          f'#include "{prefix}qapi-types.h"\n')

    for e in schema.enums():
        gen_enum(h, c, e)

    structs = schema.structs()
    arrays = schema.used_arrays()
    fwd = [f'typedef struct {s.c_name()} {s.c_name()};' for s in structs]
    fwd += [f'typedef struct {a.c_name()} {a.c_name()};' for a in arrays]
    h.add('\n'.join(fwd) + '\n')

    for s in structs:
        gen_struct(h, c, s)
    for a in arrays:
        gen_array(h, c, a)
    return h, c


def gen_enum(h, c, e):
    n = e.c_name()
    lines = [f'typedef enum {n} {{']
    lines += [f'    {e.const(v)},' for v in e.values]
    lines += [f'    {e.max_const()},', f'}} {n};', '',
              f'extern const char *const {n}_lookup[{e.max_const()}];',
              '/* Schema name of @v (asserts that @v is in range). */',
              c_func('const char *', f'{n}_str', [f'{n} v'], ';'),
              '/* Value named @s; false if there is none. */',
              c_func('bool', f'{n}_parse', ['const char *s', f'{n} *out'],
                     ';')]
    h.add('\n'.join(lines) + '\n')
    body = [f'const char *const {n}_lookup[{e.max_const()}] = {{']
    body += [f'    [{e.const(v)}] = {c_string(v)},' for v in e.values]
    body += ['};', '',
             c_func('const char *', f'{n}_str', [f'{n} v']), '{',
             f'    g_assert((unsigned)v < {e.max_const()});',
             f'    return {n}_lookup[v];', '}', '',
             c_func('bool', f'{n}_parse', ['const char *s', f'{n} *out']),
             '{', '    int i;', '',
             f'    i = qapi_enum_lookup({n}_lookup, {e.max_const()}, s);',
             '    if (i < 0) {', '        return false;', '    }',
             f'    *out = ({n})i;', '    return true;', '}']
    c.add('\n'.join(body) + '\n')


def gen_struct(h, c, s):
    n = s.c_name()
    lines = [f'struct {n} {{']
    if not s.members():
        lines.append('    char qapi_dummy_for_empty_struct;')
    for m in s.members():
        if m.has_flag():
            lines.append(f'    bool has_{m.cname};')
        lines.append(f'    {cdecl(m.type.c_type(), m.cname)};')
    lines.append('};\n')
    lines.append(c_func('void', f'qapi_free_{n}_members', [f'{n} *obj'], ';'))
    if not s.implicit:
        lines.append(c_func('void', f'qapi_free_{n}', [f'{n} *obj'], ';'))
        lines.append('/* Deep copy; NULL for NULL. */')
        lines.append(c_func(f'{n} *', f'qapi_{n}_clone', [f'const {n} *obj'],
                            ';'))
        lines.append(f'G_DEFINE_AUTOPTR_CLEANUP_FUNC({n}, qapi_free_{n})')
        if s.base:
            b = s.base.c_name()
            lines += ['', c_func(f'static inline {b} *', f'qapi_{n}_base',
                                 [f'const {n} *obj']),
                      '{', f'    return ({b} *)obj;', '}']
    h.add('\n'.join(lines) + '\n')

    body = [c_func('void', f'qapi_free_{n}_members', [f'{n} *obj']), '{']
    frees = [m.type.free_stmt(f'obj->{m.cname}') for m in s.members()]
    frees = [f for f in frees if f]
    body += ['    ' + f for f in frees] or ['    (void)obj;']
    body.append('}')
    if not s.implicit:
        body += ['', c_func('void', f'qapi_free_{n}', [f'{n} *obj']), '{',
                 '    if (obj) {', f'        qapi_free_{n}_members(obj);',
                 '        g_free(obj);', '    }', '}', '',
                 c_func(f'{n} *', f'qapi_{n}_clone', [f'const {n} *obj']),
                 '{',
                 f'    {n} *copy;', '',
                 '    if (!obj) {', '        return NULL;', '    }',
                 f'    copy = g_new({n}, 1);', '    *copy = *obj;']
        for m in s.members():
            if m.type.is_ptr:
                src = f'obj->{m.cname}'
                body.append(f'    copy->{m.cname} = '
                            f'{m.type.clone_expr(src)};')
        body += ['    return copy;', '}']
    c.add('\n'.join(body) + '\n')


def gen_array(h, c, a):
    n = a.c_name()
    el = a.element
    h.add('\n'.join([
        f'struct {n} {{', f'    {n} *next;',
        f'    {cdecl(el.c_type(), "value")};',
        '};', '',
        c_func('void', f'qapi_free_{n}', [f'{n} *list'], ';'),
        c_func(f'{n} *', f'qapi_{n}_clone', [f'const {n} *list'], ';'),
        f'G_DEFINE_AUTOPTR_CLEANUP_FUNC({n}, qapi_free_{n})']) + '\n')
    free = el.free_stmt('list->value')
    body = [c_func('void', f'qapi_free_{n}', [f'{n} *list']), '{',
            '    while (list) {', f'        {n} *next = list->next;', '']
    if free:
        body.append(f'        {free}')
    body += ['        g_free(list);', '        list = next;', '    }', '}', '',
             c_func(f'{n} *', f'qapi_{n}_clone', [f'const {n} *list']), '{',
             f'    {n} *head = NULL, **tail = &head;', '',
             '    for (; list; list = list->next) {',
             f'        {n} *elem = g_new0({n}, 1);', '',
             f'        elem->value = {el.clone_expr("list->value")};',
             '        *tail = elem;', '        tail = &elem->next;', '    }',
             '    return head;', '}']
    c.add('\n'.join(body) + '\n')


# ---------------------------------------------------------------------------
# qapi-visit.{h,c}: C <-> JSON

VISIT_DOC = '''\
/*
 * For a struct T:
 *   qapi_T_to_json()      T -> JSON object; absent optional members omitted
 *   qapi_T_from_json()    JSON -> new T, or NULL with *errp set.  @path
 *                         names the value in error messages ("caps[0]");
 *                         NULL at the top level
 *   qapi_T_members_*()    the same on the members of an existing object;
 *                         members_from_json() takes NULL as "no members"
 *                         and rejects members T does not have
 * For a list TList: qapi_TList_to_json(), and qapi_TList_from_json(), which
 * returns a bool because NULL is the empty list.  Enums encode as strings.
 */
'''


def gen_visit(schema, prefix):
    h = CFile(f'{prefix}qapi-visit.h', 'QAPI visitors: conversion between '
              'the generated C types and json-glib nodes.', header=True)
    c = CFile(f'{prefix}qapi-visit.c', 'QAPI visitors: conversion between '
              'the generated C types and json-glib nodes.')
    h.add(f'#include "qemu/typedefs.h"\n#include "qapi/qapi-json.h"\n'
          f'#include "{prefix}qapi-types.h"\n')
    h.add(VISIT_DOC)
    c.add(f'#include "qemu/osdep.h"\n#include "qapi/error.h"\n'
          f'#include "{prefix}qapi-visit.h"\n')

    for e in schema.enums():
        n = e.c_name()
        to_json = c_func('JsonNode *', f'qapi_{n}_to_json', [f'{n} v'])
        from_json = c_func('bool', f'qapi_{n}_from_json',
                           ['JsonNode *node', 'const char *path',
                            f'{n} *out', 'Error **errp'])
        h.add(f'{to_json};\n{from_json};\n')
        c.add('\n'.join([
            to_json, '{',
            f'    return qapi_str_to_json({n}_str(v));', '}', '',
            from_json, '{', '    int v;', '',
            f'    if (!qapi_enum_from_json(node, path, {n}_lookup,',
            f'                             {e.max_const()}, &v, errp)) {{',
            '        return false;', '    }', f'    *out = ({n})v;',
            '    return true;', '}']) + '\n')

    for s in schema.structs():
        gen_struct_visit(h, c, s)
    for a in schema.used_arrays():
        gen_array_visit(h, c, a)
    return h, c


def gen_struct_visit(h, c, s):
    n = s.c_name()
    m_to = c_func('void', f'qapi_{n}_members_to_json',
                  ['JsonObject *o', f'const {n} *obj'])
    m_from = c_func('bool', f'qapi_{n}_members_from_json',
                    ['JsonObject *o', 'const char *path', f'{n} *obj',
                     'Error **errp'])
    to = c_func('JsonNode *', f'qapi_{n}_to_json', [f'const {n} *obj'])
    frm = c_func(f'{n} *', f'qapi_{n}_from_json',
                 ['JsonNode *node', 'const char *path', 'Error **errp'])
    decl = [m_to + ';', m_from + ';']
    if not s.implicit:
        decl += [to + ';', frm + ';']
    h.add('\n'.join(decl) + '\n')

    members = s.members()
    body = [f'static const char *const {n}_names[] = {{']
    body += [f'    {c_string(m.name)},' for m in members]
    body += ['    NULL,', '};', '']

    body += [m_to, '{']
    if not members:
        body.append('    (void)o;\n    (void)obj;')
    for m in members:
        val = f'obj->{m.cname}'
        put = f'json_object_set_member(o, {c_string(m.name)}, ' \
              f'{m.type.encode(val)});'
        if m.has_flag():
            body += [f'    if (obj->has_{m.cname}) {{', f'        {put}', '    }']
        elif m.optional:
            body += [f'    if ({val}) {{', f'        {put}', '    }']
        else:
            body.append(f'    {put}')
    body += ['}', '']

    body += [m_from, '{']
    if members:
        body += ['    JsonNode *node;', '']
    for m in members:
        lval = f'obj->{m.cname}'
        body += [f'    node = qapi_member(o, {c_string(m.name)});',
                 '    if (node) {',
                 f'        g_autofree char *p = qapi_path_member(path, '
                 f'{c_string(m.name)});', '',
                 f'        if (!{m.type.decode("node", "p", lval)}) {{',
                 '            return false;', '        }']
        if m.has_flag():
            body.append(f'        obj->has_{m.cname} = true;')
        body.append('    }' if m.optional else '    } else {')
        if not m.optional:
            body += [f'        qapi_error_missing(errp, path, '
                     f'{c_string(m.name)});',
                     '        return false;', '    }']
    body += [f'    return qapi_check_members(o, path, {n}_names, errp);', '}']

    if not s.implicit:
        body += ['', to, '{',
                 '    JsonObject *o = json_object_new();', '',
                 '    if (obj) {', f'        qapi_{n}_members_to_json(o, obj);',
                 '    }', '    return qapi_object_to_json(o);', '}', '',
                 frm, '{',
                 '    JsonObject *o = qapi_object_from_json(node, path, errp);',
                 f'    {n} *obj;', '',
                 '    if (!o) {', '        return NULL;', '    }',
                 f'    obj = g_new0({n}, 1);',
                 f'    if (!qapi_{n}_members_from_json(o, path, obj, errp)) {{',
                 f'        qapi_free_{n}(obj);', '        return NULL;', '    }',
                 '    return obj;', '}']
    c.add('\n'.join(body) + '\n')


def gen_array_visit(h, c, a):
    n = a.c_name()
    to = c_func('JsonNode *', f'qapi_{n}_to_json', [f'const {n} *list'])
    frm = c_func('bool', f'qapi_{n}_from_json',
                 ['JsonNode *node', 'const char *path', f'{n} **out',
                  'Error **errp'])
    h.add(f'{to};\n{frm};\n')
    el = a.element
    c.add('\n'.join([
        to, '{',
        '    JsonArray *array = json_array_new();', '',
        '    for (; list; list = list->next) {',
        f'        json_array_add_element(array, {el.encode("list->value")});',
        '    }', '    return qapi_array_to_json(array);', '}', '',
        frm, '{',
        '    JsonArray *array = qapi_array_from_json(node, path, errp);',
        f'    {n} *head = NULL, **tail = &head;', '    guint i, len;', '',
        '    if (!array) {', '        return false;', '    }',
        '    len = json_array_get_length(array);',
        '    for (i = 0; i < len; i++) {',
        '        g_autofree char *p = qapi_path_index(path, i);',
        f'        {n} *elem = g_new0({n}, 1);', '',
        '        *tail = elem;', '        tail = &elem->next;',
        f'        if (!{el.decode("json_array_get_element(array, i)", "p", "elem->value")}) {{',
        f'            qapi_free_{n}(head);', '            return false;',
        '        }', '    }', '    *out = head;', '    return true;', '}'])
        + '\n')


# ---------------------------------------------------------------------------
# qapi-commands.{h,c}: handler prototypes, marshallers, the command table

COMMANDS_DOC = '''\
/*
 * Handlers, one per command, written by the subsystem that owns the command.
 * Arguments come in schema order: a required member as its C type (strings,
 * structs and lists as const pointers owned by the caller), an optional
 * scalar as "bool has_x, T x", an optional pointer as the pointer (NULL when
 * absent).  'boxed' commands get the argument struct instead.  A command
 * with 'returns' returns its result (NULL with *errp set on failure; NULL is
 * also the empty list); one without returns true on success.
 */
'''


def handler_proto(cmd):
    if not cmd.gen:
        ret, params = 'JsonNode *', ['JsonObject *args']
    else:
        ret = cmd.ret_type.c_type() if cmd.ret_type else 'bool'
        params = params_of(cmd.arg_type, cmd.boxed)
    params.append('Error **errp')
    return c_func(ret, f'qmp_{cmd.cname}', params)


def gen_commands(schema, prefix):
    h = CFile(f'{prefix}qapi-commands.h', 'QMP command handlers (implemented '
              'by their subsystems) and the generated command table.',
              header=True)
    c = CFile(f'{prefix}qapi-commands.c', 'QMP marshallers: check the '
              'arguments, call the handler, convert the result.')
    h.add(f'#include "qemu/typedefs.h"\n#include "{prefix}qapi-types.h"\n')
    h.add(COMMANDS_DOC)
    c.add(f'#include "qemu/osdep.h"\n#include "qapi/error.h"\n'
          f'#include "monitor/qmp-dispatch.h"\n'
          f'#include "{prefix}qapi-visit.h"\n'
          f'#include "{prefix}qapi-commands.h"\n')
    protos = [handler_proto(cmd) + ';' for cmd in schema.commands]
    h.add('\n'.join(protos) + '\n')
    for cmd in schema.commands:
        c.add(gen_marshal(cmd))
    table = ['const QmpCommand qmp_commands[] = {']
    for cmd in schema.commands:
        table.append(f'    {{ {c_string(cmd.name)}, qmp_marshal_{cmd.cname}, 0 }},')
    table += ['};', '',
              'const size_t qmp_commands_count = G_N_ELEMENTS(qmp_commands);']
    c.add('\n'.join(table) + '\n')
    return h, c


def gen_marshal(cmd):
    n = cmd.cname
    name = c_string(cmd.name)
    at = cmd.arg_type
    pre = [c_func('static JsonNode *', f'qmp_marshal_{n}',
                  ['JsonObject *args', 'Error **errp']),
           '{', '    Error *err = NULL;']
    body = []
    post = []
    if at is not None:
        pre.append(f'    {at.c_name()} arg = {{ 0 }};')
        body += [f'    if (!qapi_{at.c_name()}_members_from_json(args, NULL,',
                 f'{" " * (len(at.c_name()) + 31)}&arg, errp)) {{',
                 '        goto out;', '    }']
        post = ['out:', f'    qapi_free_{at.c_name()}_members(&arg);']
    else:
        body += ['    if (!qapi_check_members(args, NULL, NULL, errp)) {',
                 '        return NULL;', '    }']
    pre.append('    JsonNode *out = NULL;')

    if not cmd.gen:
        call_args = ['args']
    elif at is None:
        call_args = []
    elif cmd.boxed:
        call_args = ['&arg']
    else:
        call_args = []
        for m in at.members():
            if m.has_flag():
                call_args.append(f'arg.has_{m.cname}')
            call_args.append(f'arg.{m.cname}')
    call = f'qmp_{n}({", ".join(call_args + ["&err"])})'

    rt = cmd.ret_type
    if not cmd.gen:
        pre.append('    JsonNode *ret;')
        body += [f'    ret = {call};',
                 f'    if (qapi_command_result_ok(ret != NULL, err, {name}, '
                 'errp)) {',
                 '        out = ret;', '    } else {',
                 '        qapi_free_any(ret);', '    }']
    elif rt is None:
        pre.append('    bool ok;')
        body += [f'    ok = {call};',
                 f'    if (qapi_command_result_ok(ok, err, {name}, errp)) {{',
                 '        out = qapi_object_to_json(json_object_new());',
                 '    }']
    else:
        pre.append(f'    {cdecl(rt.c_type(), "ret")};')
        have = 'true' if isinstance(rt, Array) else 'ret != NULL'
        body += [f'    ret = {call};',
                 f'    if (qapi_command_result_ok({have}, err, {name}, '
                 'errp)) {',
                 f'        out = {rt.encode("ret")};', '    }',
                 f'    {rt.free_stmt("ret")}']
    lines = pre + [''] + body + post + ['    return out;', '}']
    return '\n'.join(lines) + '\n'


# ---------------------------------------------------------------------------
# qapi-events.{h,c}

def gen_events(schema, prefix):
    h = CFile(f'{prefix}qapi-events.h', 'QMP events: the QAPIEvent enum and '
              'one sender per event.', header=True)
    c = CFile(f'{prefix}qapi-events.c', 'QMP events: build the "data" '
              'object and hand it to the monitor.')
    h.add(f'#include "{prefix}qapi-types.h"\n')
    c.add(f'#include "qemu/osdep.h"\n#include "qapi/qapi-json.h"\n'
          f'#include "{prefix}qapi-visit.h"\n'
          f'#include "{prefix}qapi-events.h"\n')
    gen_enum(h, c, schema.event_enum)
    h.add('/*\n * Implemented by the monitor: adds "event" and "timestamp" and '
          'sends the\n * event to every QMP monitor.  Takes ownership of '
          '@data, which is NULL\n * for events without data.\n */\n'
          'void monitor_qapi_event_emit(QAPIEvent event, JsonObject *data);\n')
    protos = []
    for ev in schema.events:
        fn = 'qapi_event_send_' + c_name(ev.name, False).lower()
        proto = c_func('void', fn, params_of(ev.arg_type, ev.boxed))
        protos.append(proto + ';')
        const = schema.event_enum.const(ev.name)
        at = ev.arg_type
        if at is None:
            c.add(f'{proto}\n{{\n    monitor_qapi_event_emit({const}, NULL);'
                  '\n}\n')
            continue
        lines = [proto, '{']
        if ev.boxed:
            src = 'arg'
        else:
            lines.append(f'    {at.c_name()} param = {{')
            for m in at.members():
                if m.has_flag():
                    lines.append(f'        .has_{m.cname} = has_{m.cname},')
                cast = f'({m.type.c_type()})' if m.type.is_ptr else ''
                lines.append(f'        .{m.cname} = {cast}{m.cname},')
            lines.append('    };')
            src = '&param'
        lines += ['    JsonObject *data = json_object_new();', '',
                  f'    qapi_{at.c_name()}_members_to_json(data, {src});',
                  f'    monitor_qapi_event_emit({const}, data);', '}']
        c.add('\n'.join(lines) + '\n')
    h.add('\n'.join(protos) + '\n')
    return h, c


# ---------------------------------------------------------------------------
# qapi-introspect.c: the SchemaInfo list returned by query-qmp-schema

def gen_introspect(schema, prefix):
    entities = []
    seen = set()
    pending = []

    def use(t):
        if t is None:
            t = 'q_empty'
        name = t if isinstance(t, str) else t.name
        if name not in seen:
            seen.add(name)
            pending.append(t)
        return name

    for cmd in schema.commands:
        entities.append({'name': cmd.name, 'meta-type': 'command',
                         'arg-type': use(cmd.arg_type),
                         'ret-type': use(cmd.ret_type)})
    for ev in schema.events:
        entities.append({'name': ev.name, 'meta-type': 'event',
                         'arg-type': use(ev.arg_type)})
    while pending:
        t = pending.pop(0)
        if t == 'q_empty':
            entities.append({'name': 'q_empty', 'meta-type': 'object',
                             'members': []})
        elif isinstance(t, Struct):
            members = []
            for m in t.members():
                info = {'name': m.name, 'type': use(m.type)}
                if m.optional:
                    info['default'] = None
                members.append(info)
            entities.append({'name': t.name, 'meta-type': 'object',
                             'members': members})
        elif isinstance(t, Enum):
            entities.append({'name': t.name, 'meta-type': 'enum',
                             'members': [{'name': v} for v in t.values],
                             'values': list(t.values)})
        elif isinstance(t, Array):
            entities.append({'name': t.name, 'meta-type': 'array',
                             'element-type': use(t.element)})
        else:
            entities.append({'name': t.name, 'meta-type': 'builtin',
                             'json-type': t.json_type})

    c = CFile(f'{prefix}qapi-introspect.c', 'The schema as query-qmp-schema '
              'returns it: a JSON list of SchemaInfo objects, parsed on use.')
    c.add('#include "qemu/osdep.h"\n#include "monitor/qmp-dispatch.h"\n')
    lines = ['const char qapi_introspect_json[] =', '    "["']
    for i, e in enumerate(entities):
        text = json.dumps(e, separators=(', ', ': '))
        sep = ',' if i + 1 < len(entities) else ''
        lines.append('    ' + c_string(text + sep))
    lines.append('    "]";')
    c.add('\n'.join(lines) + '\n')
    return c


# ---------------------------------------------------------------------------

def write_file(outdir, cfile):
    path = os.path.join(outdir, cfile.fname)
    text = cfile.text()
    try:
        with open(path, encoding='utf-8') as f:
            if f.read() == text:
                os.utime(path)
                return
    except OSError:
        pass
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(
        description='Generate C from a QAPI schema.')
    ap.add_argument('schema', help='top-level schema file')
    ap.add_argument('-o', '--output-dir', default='.',
                    help='where to write the generated files')
    ap.add_argument('-p', '--prefix', default='',
                    help="prefix for the generated file names ('test-')")
    ap.add_argument('-d', '--depfile',
                    help='write a Makefile-style list of schema files read')
    args = ap.parse_args()
    if args.prefix and not re.fullmatch(r'[A-Za-z0-9_-]+', args.prefix):
        ap.error(f'invalid prefix {args.prefix!r}')
    try:
        schema = Schema(args.schema)
    except SchemaError as e:
        print(f'{sys.argv[0]}: {e}', file=sys.stderr)
        return 1
    files = []
    files += gen_types(schema, args.prefix)
    files += gen_visit(schema, args.prefix)
    files += gen_commands(schema, args.prefix)
    files += gen_events(schema, args.prefix)
    files.append(gen_introspect(schema, args.prefix))
    os.makedirs(args.output_dir, exist_ok=True)
    for f in files:
        write_file(args.output_dir, f)
    if args.depfile:
        target = os.path.join(args.output_dir, files[0].fname)
        deps = schema.deps + [os.path.abspath(__file__)]
        with open(args.depfile, 'w', encoding='utf-8') as f:
            f.write(f'{target}: ' + ' \\\n  '.join(
                d.replace(' ', '\\ ') for d in deps) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
