# SPDX-License-Identifier: GPL-2.0-or-later
"""The checked schema: C names, types, definitions, and the Schema that builds them."""

import re

from .parser import SchemaError, check_keys, read_schema


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
