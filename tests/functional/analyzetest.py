# SPDX-License-Identifier: GPL-2.0-or-later
"""What test-analyze.py, test-analyze-mapped.py and test-analyze-built.py
share: paths, limits, the analyzer's error format, and running it."""

import contextlib
import importlib.util
import io
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


_analyzer = None


def _analyzer_module():
    """scripts/analyze-migration.py as a module (its name has dashes)."""
    global _analyzer
    if _analyzer is None:
        sys.path.insert(0, os.path.dirname(ANALYZE))
        spec = importlib.util.spec_from_file_location('analyze_migration_run', ANALYZE)
        _analyzer = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_analyzer)
    return _analyzer


def analyze(path, *args):
    """Run the analyzer; return (exit status, parsed stdout or None,
    stderr). Without -d the summary (QEMU's default, state, is asked for
    by name where a test wants it). It runs in this process, through the
    script's main() (which turns every exception into a one-line internal
    error, as the script does): the truncation and bit-flip sweeps call it
    hundreds of times, and an interpreter per call was most of their time.
    ANALYZE_SUBPROCESS=1 runs the script as a process instead."""
    args = list(args)
    if not {'-d', '--dump', '-x', '--extract'} & set(args):
        args = ['-d', 'summary'] + args
    if os.environ.get('ANALYZE_SUBPROCESS'):
        p = subprocess.run([sys.executable, ANALYZE, '-f', path] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=DEADLINE * 5)
        out = p.stdout.decode('utf-8', 'replace')
        err = p.stderr.decode('utf-8', 'replace')
        rc = p.returncode
    else:
        o, e = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
            rc = _analyzer_module().main(['-f', path] + args)
        out, err = o.getvalue(), e.getvalue()
    try:
        doc = json.loads(out) if out.strip() else None
    except ValueError:
        doc = None
    return rc, doc, err


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
