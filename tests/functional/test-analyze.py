#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-analyze.py: scripts/analyze-migration.py against real streams.

Boots the workload firmware in a QEMU-compatible binary, migrates it to a
file with "exec:cat > FILE" and checks that the analyzer decodes the whole
stream (every device section through the vmdesc, EOF, plausible RAM page
counts that agree with query-migrate), that --dump-memory reproduces guest
RAM (against pmemsave, and against the workload's own page pattern), and
that truncated or corrupted streams give a one-line error, never a
traceback.  Mapped-ram files are checked in test-analyze-mapped.py;
small hand-built streams, which need no KVM, in test-analyze-built.py.

Environment:
  QTEST_QEMU_BINARY  binary to migrate with (default: build/qemu-system-x86_64)
  VMTEST_FIRMWARE    PVH guest (default: build/tests/guest/workload.elf)
  VMTEST_CPU         -cpu argument (default: host; QEMU 7.2 on kvm-pvm needs
                     host,-arch-capabilities)
  VMTEST_DEADLINE    seconds to wait for any one event (default: 120)

Run: tests/functional/test-analyze.py [-v] [TestClass.test_name ...]
"""

import os
import random
import re
import shutil
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import (  # noqa: E402
    ANY_ERROR_RE, ERROR_RE, MiB, PAGE, QEMU, analyze, copy_prefix)
from analyzevm import (  # noqa: E402
    PEER, PEER_CPU, QMPError, VM, StreamCase, supports_machine)


# ---------------------------------------------------------------------------
# Real streams.

class RealStreams(StreamCase):
    """Streams written by the binary under test."""

    # -- shared streams (made once, used by several tests) ------------------

    @classmethod
    def stopped_stream(cls, key, machine, mem_mb, wl_mb, binary=None, cpu=None):
        """Migrate a stopped VM running the verify workload; return a dict
        with the stream, its pmemsave image (or None), the work area and
        query-migrate's final answer."""
        if key in cls._fixtures:
            return cls._fixtures[key]
        d = cls.tmpdir
        vm = VM(d, key, machine, mem_mb, 'mode=verify mem=%d' % wl_mb, binary, cpu)
        try:
            base, end = vm.ready()
            vm.wait_serial(r'^PASS n=2 ')
            vm.qmp.cmd('stop')
            pmem = os.path.join(d, key + '.pmem')
            if not vm.pmemsave(pmem, mem_mb * MiB):
                sys.stderr.write('\n*** %s has no pmemsave: dump compared '
                                 'with the workload pattern only ***\n'
                                 % QEMU)
                pmem = None
            stream = os.path.join(d, key + '.mig')
            info = vm.migrate(stream)
        finally:
            vm.shutdown()
        fx = {'stream': stream, 'pmem': pmem, 'base': base, 'end': end,
              'info': info, 'mem': mem_mb * MiB}
        cls._fixtures[key] = fx
        return fx

    # -- tests -------------------------------------------------------------

    def test_microvm_stopped(self):
        fx = self.stopped_stream('microvm', 'microvm', 256, 64)
        ddir = self.path('microvm.dump')
        s = self.summary_of(fx['stream'], '--dump-memory', ddir)
        self.check_complete(s, 'microvm')
        ram = s['ram']
        ram_sec = [x for x in s['sections'] if x['idstr'] == 'ram']
        self.assertEqual(len(ram_sec), 1)
        self.assertEqual((ram_sec[0]['start'], ram_sec[0]['end']), (1, 1))
        self.assertEqual(self.main_block(ram, fx['mem'])['length'],
                         fx['mem'])
        self.check_each_page_once(ram)
        self.check_counts_match(ram, fx['info'])
        if fx['pmem']:
            self.compare_with_pmem(ram, ddir, fx['pmem'], fx['mem'])
        self.check_verify_pattern(ram, ddir, fx['base'], fx['end'],
                                  fx['mem'])
        # The summary without dumping is the same.
        s2 = self.summary_of(fx['stream'])
        self.assertEqual(s2['ram'], ram)

    def test_pc_stopped(self):
        # -M pc streams (many device types, ROM blocks) come from QEMU 7.2
        # when the binary under test has no pc machine (ours has not).
        binary, cpu = None, None
        if not supports_machine('pc'):
            if not supports_machine('pc', PEER):
                self.skipTest('%s has no -M pc and QEMU 7.2 (%s) is not installed'
                              % (QEMU, PEER))
            binary, cpu = PEER, PEER_CPU
        fx = self.stopped_stream('pc', 'pc', 256, 64, binary, cpu)
        ddir = self.path('pc.dump')
        s = self.summary_of(fx['stream'], '--dump-memory', ddir)
        self.check_complete(s, 'pc')
        ram = s['ram']
        self.assertGreater(len(ram['blocks']), 1)          # ROMs too
        self.check_each_page_once(ram)
        self.check_counts_match(ram, fx['info'])
        if fx['pmem']:
            self.compare_with_pmem(ram, ddir, fx['pmem'], fx['mem'])
        self.check_verify_pattern(ram, ddir, fx['base'], fx['end'],
                                  fx['mem'])

    def test_live_xbzrle(self):
        """A live migration of a dirtying guest: several RAM passes, with
        XBZRLE if the binary has it; after completion the source is paused,
        so its memory is what the stream says."""
        vm = VM(self.tmpdir, 'live', append='mode=dirty mem=8 rate=5')
        stream = self.path('live.mig')
        pmem = self.path('live.pmem')
        try:
            vm.ready()
            caps = ['xbzrle']
            try:
                vm.qmp.cmd('migrate-set-capabilities', capabilities=[
                    {'capability': 'xbzrle', 'state': True}])
            except QMPError as e:
                sys.stderr.write('\n*** no xbzrle (%s): plain live '
                                 'migration ***\n' % e)
                caps = []
            try:
                vm.qmp.cmd('migrate-set-parameters', **{
                    'max-bandwidth': 20000000, 'downtime-limit': 50})
            except QMPError as e:
                sys.stderr.write('\n*** migrate-set-parameters: %s ***\n' % e)
            info = vm.migrate(stream)
            paused = not vm.qmp.cmd('query-status').get('running', True)
            have_pmem = paused and vm.pmemsave(pmem, 256 * MiB)
        finally:
            vm.shutdown()
        ddir = self.path('live.dump')
        s = self.summary_of(stream, '--dump-memory', ddir)
        self.check_complete(s, 'microvm')
        ram = s['ram']
        sec = [x for x in s['sections'] if x['idstr'] == 'ram'][0]
        self.assertEqual((sec['start'], sec['end']), (1, 1))
        self.assertGreaterEqual(sec['part'], 1)
        self.assertEqual(ram['pages_covered'], ram['total_pages'])
        sent = ram['zero_pages'] + ram['normal_pages'] + \
            ram['xbzrle_pages'] + ram['compressed_pages']
        self.assertGreaterEqual(sent, ram['total_pages'])
        self.check_counts_match(ram, info)
        if caps:
            sys.stderr.write('\n(live: %d xbzrle pages, %d RAM chunks)\n'
                             % (ram['xbzrle_pages'], ram['chunks']))
        if have_pmem:
            self.compare_with_pmem(ram, ddir, pmem, 256 * MiB)

    def test_background_snapshot(self):
        vm = VM(self.tmpdir, 'bg', append='mode=verify mem=64')
        stream = self.path('bg.mig')
        try:
            base, end = vm.ready()
            vm.wait_serial(r'^PASS n=2 ')
            try:
                vm.qmp.cmd('migrate-set-capabilities', capabilities=[
                    {'capability': 'background-snapshot', 'state': True}])
            except QMPError as e:
                sys.stderr.write('\n*** SKIP background snapshot: %s ***\n'
                                 % e)
                self.skipTest('no background-snapshot: %s' % e)
            vm.migrate(stream)
            # The guest keeps running while and after the snapshot is taken.
            n = int(re.findall(r'^PASS n=(\d+) ', vm.serial_text(),
                               re.M)[-1])
            vm.wait_serial(r'^PASS n=%d ' % (n + 2))
            self.assertNotIn('FAIL', vm.serial_text())
        finally:
            vm.shutdown()
        ddir = self.path('bg.dump')
        s = self.summary_of(stream, '--dump-memory', ddir)
        self.check_complete(s, 'microvm')
        sec = [x for x in s['sections'] if x['idstr'] == 'ram'][0]
        self.assertEqual(sec['start'], 1)
        self.assertEqual(sec['end'], 0)            # no RAM END section
        self.assertGreaterEqual(sec['part'], 1)
        self.check_each_page_once(s['ram'])
        self.check_verify_pattern(s['ram'], ddir, base, end, 256 * MiB)

    # -- hostile input -------------------------------------------------------

    def small_stream(self):
        fx = self.stopped_stream('small', 'microvm', 64, 16)
        return fx['stream']

    def offsets_of_interest(self, stream):
        """Offsets inside each structure of the stream: header, config,
        section headers, a RAM page header, a page, devices, footers, EOF,
        the vmdesc."""
        size = os.path.getsize(stream)
        rec = self.run_ok(stream, '-d', 'records')['records']
        summ = self.summary_of(stream)
        offs = {1: 'header', 4: 'header', 6: 'header', 8: 'config type',
                10: 'config length', 14: 'machine name'}
        for r in rec:
            o, kind = r['offset'], r['type']
            offs[o] = 'before %s' % kind
            offs[o + 3] = 'in %s header' % kind
            if 'bytes' in r and r['bytes'] > 2:
                hdr = 5 if kind in ('part', 'end', 'command') else \
                    14 + len(r.get('idstr', '').encode())
                offs[o + hdr + r['bytes'] // 2] = 'in %s payload' % kind
                offs[o + hdr + r['bytes'] + 2] = 'in %s footer' % kind
        offs[summ['eof_offset']] = 'right before EOF'
        offs[summ['eof_offset'] + 1] = 'right after EOF'
        offs[summ['vmdesc_offset'] + 2] = 'in the vmdesc length'
        offs[size - 1] = 'last byte'
        # A page header and a page body in the first PART.
        part = [r for r in rec if r['type'] == 'part'][0]
        with open(stream, 'rb') as f:
            f.seek(part['offset'] + 5)
            data = f.read(64 * PAGE)
        p = 0
        while p + 8 <= len(data):
            hdr = struct.unpack_from('>Q', data, p)[0]
            flags = hdr & (PAGE - 1)
            q = p + 8 if flags & 0x20 else p + 9 + data[p + 8]
            if flags & 0x08:
                base = part['offset'] + 5
                offs[base + p + 4] = 'in a page header'
                offs[base + q + 100] = 'in a page'
                break
            if not flags & 0x02:
                break
            p = q + 1
        self.assertIn('in a page', offs.values())
        return {o: why for o, why in offs.items() if 0 < o < size}

    def test_truncated(self):
        stream = self.small_stream()
        offs = self.offsets_of_interest(stream)
        rnd = random.Random(7)
        size = os.path.getsize(stream)
        for _ in range(10):
            offs.setdefault(rnd.randrange(1, size), 'random')
        cut = self.path('cut.mig')
        for o, why in sorted(offs.items()):
            copy_prefix(stream, cut, o)
            what = 'truncated at 0x%x (%s)' % (o, why)
            rc, doc, err = analyze(cut, '--strict')
            self.assert_clean_error(rc, doc, err, what)
            self.assertRegex(err.splitlines()[-1], ERROR_RE, what)
            if doc is not None:
                self.assertFalse(doc['complete'], what)
            # Without --strict a clean cut between records may pass;
            # anything else must still fail cleanly.
            rc, doc, err = analyze(cut)
            self.assertNotIn('Traceback', err, what)
            self.assertIn(rc, (0, 1), what)
            if rc:
                self.assertRegex(err.splitlines()[-1], ANY_ERROR_RE, what)
            if why in ('in a page', 'in a page header'):
                rc, doc, err = analyze(cut, '--dump-memory',
                                       self.path('cut.dump'))
                self.assert_clean_error(rc, doc, err, what + ' (dumping)')

    def test_flipped(self):
        stream = self.small_stream()
        offs = self.offsets_of_interest(stream)
        size = os.path.getsize(stream)
        summ = self.summary_of(stream)
        # Flips that must be detected (with --strict): the header, every
        # record type byte (inverted: flipping one bit can turn a PART into
        # a valid END, or a START into EOF plus trailing bytes) and every
        # section id.
        must_fail = {0: ('magic', (0xff, 0x01)), 3: ('magic', (0xff, 0x01)),
                     7: ('version', (0xff, 0x01))}
        rec = self.run_ok(stream, '-d', 'records')['records']
        for r in rec:
            if r['type'] in ('eof', 'vmdesc', 'command'):
                continue
            must_fail[r['offset']] = ('%s record type' % r['type'], (0xff,))
            must_fail[r['offset'] + 4] = ('%s section id' % r['type'],
                                          (0xff, 0x01))
        must_fail[summ['eof_offset']] = ('EOF byte', (0xff, 0x01))
        rnd = random.Random(11)
        maybe = {o: (why, (0xff, 0x01)) for o, why in offs.items()}
        for _ in range(20):
            maybe.setdefault(rnd.randrange(size), ('random', (0xff, 0x01)))
        for _ in range(10):
            maybe.setdefault(rnd.randrange(summ['vmdesc_offset'], size),
                             ('in the vmdesc', (0xff, 0x01)))
        flip = self.path('flip.mig')
        shutil.copyfile(stream, flip)
        fd = os.open(flip, os.O_RDWR)
        try:
            for table, strict in ((must_fail, True), (maybe, False)):
                for o, (why, masks) in sorted(table.items()):
                    orig = os.pread(fd, 1, o)
                    for mask in masks:
                        os.pwrite(fd, bytes([orig[0] ^ mask]), o)
                        what = 'byte 0x%x (%s) ^ 0x%02x' % (o, why, mask)
                        rc, doc, err = analyze(flip, *(('--strict',)
                                                       if strict else ()))
                        self.assertNotIn('Traceback', err, what)
                        self.assertNotIn('internal error', err, what)
                        self.assertIn(rc, (0, 1), what)
                        if strict or rc:
                            self.assert_clean_error(rc, doc, err, what)
                    os.pwrite(fd, orig, o)
        finally:
            os.close(fd)


if __name__ == '__main__':
    unittest.main(verbosity=2)
