# SPDX-License-Identifier: GPL-2.0-or-later
"""What test-analyze.py, test-analyze-mapped.py and test-analyze-built.py
share: paths, limits, the analyzer's error format, and running it."""

import json
import os
import re
import subprocess
import sys

SRC_DIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ANALYZE = os.path.join(SRC_DIR, 'scripts', 'analyze-migration.py')
QEMU = os.environ.get('QTEST_QEMU_BINARY',
                      os.path.join(SRC_DIR, 'build', 'qemu-system-x86_64'))
FIRMWARE = os.environ.get('VMTEST_FIRMWARE',
                          os.path.join(SRC_DIR, 'build', 'tests', 'guest',
                                       'workload.elf'))
CPU = os.environ.get('VMTEST_CPU', 'host')
DEADLINE = float(os.environ.get('VMTEST_DEADLINE', '120'))

PAGE = 4096
MiB = 1 << 20
ERROR_RE = re.compile(r'^analyze-migration\.py: error: \S.* at offset '
                      r'0x[0-9a-f]+$')
ANY_ERROR_RE = re.compile(r'^analyze-migration\.py: error: \S')


def analyze(path, *args):
    """Run the analyzer; return (exit status, parsed stdout or None,
    stderr). Without -d the summary (QEMU's default, state, is asked for
    by name where a test wants it)."""
    args = list(args)
    if not {'-d', '--dump', '-x', '--extract'} & set(args):
        args = ['-d', 'summary'] + args
    p = subprocess.run([sys.executable, ANALYZE, '-f', path] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=DEADLINE * 5)
    out = p.stdout.decode('utf-8', 'replace')
    err = p.stderr.decode('utf-8', 'replace')
    try:
        doc = json.loads(out) if out.strip() else None
    except ValueError:
        doc = None
    return p.returncode, doc, err


def copy_prefix(src, dst, length):
    with open(src, 'rb') as fi, open(dst, 'wb') as fo:
        left = length
        while left:
            try:
                n = os.copy_file_range(fi.fileno(), fo.fileno(), left)
            except OSError:
                n = 0
            if n == 0:
                buf = fi.read(min(left, 4 * MiB))
                if not buf:
                    break
                fo.write(buf)
                n = len(buf)
            left -= n
