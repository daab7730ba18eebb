#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-migrate-channels.py: QEMU 8.2's `channels` spelling of migrate and
migrate-incoming, and QEMU 10.0's JSON form of -incoming (issue 38's first
step). A running verify guest moves with each transport given as a channel
(socket unix and inet, file with an offset, exec), and to and from QEMU
10.0 (skipped loudly without it), and must go on with no FAIL; the refusals carry QEMU's messages: uri and channels both or
neither, two main channels, a member the transport lacks or needs; a
"cpr" channel outside mode cpr-transfer, or not on a unix socket, is
refused from QMP and from -incoming, whose process then never starts
(test-live-update.py moves guests with it). migrate-incoming's
exit-on-error (QEMU 9.1): false keeps a destination whose load failed,
in status failed with the reason, and refuses cont; the default ends it.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure), VMTEST_QEMU10 (QEMU 10.0's
binary, default /opt/qemu-10.0/bin/qemu-system-x86_64).
"""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU  # noqa: E402
from analyzevm import VM, need_binary, free_port, QEMU10  # noqa: E402
from guestcase import GuestCase  # noqa: E402


MEM_MB = 128
APPEND = 'mode=verify mem=16'


def main(addr):
    return [{'channel-type': 'main', 'addr': addr}]


class ChannelsCase(GuestCase):
    NAME = 'test-migrate-channels'
    TMP_PREFIX = 'qemu-mig-channels-'

    def vm(self, name, incoming=None, binary=None):
        extra = ['-incoming', incoming] if incoming else []
        return self.keep(VM(self.tmp, '%s%d' % (name, len(self.vms)), mem_mb=MEM_MB,
                            append=APPEND, extra=extra, binary=binary), name)

    def migrate(self, src, dst, channels):
        """migrate with @channels; the guest must run on at @dst."""
        src.qmp.cmd('migrate', channels=channels)
        info = self.wait_migration(src, also=dst)
        self.assertEqual(info['status'], 'completed', '%s; destination: %s'
                         % (info, dst.log_tail()))
        self.wait_running(dst)
        self.wait_passes(dst, 2)


class TestChannels(ChannelsCase):
    def test_unix_both_ends(self):
        """migrate-incoming and migrate, each with a unix socket channel."""
        path = os.path.join(self.tmp, 'unix.sock')
        src = self.vm('src')
        self.wait_passes(src, 1)
        dst = self.vm('dst', incoming='defer')
        addr = {'transport': 'socket', 'type': 'unix', 'path': path}
        dst.qmp.cmd('migrate-incoming', channels=main(addr))
        self.migrate(src, dst, main(addr))

    def test_incoming_json_inet(self):
        """-incoming's JSON channel object (QEMU 10.0), and migrate's inet channel."""
        port = str(free_port())
        addr = {'transport': 'socket', 'type': 'inet', 'host': '127.0.0.1', 'port': port}
        src = self.vm('src')
        self.wait_passes(src, 1)
        dst = self.vm('dst', incoming=json.dumps({'channel-type': 'main', 'addr': addr}))
        self.migrate(src, dst, main(addr))

    def test_file_offset_and_exec(self):
        """A file channel at an offset written, and read back by -incoming's JSON;
        an exec channel runs its program with its arguments, unquoted by a shell."""
        path = os.path.join(self.tmp, 'state, with a comma.mig')
        src = self.vm('src')
        self.wait_passes(src, 1)
        src.qmp.cmd('stop')
        src.qmp.cmd('migrate', channels=main({'transport': 'file', 'filename': path,
                                              'offset': 8192}))
        self.wait_status(src, 'query-migrate', ('completed',))
        with open(path, 'rb') as f:
            head = f.read(8196)
        self.assertEqual(head[:8192], bytes(8192))
        self.assertEqual(head[8192:], b'QEVM')
        copy = path + '.exec'
        src.qmp.cmd('migrate', channels=main({'transport': 'exec',
                                              'args': ['/bin/sh', '-c', 'cat > "$0"', copy]}))
        self.wait_status(src, 'query-migrate', ('completed',))
        with open(copy, 'rb') as f:
            self.assertEqual(f.read(4), b'QEVM')
        dst = self.vm('dst', incoming=json.dumps(
            {'channel-type': 'main', 'addr': {'transport': 'file', 'filename': path,
                                              'offset': 8192}}))
        # Saved paused, it loads paused (QEMU's global state) until cont.
        self.wait_status(dst, 'query-migrate', ('completed',))
        dst.qmp.cmd('cont')
        self.wait_status(dst, 'query-status', ('running',))
        self.wait_passes(dst, 2)

    def qemu10_hop(self, src_binary, dst_binary):
        port = str(free_port())
        addr = {'transport': 'socket', 'type': 'inet', 'host': '127.0.0.1', 'port': port}
        src = self.vm('src', binary=src_binary)
        self.wait_passes(src, 1)
        dst = self.vm('dst', incoming=json.dumps({'channel-type': 'main', 'addr': addr}),
                      binary=dst_binary)
        self.migrate(src, dst, main(addr))

    def test_to_qemu10(self):
        """Our channels to QEMU 10.0's -incoming JSON: the same spelling both ends."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.qemu10_hop(QEMU, QEMU10)

    def test_from_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.qemu10_hop(QEMU10, QEMU)

    def test_refusals(self):
        vm = self.vm('src')
        exe = {'transport': 'exec', 'args': ['/bin/true']}
        self.refused(vm, 'migrate', "need either 'uri' or 'channels' argument")
        self.refused(vm, 'migrate', "need either 'uri' or 'channels' argument",
                     uri='exec:true', channels=main(exe))
        self.refused(vm, 'migrate', 'Channel list has more than one main entry',
                     channels=main(exe) + main(exe))
        self.refused(vm, 'migrate', "Parameter 'channels[0].addr.offset' is missing",
                     channels=main({'transport': 'file', 'filename': '/nonexistent/x'}))
        self.refused(vm, 'migrate', "Parameter 'channels[0].addr.path' is unexpected",
                     channels=main({'transport': 'socket', 'type': 'inet', 'host': 'h',
                                    'port': '1', 'path': '/x'}))
        self.refused(vm, 'migrate', "Parameter 'channels[0].addr.bogus' is unexpected",
                     channels=main({'transport': 'exec', 'args': ['/bin/true'], 'bogus': 1}))
        self.refused(vm, 'migrate', 'bad cpr channel address; must be unix',
                     channels=main(exe) + [{'channel-type': 'cpr', 'addr': exe}])
        unix_cpr = {'channel-type': 'cpr', 'addr': {'transport': 'socket', 'type': 'unix',
                                                    'path': os.path.join(self.tmp, 'c.sock')}}
        self.refused(vm, 'migrate', "a 'cpr' channel is for migrate-set-parameters mode "
                     "cpr-transfer", channels=main(exe) + [unix_cpr])
        self.refused(vm, 'migrate', 'Channel list has no main entry', channels=[unix_cpr])
        self.assertEqual(vm.qmp.cmd('query-migrate').get('status'), None)
        dst = self.vm('dst', incoming='defer')
        self.refused(dst, 'migrate-incoming', "need either 'uri' or 'channels' argument")
        self.refused(dst, 'migrate-incoming', "a 'cpr' channel is given to the new process's "
                     "-incoming, not here", channels=main(exe) + [unix_cpr])
        # Still deferred: a good channel list is taken after the refusals.
        path = os.path.join(self.tmp, 'after-refusals.sock')
        dst.qmp.cmd('migrate-incoming', channels=main({'transport': 'socket', 'type': 'unix',
                                                       'path': path}))

    def test_exit_on_error(self):
        bad = os.path.join(self.tmp, 'garbage.mig')
        with open(bad, 'wb') as f:
            f.write(b'QEVM\0\0\0\3' + b'garbage' * 10)
        kept = self.vm('kept', incoming='defer')
        kept.qmp.cmd('migrate-incoming', uri='file:' + bad, **{'exit-on-error': False})
        info = self.wait_status(kept, 'query-migrate', ('failed',))
        self.assertIn('Configuration section missing', info.get('error-desc', ''))
        self.refused(kept, 'cont', 'The incoming migration failed: the guest never loaded')
        self.assertIsNone(kept.proc.poll())
        gone = self.vm('gone', incoming='defer')
        gone.qmp.cmd('migrate-incoming', uri='file:' + bad)
        self.assertEqual(gone.proc.wait(timeout=DEADLINE), 1)

    def test_incoming_json_cpr(self):
        """-incoming's cpr channel must be a unix socket, and comes with a main
        channel: otherwise the process refuses to start, in QEMU's words."""
        def start(*incoming):
            args = [QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', CPU, '-nodefaults',
                    '-display', 'none', '-kernel', FIRMWARE]
            for i in incoming:
                args += ['-incoming', i]
            return subprocess.run(args, capture_output=True, text=True, timeout=DEADLINE)

        tcp = {'channel-type': 'cpr', 'addr': {'transport': 'socket', 'type': 'inet',
                                               'host': '127.0.0.1', 'port': '1'}}
        out = start('defer', json.dumps(tcp))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn('bad cpr channel address; must be unix', out.stderr)
        unix = {'channel-type': 'cpr', 'addr': {'transport': 'socket', 'type': 'unix',
                                                'path': os.path.join(self.tmp, 'cpr.sock')}}
        out = start(json.dumps(unix))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn('a cpr channel needs a main channel too', out.stderr)

if __name__ == '__main__':
    unittest.main(verbosity=2)
