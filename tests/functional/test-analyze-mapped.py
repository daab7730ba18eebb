#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-analyze-mapped.py: scripts/analyze-migration.py against real
mapped-ram files.

Boots the workload firmware in a QEMU-compatible binary and saves it to a
"file:" URI with the mapped-ram capability (precopy and background
snapshot, at the start of the file or at an offset), then checks that the
analyzer decodes the whole file (block headers, bitmaps and completion
trailer against the file itself, page counts), that --dump-memory
reproduces guest RAM (against pmemsave, and against the workload's own
page pattern), and that corrupted or truncated files are refused with a
one-line error, never a traceback.  Skipped if the binary has no
mapped-ram.  Other real streams are checked in test-analyze.py.

Environment:
  QTEST_QEMU_BINARY  binary to migrate with (default: build/qemu-system-x86_64)
  VMTEST_FIRMWARE    PVH guest (default: build/tests/guest/workload.elf)
  VMTEST_CPU         -cpu argument (default: host)
  VMTEST_DEADLINE    seconds to wait for any one event (default: 120)

Run: tests/functional/test-analyze-mapped.py [-v] [TestClass.test_name ...]
"""

import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import (  # noqa: E402
    ERROR_RE, MiB, PAGE, QEMU, analyze, copy_prefix)
from analyzevm import QMPError, VM, StreamCase  # noqa: E402


class MappedRamStreams(StreamCase):
    """Mapped-ram files written by the binary under test."""

    skip_what = 'test-analyze-mapped'
    tmp_prefix = 'test-analyze-mapped-'

    # -- shared streams (made once, used by several tests) ------------------

    @classmethod
    def mapped_ram_stream(cls, key, background=False, offset=0, integrity=False):
        """A mapped-ram snapshot (file: URI) of a 64 MiB guest running the
        verify workload, at offset in the file; for precopy also the paused
        source's pmemsave.  None if the binary has no mapped-ram."""
        if key in cls._fixtures:
            return cls._fixtures[key]
        d = cls.tmpdir
        mem = 64 * MiB
        stream = os.path.join(d, key + '.snap')
        pmem = None
        vm = VM(d, key, 'microvm', 64, 'mode=verify mem=32')
        try:
            base, end = vm.ready()
            vm.wait_serial(r'^PASS ')
            caps = ['mapped-ram'] + (['background-snapshot']
                                     if background else [])
            try:
                vm.qmp.cmd('migrate-set-capabilities', capabilities=[
                    {'capability': c, 'state': True} for c in caps])
            except QMPError as e:
                sys.stderr.write('\n*** SKIP mapped-ram (%s): %s ***\n'
                                 % ('+'.join(caps), e))
                cls._fixtures[key] = None
                return None
            if offset:
                with open(stream, 'wb') as f:     # what lies before it
                    f.write(b'not a stream' * (offset // 12 + 1))
            uri = 'file:' + stream + (',offset=%d' % offset if offset else '')
            params = {'max-bandwidth': 1 << 40}
            if integrity:
                params['x-mapped-ram-integrity'] = True
            info = vm.migrate(stream, params=params, uri=uri)
            if not background:
                status = vm.qmp.cmd('query-status').get('status')
                if status != 'postmigrate':
                    raise AssertionError('source is %s after a precopy '
                                         'snapshot' % status)
                pmem = os.path.join(d, key + '.pmem')
                if not vm.pmemsave(pmem, mem):
                    pmem = None
        finally:
            vm.shutdown()
        fx = {'stream': stream, 'pmem': pmem, 'base': base, 'end': end,
              'info': info, 'mem': mem, 'offset': offset, 'integrity': integrity}
        cls._fixtures[key] = fx
        return fx

    # -- checks ------------------------------------------------------------

    def mapped_ram_fixture(self, key, background=False, offset=0, integrity=False):
        fx = self.mapped_ram_stream(key, background, offset, integrity)
        if fx is None:
            self.skipTest('%s has no mapped-ram capability' % QEMU)
        return fx

    def check_mapped_ram(self, s, fx):
        """The mapped-ram parts of a summary, against the file itself."""
        stream = fx['stream']
        size = os.path.getsize(stream)
        self.assertIn('mapped-ram', s['configuration']['capabilities'])
        mr = s['mapped_ram']
        self.assertTrue(mr['complete'], mr)
        self.assertEqual(mr['stream_start'], fx['offset'])
        self.assertEqual(mr['trailer_offset'], size - 24)
        with open(stream, 'rb') as f:
            f.seek(size - 24)
            self.assertEqual(f.read(), b'%s%016x' % (b'MRAMDONR' if fx['integrity'] else
                                                     b'MRAMDONE', fx['offset']))
        ram = s['ram']
        self.check_each_page_once(ram)
        main = self.main_block(ram, fx['mem'])
        blocks = {b['name']: b for b in mr['blocks']}
        self.assertEqual(sorted(blocks), sorted(b['name']
                                                for b in ram['blocks']))
        for b in ram['blocks']:
            m = blocks[b['name']]
            self.assertEqual(m['pages'], b['pages'])
            self.assertEqual(m['pages_present'], b['normal_pages'])
            self.assertEqual(m['pages_zero'], b['zero_pages'])
            self.assertEqual(m['pages_present'] + m['pages_zero'], m['pages'])
            # The header and the bitmap, read here on their own.
            with open(stream, 'rb') as f:
                f.seek(m['header_offset'])
                hdr = struct.unpack('>IQQQ', f.read(28))
                self.assertEqual(hdr, (1, PAGE, m['bitmap_offset'],
                                       m['pages_offset']))
                self.assertGreaterEqual(m['bitmap_offset'],
                                        m['header_offset'] + 28)
                self.assertEqual(m['pages_offset'] % MiB, 0)
                self.assertEqual(m['bitmap_bytes'],
                                 (m['pages'] + 63) // 64 * 8)
                f.seek(m['bitmap_offset'])
                bits = int.from_bytes(f.read(m['bitmap_bytes']), 'little')
            self.assertEqual(bin(bits).count('1'), m['pages_present'])
        # The workload wrote every page of its area.
        self.assertGreaterEqual(main['normal_pages'],
                                (fx['end'] - fx['base']) // PAGE)
        self.assertEqual(mr['pages_present'], ram['normal_pages'])
        # No page records: every RAM chunk after the first is a bare EOS.
        rec = self.run_ok(stream, '-d', 'records')
        self.assertTrue(rec['complete'])
        ram_id = [x for x in s['sections'] if x['idstr'] == 'ram'][0]['id']
        later = [r for r in rec['records'] if r.get('id') == ram_id and
                 r['type'] in ('part', 'end')]
        self.assertTrue(later)
        self.assertEqual({r['bytes'] for r in later}, {8})
        self.assertEqual(rec['records'][-1]['type'], 'vmdesc')
        self.run_ok(stream, '--strict')

    def test_mapped_ram(self):
        fx = self.mapped_ram_fixture('mr')
        ddir = self.path('mr.dump')
        s = self.summary_of(fx['stream'], '--dump-memory', ddir)
        self.check_complete(s, 'microvm')
        self.check_mapped_ram(s, fx)
        ram = s['ram']
        self.assertEqual(self.main_block(ram, fx['mem'])['length'], fx['mem'])
        if fx['pmem']:
            self.compare_with_pmem(ram, ddir, fx['pmem'], fx['mem'])
        else:
            sys.stderr.write('\n*** %s has no pmemsave: mapped-ram dump '
                             'compared with the workload pattern only ***\n'
                             % QEMU)
        self.check_verify_pattern(ram, ddir, fx['base'], fx['end'],
                                  fx['mem'])
        s2 = self.summary_of(fx['stream'])
        self.assertEqual(s2['ram'], ram)
        self.assertEqual(s2['mapped_ram'], s['mapped_ram'])

    def test_mapped_ram_integrity(self):
        """A file with the integrity record (x-mapped-ram-integrity) reads as
        one without it, the record described and no trailing bytes."""
        fx = self.mapped_ram_fixture('mrint', integrity=True)
        s = self.summary_of(fx['stream'])
        self.check_complete(s, 'microvm')
        self.check_mapped_ram(s, fx)
        self.assertEqual(s['warnings'], [])
        integ = s['mapped_ram']['integrity']
        size = os.path.getsize(fx['stream'])
        with open(fx['stream'], 'rb') as f:
            f.seek(size - 48)
            footer = f.read(24)
        self.assertEqual(footer[:8], b'MRAMINTG')
        self.assertEqual(integ['offset'], size - 48 - int(footer[8:], 16))
        # One per 64 KiB of RAM, and one for each of QEMU's four ROM blocks (each <= 64 KiB).
        self.assertEqual(integ['regions'], fx['mem'] // (64 * 1024) + 4)
        self.assertIsNone(self.summary_of(
            self.mapped_ram_fixture('mr')['stream'])['mapped_ram']['integrity'])

    def test_mapped_ram_background(self):
        fx = self.mapped_ram_fixture('mrbg', background=True)
        ddir = self.path('mrbg.dump')
        s = self.summary_of(fx['stream'], '--dump-memory', ddir)
        self.check_complete(s, 'microvm')
        self.check_mapped_ram(s, fx)
        # A background snapshot saves each page once: the bitmap agrees
        # with the sender's counts.
        self.check_counts_match(s['ram'], fx['info'])
        sec = [x for x in s['sections'] if x['idstr'] == 'ram'][0]
        self.assertEqual(sec['start'], 1)
        self.check_verify_pattern(s['ram'], ddir, fx['base'], fx['end'],
                                  fx['mem'])

    def test_mapped_ram_offset(self):
        """file:PATH,offset=N: the stream starts at N, as the trailer says;
        the block offsets stay absolute."""
        fx = self.mapped_ram_fixture('mroff', offset=MiB)
        ddir = self.path('mroff.dump')
        s = self.summary_of(fx['stream'], '--dump-memory', ddir)
        self.assertEqual(s['header'], {'magic': '0x5145564d', 'version': 3,
                                       'offset': MiB})
        self.assertGreater(s['configuration']['offset'], MiB)
        self.check_mapped_ram(s, fx)
        self.assertEqual(s['errors'], [])
        self.assertGreater(s['mapped_ram']['blocks'][0]['pages_offset'],
                           MiB)
        desc = self.run_ok(fx['stream'], '-d', 'desc')
        self.assertIn('devices', desc)
        if fx['pmem']:
            self.compare_with_pmem(s['ram'], ddir, fx['pmem'], fx['mem'])
        self.check_verify_pattern(s['ram'], ddir, fx['base'], fx['end'],
                                  fx['mem'])

    def test_mapped_ram_corrupt(self):
        fx = self.mapped_ram_fixture('mr')
        stream = fx['stream']
        size = os.path.getsize(stream)
        m = self.summary_of(stream)['mapped_ram']['blocks'][0]
        hoff = m['header_offset']
        past = (size + MiB - 1) // MiB * MiB
        no_marker = 'incomplete mapped-ram file: no completion marker'
        cases = [
            # (what, truncate to, [(offset, bytes)], message, error offset)
            ('trailer removed', size - 24, [], no_marker, size - 24),
            ('trailer garbled', None, [(size - 3, b'xyz')], no_marker,
             size - 24),
            ('trailer magic garbled', None, [(size - 24, b'MRAMD0NE')],
             no_marker, size),
            ('trailer names another stream', None,
             [(size - 16, b'%016x' % 4096)], 'names a stream at 0x1000',
             size - 24),
            ('header version 2', None, [(hoff, struct.pack('>I', 2))],
             'unsupported header version 2', hoff),
            ('header version 0', None, [(hoff, struct.pack('>I', 0))],
             'unsupported header version 0', hoff),
            ('page size 8192', None, [(hoff + 4, struct.pack('>Q', 8192))],
             'has pages of 8192 bytes, not 4096', hoff + 4),
            ('bitmap inside the header', None,
             [(hoff + 12, struct.pack('>Q', hoff + 20))],
             'starts before the end of its header', hoff + 12),
            ('bitmap over the pages', None,
             [(hoff + 12, struct.pack('>Q', m['pages_offset'] - 8))],
             'is not before its pages', hoff + 12),
            ('pages_offset past the end', None,
             [(hoff + 20, struct.pack('>Q', past))],
             'go past the end of the file', hoff + 20),
            ('pages_offset 2^63', None,
             [(hoff + 20, struct.pack('>Q', 1 << 63))],
             'go past the end of the file', hoff + 20),
            ('pages_offset unaligned', None,
             [(hoff + 20, struct.pack('>Q', m['pages_offset'] + 100))],
             'not aligned to the 4096-byte page size', hoff + 20),
            ('cut in the pages', m['pages_offset'] + fx['mem'] // 2, [],
             'go past the end of the file', hoff + 20),
            ('cut after the pages', m['pages_offset'] + fx['mem'] + 3, [],
             'stream truncated', None),
        ]
        bad = self.path('mr-bad.snap')
        for what, cut, patches, msg, at in cases:
            copy_prefix(stream, bad, size if cut is None else cut)
            fd = os.open(bad, os.O_RDWR)
            try:
                for o, data in patches:
                    os.pwrite(fd, data, o)
            finally:
                os.close(fd)
            for args in ((), ('--dump-memory', self.path('mr-bad.dump'))):
                rc, doc, err = analyze(bad, *args)
                self.assert_clean_error(rc, doc, err, what)
                lines = [x for x in err.splitlines() if ' error: ' in x]
                for line in lines:
                    self.assertRegex(line, ERROR_RE, what)
                hit = [x for x in lines if msg in x]
                self.assertTrue(hit, '%s: no %r in %s' % (what, msg, err))
                if at is not None:
                    self.assertTrue(hit[0].endswith(' at offset 0x%x' % at),
                                    '%s: %s' % (what, hit[0]))
                self.assertIsNotNone(doc, what)
                self.assertFalse(doc['complete'], what)
                # The trailer verdict stands apart from the stream's.
                trailer_bad = cut is not None or patches[0][0] >= size - 24
                self.assertEqual(doc['mapped_ram']['complete'],
                                 not trailer_bad, what)
                if cut is not None:
                    # A cut file has lost its trailer too: both reported.
                    self.assertTrue(any(no_marker in x for x in lines),
                                    '%s: %s' % (what, err))
        os.unlink(bad)


if __name__ == '__main__':
    unittest.main(verbosity=2)
