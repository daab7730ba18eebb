#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Compare the device layouts of two migration streams' vmdescs.

Each input is a stream file (its vmdesc is read with scripts/analyze-migration.py)
or a JSON description as `analyze-migration.py -d desc` prints it, such as
docs/devel/qemu-vmdesc/microvm-qemu-10.0.json. For every section (name,
instance) both have, the fields (name, type, size, array_len) and the
subsections both sent must match; sections only one side has are listed.
Values are not compared: two machines' state differs, their layout must not.

    scripts/vmdesc-compare.py ours.mig docs/devel/qemu-vmdesc/microvm-qemu-10.0.json
    scripts/vmdesc-compare.py --sections cpu,apic ours.mig qemu.mig

Exit status 0 when the layouts match, 1 when they differ, 2 on bad input.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_desc(path):
    with open(path, 'rb') as f:
        head = f.read(4)
    if head != b'QEVM':
        with open(path) as f:
            return json.load(f)
    out = subprocess.run([sys.executable, os.path.join(HERE, 'analyze-migration.py'),
                          '-f', path, '-d', 'desc'], capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError('%s: %s' % (path, out.stderr.strip()))
    return json.loads(out.stdout)


def shape(fields):
    """The layout of a field list: what a reader needs, nothing of the values."""
    res = []
    for f in fields:
        item = (f['name'], f['type'], f['size'], f.get('array_len'))
        if 'struct' in f:
            item += (struct_shape(f['struct']),)
        elif f['type'] == 'tmp':
            # QEMU's "tmp" fields carry their description inline (x86 cpu's fpregs).
            item += (struct_shape(f),)
        res.append(item)
    return res


def struct_shape(d):
    subs = {s['vmsd_name']: (s.get('version'), shape(s['fields']))
            for s in d.get('subsections', [])}
    return (d.get('vmsd_name'), d.get('version'), tuple(map(repr, shape(d['fields']))),
            tuple(sorted((k, repr(v)) for k, v in subs.items())))


def diff_fields(where, a, b, out):
    for i in range(max(len(a), len(b))):
        fa = a[i] if i < len(a) else None
        fb = b[i] if i < len(b) else None
        if fa != fb:
            out.append('%s: field %d: %r != %r' % (where, i, fa and fa[:4], fb and fb[:4]))
            if fa and fb and fa[:4] == fb[:4]:
                out.append('%s: field %d (%s): nested layouts differ' % (where, i, fa[0]))
            return


def compare(da, db, only=None):
    def index(d):
        return {(s['name'], s['instance_id']): s for s in d['devices']}
    ia, ib = index(da), index(db)
    problems, notes = [], []
    for key in sorted(set(ia) | set(ib)):
        if only and key[0] not in only:
            continue
        if key not in ia or key not in ib:
            notes.append('section %s %d only in the %s' % (key[0], key[1],
                                                            'first' if key in ia else 'second'))
            continue
        sa, sb = ia[key], ib[key]
        where = '%s %d' % key
        if sa.get('version') != sb.get('version'):
            problems.append('%s: version %s != %s' % (where, sa.get('version'), sb.get('version')))
        diff_fields(where, shape(sa['fields']), shape(sb['fields']), problems)
        suba = {s['vmsd_name']: s for s in sa.get('subsections', [])}
        subb = {s['vmsd_name']: s for s in sb.get('subsections', [])}
        for name in sorted(set(suba) & set(subb)):
            if suba[name].get('version') != subb[name].get('version'):
                problems.append('%s/%s: version %s != %s' % (where, name, suba[name].get('version'),
                                                              subb[name].get('version')))
            diff_fields('%s %s' % (where, name), shape(suba[name]['fields']),
                        shape(subb[name]['fields']), problems)
        for name in sorted(set(suba) ^ set(subb)):
            notes.append('%s: subsection %s sent only by the %s' % (
                where, name, 'first' if name in suba else 'second'))
    return problems, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('first')
    ap.add_argument('second')
    ap.add_argument('--sections', help='comma-separated section names to compare (default: all)')
    ap.add_argument('--strict', action='store_true',
                    help='sections or subsections only one side has are differences too')
    args = ap.parse_args()
    try:
        da, db = load_desc(args.first), load_desc(args.second)
    except (OSError, ValueError) as e:
        print('vmdesc-compare: %s' % e, file=sys.stderr)
        return 2
    only = set(args.sections.split(',')) if args.sections else None
    problems, notes = compare(da, db, only)
    for n in notes:
        print('note: ' + n)
    for p in problems:
        print('DIFF: ' + p)
    if problems or (args.strict and notes):
        return 1
    print('layouts match')
    return 0


if __name__ == '__main__':
    sys.exit(main())
