#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-compat.py: docs/compat.md, the "works and refused" table the README
points to, is what the binaries answer today (scripts/compat-table
--check), and an option or command the table calls refused is refused
the way QEMU refuses what it does not know.

Environment: QTEST_QEMU_BINARY.
"""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from analyzevm import need_binary  # noqa: E402

TOP = os.path.dirname(os.path.dirname(HERE))
QEMU = os.environ.get('QTEST_QEMU_BINARY', os.path.join(TOP, 'build', 'qemu-system-x86_64'))
QEMU72 = '/usr/bin/qemu-system-x86_64'
QEMU10 = '/opt/qemu-10.0/bin/qemu-system-x86_64'
TABLE = os.path.join(TOP, 'docs', 'compat.md')


def rows(section):
    """{name: ours says yes} of one table of docs/compat.md."""
    out, inside = {}, False
    with open(TABLE) as f:
        for line in f:
            if line.startswith('## '):
                inside = line.strip() == '## ' + section
            elif inside and line.startswith('| `'):
                cells = [c.strip() for c in line.strip().strip('|').split('|')]
                out[cells[0].strip('`')] = cells[-1] == 'yes'
    return out


class Compat(unittest.TestCase):
    def setUp(self):
        need_binary(self, QEMU72, 'QEMU 7.2')
        need_binary(self, QEMU10, 'QEMU 10.0')

    def test_table_is_current(self):
        p = subprocess.run([sys.executable, os.path.join(TOP, 'scripts', 'compat-table'),
                            '--ours', QEMU, '--qemu', QEMU72, '--qemu', QEMU10,
                            '--check', TABLE], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout[-4000:] + p.stderr)

    def test_refused_reads_like_qemu(self):
        """A refused option says "invalid option" and where the list is; a
        refused QMP command is CommandNotFound, as QEMU answers."""
        opts = rows('Command-line options')
        refused = sorted(o for o, yes in opts.items() if not yes)
        self.assertIn('fda', refused)
        p = subprocess.run([QEMU, '-fda', 'x'], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('qemu-system-x86_64: -fda: invalid option', p.stderr)
        cmds = rows('QMP commands')
        gone = sorted(c for c, yes in cmds.items() if not yes)
        self.assertIn('device_add', gone)
        lines = [{'execute': 'qmp_capabilities'}, {'execute': 'device_add',
                                                   'arguments': {'driver': 'x'}},
                 {'execute': 'quit'}]
        p = subprocess.run([QEMU, '-M', 'none', '-display', 'none', '-nodefaults',
                            '-qmp', 'stdio'], capture_output=True, text=True, timeout=30,
                           input=''.join(json.dumps(x) + '\n' for x in lines))
        errs = [json.loads(x)['error'] for x in p.stdout.splitlines() if '"error"' in x]
        self.assertEqual(errs[0]['class'], 'CommandNotFound', p.stdout)
        self.assertTrue(cmds['migrate'] and cmds['query-migrate'])


if __name__ == '__main__':
    unittest.main(verbosity=2)
