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
import os
import re
import sys

from qapigen.gen import gen_commands, gen_events, gen_introspect, gen_types, gen_visit
from qapigen.parser import SchemaError
from qapigen.schema import Schema

GENERATOR_FILES = [os.path.abspath(__file__)] + [
    os.path.join(os.path.dirname(os.path.abspath(__file__)), 'qapigen', m)
    for m in ('__init__.py', 'parser.py', 'schema.py', 'gen.py')]


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
        deps = schema.deps + GENERATOR_FILES
        with open(args.depfile, 'w', encoding='utf-8') as f:
            f.write(f'{target}: ' + ' \\\n  '.join(
                d.replace(' ', '\\ ') for d in deps) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
