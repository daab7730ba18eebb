#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-analyze-built.py: scripts/analyze-migration.py against small streams
built by hand (no KVM): header and framing errors, RAM records, device
sections through a vmdesc, and the error each malformed piece gets.

Run: tests/functional/test-analyze-built.py [-v] [HandBuiltStreams.test_name ...]
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import ANALYZE, PAGE, analyze  # noqa: E402


# ---------------------------------------------------------------------------
# Hand-built streams (no KVM needed).

def cstr(s):
    b = s.encode()
    return bytes([len(b)]) + b


class StreamBuilder:
    """Writes QEVM framing; the content is whatever a test wants."""

    def __init__(self, version=3, machine='microvm'):
        self.b = bytearray(struct.pack('>II', 0x5145564d, version))
        if machine is not None:
            m = machine.encode()
            self.b += bytes([0x07]) + struct.pack('>I', len(m)) + m

    def section(self, rtype, sid, payload, idstr=None, instance=0,
                version=4, footer=True):
        self.b.append(rtype)
        self.b += struct.pack('>I', sid)
        if rtype in (1, 4):
            self.b += cstr(idstr) + struct.pack('>II', instance, version)
        self.b += payload
        if footer:
            self.b += bytes([0x7e]) + struct.pack('>I', sid)

    def eof(self, vmdesc=None):
        self.b.append(0)
        if vmdesc is not None:
            js = json.dumps(vmdesc).encode()
            self.b += bytes([0x06]) + struct.pack('>I', len(js)) + js

    def write(self, path):
        with open(path, 'wb') as f:
            f.write(self.b)


def ram_hdr(addr, flags):
    return struct.pack('>Q', addr | flags)


def mem_size(blocks):
    out = ram_hdr(sum(n for _, n in blocks), 0x04)
    for name, n in blocks:
        out += cstr(name) + struct.pack('>Q', n)
    return out + ram_hdr(0, 0x10)


EOS = ram_hdr(0, 0x10)

VMDESC = {'page_size': 4096, 'devices': [{
    'name': 'dev', 'instance_id': 0, 'vmsd_name': 'dev', 'version': 1,
    'fields': [
        {'name': 'a', 'type': 'uint16', 'size': 2},
        {'name': 'r', 'type': 'int32', 'size': 4, 'array_len': 2},
        {'name': 'flag', 'type': 'bool', 'size': 1},
        {'name': 's', 'type': 'struct', 'size': 9, 'struct': {
            'vmsd_name': 'inner', 'version': 1,
            'fields': [{'name': 'x', 'type': 'uint64', 'size': 8},
                       {'name': 'b', 'type': 'buffer', 'size': 1}]}},
        {'name': 'e', 'type': 'uint8', 'size': 1, 'index': 0},
        {'name': 'e', 'type': 'uint8', 'size': 1, 'index': 1}],
    'subsections': [{'vmsd_name': 'dev/sub', 'version': 2, 'fields': [
        {'name': 'z', 'type': 'int64', 'size': 8}]}]}]}

DEV_PAYLOAD = (struct.pack('>H', 0xbeef) + struct.pack('>ii', -1, 7) +
               b'\x01' + struct.pack('>Q', 5) + b'\xab' + b'\x03\x04' +
               b'\x05' + cstr('dev/sub') + struct.pack('>I', 2) +
               struct.pack('>q', -2))


class HandBuiltStreams(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='test-analyze-hb-')

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, sb, name='s.mig'):
        path = os.path.join(self.dir, name)
        sb.write(path)
        return path

    def fails_with(self, path, pattern, *args):
        rc, doc, err = analyze(path, *args)
        self.assertNotIn('Traceback', err)
        self.assertEqual(rc, 1, err)
        self.assertRegex(err, pattern)
        return doc

    def ram_stream(self, pages, blocks=(('b', 4 * PAGE),), end=True):
        sb = StreamBuilder()
        sb.section(1, 2, mem_size(list(blocks)), 'ram', 0, 4)
        sb.section(2, 2, pages + EOS)
        if end:
            sb.section(3, 2, EOS)
        sb.section(4, 3, DEV_PAYLOAD, 'dev', 0, 1)
        sb.eof(VMDESC)
        return sb

    def test_header_errors(self):
        self.fails_with(self.write(StreamBuilder(version=2)), 'obsolete')
        self.fails_with(self.write(StreamBuilder(version=4)),
                        'unsupported stream version 4')
        path = os.path.join(self.dir, 'bad.mig')
        with open(path, 'wb') as f:
            f.write(b'QEVX\0\0\0\3\0')
        self.fails_with(path, r'bad magic .* at offset 0x0$')
        with open(path, 'wb') as f:
            f.write(b'QEV')
        self.fails_with(path, r'truncated')
        open(path, 'wb').close()
        self.fails_with(path, r'truncated')

    def test_minimal(self):
        sb = StreamBuilder(machine='pc-i440fx-7.2')
        sb.eof()
        rc, doc, err = analyze(self.write(sb), '--strict')
        self.assertEqual(rc, 0, err)
        self.assertEqual(doc['configuration']['machine'], 'pc-i440fx-7.2')
        self.assertTrue(doc['eof'])
        self.assertFalse(doc['vmdesc'])
        self.assertIsNone(doc['ram'])
        # No EOF: fine unless --strict.
        sb = StreamBuilder()
        path = self.write(sb)
        rc, doc, err = analyze(path)
        self.assertEqual(rc, 0, err)
        self.assertFalse(doc['eof'])
        self.fails_with(path, 'without EOF', '--strict')
        # Trailing garbage: reported, fatal with --strict.
        sb = StreamBuilder()
        sb.eof()
        sb.b += b'junk'
        path = self.write(sb)
        rc, doc, err = analyze(path)
        self.assertEqual((rc, doc['trailing_bytes']), (0, 4), err)
        self.fails_with(path, 'trailing', '--strict')

    def test_ram_and_device(self):
        page = bytes(range(256)) * 16
        pages = (ram_hdr(0, 0x08) + cstr('b') + page +          # page 0
                 ram_hdr(PAGE, 0x08 | 0x20) + page[::-1] +      # page 1
                 ram_hdr(2 * PAGE, 0x02 | 0x20) + b'\0' +       # page 2
                 ram_hdr(PAGE, 0x02 | 0x20) + b'\0' +           # 1 -> zero
                 ram_hdr(0, 0x08 | 0x20) + page)                # 0 again
        # XBZRLE on page 0: bytes 10..12 become 1,2,3.
        pages += ram_hdr(0, 0x40 | 0x20) + b'\x01' + \
            struct.pack('>H', 5) + b'\x0a\x03\x01\x02\x03'
        path = self.write(self.ram_stream(pages))
        ddir = os.path.join(self.dir, 'dump')
        rc, doc, err = analyze(path, '--strict', '--dump-memory', ddir)
        self.assertEqual(rc, 0, err)
        blk = doc['ram']['blocks'][0]
        self.assertEqual((blk['name'], blk['length']), ('b', 4 * PAGE))
        self.assertEqual((blk['normal_pages'], blk['zero_pages'],
                          blk['xbzrle_pages'], blk['pages_covered']),
                         (3, 2, 1, 3))
        with open(os.path.join(ddir, 'b.bin'), 'rb') as f:
            mem = f.read()
        want0 = bytearray(page)
        want0[10:13] = b'\x01\x02\x03'
        self.assertEqual(mem, bytes(want0) + bytes(3 * PAGE))
        self.assertEqual(doc['devices'][0]['name'], 'dev')
        rc, st, err = analyze(path, '-d', 'state')
        self.assertEqual(rc, 0, err)
        self.assertEqual(st['devices']['dev (0)'], {
            'a': 0xbeef, 'r': [-1, 7], 'flag': True,
            's': {'x': 5, 'b': 'ab'}, 'e': [3, 4], 'dev/sub': {'z': -2}})

        # QEMU's spellings: state by default, -m adds the final non-zero
        # pages, -x writes state.json and desc.json where it runs.
        p = subprocess.run([sys.executable, ANALYZE, '-f', path, '--strict', '-m'],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        dflt = json.loads(p.stdout)
        self.assertEqual(dflt['devices'], st['devices'])
        self.assertEqual(dflt['ram'], {'b': {'size': 4 * PAGE,
                                             'pages': {'0x0': want0.hex()}}})
        xdir = os.path.join(self.dir, 'x')
        os.mkdir(xdir)
        p = subprocess.run([sys.executable, ANALYZE, '-f', path, '-x'], cwd=xdir,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, '')
        with open(os.path.join(xdir, 'state.json')) as f:
            self.assertEqual(json.load(f)['devices'], st['devices'])
        with open(os.path.join(xdir, 'desc.json')) as f:
            self.assertEqual(json.load(f), VMDESC)

    def test_configuration_in_vmdesc(self):
        """Newer QEMU describes the configuration section in the vmdesc
        (a "configuration" entry); then it is decoded through it."""
        desc = json.loads(json.dumps(VMDESC))
        desc['configuration'] = {
            'vmsd_name': 'configuration', 'version': 1, 'fields': [
                {'name': 'len', 'type': 'uint32', 'size': 4},
                {'name': 'name', 'type': 'buffer', 'size': 7}],
            'subsections': [{
                'vmsd_name': 'configuration/capabilities', 'version': 1,
                'fields': [
                    {'name': 'caps_count', 'type': 'uint32', 'size': 4},
                    {'name': 'capabilities', 'type': 'capability',
                     'size': 16, 'array_len': 1}]}]}
        sb = StreamBuilder(machine=None)
        sb.b += b'\x07' + struct.pack('>I', 7) + b'microvm' + b'\x05' + \
            cstr('configuration/capabilities') + struct.pack('>II', 1, 1) + \
            cstr('x-ignore-shared')
        # With x-ignore-shared each listed block carries its address.
        sb.section(1, 2, ram_hdr(PAGE, 0x04) + cstr('b') +
                   struct.pack('>QQ', PAGE, 0x100000) + EOS, 'ram', 0, 4)
        sb.section(4, 3, DEV_PAYLOAD, 'dev', 0, 1)
        sb.eof(desc)
        rc, doc, err = analyze(self.write(sb), '--strict')
        self.assertEqual(rc, 0, err)
        self.assertEqual(doc['configuration']['machine'], 'microvm')
        self.assertEqual(doc['configuration']['capabilities'],
                         ['x-ignore-shared'])
        self.assertEqual(doc['ram']['blocks'][0]['addr'], 0x100000)
        # Without the description, the built-in layout is used.
        sb = StreamBuilder()
        sb.b += b'\x05' + cstr('configuration/capabilities') + \
            struct.pack('>II', 1, 1) + cstr('x-ignore-shared')
        sb.eof()
        rc, doc, err = analyze(self.write(sb, 't.mig'), '--strict')
        self.assertEqual(rc, 0, err)
        self.assertEqual(doc['configuration']['capabilities'],
                         ['x-ignore-shared'])

    def test_ram_errors(self):
        # A page beyond its block is counted, and the stream read on.
        beyond = ram_hdr(4 * PAGE, 0x02) + cstr('b') + b'\0'
        doc = self.fails_with(self.write(self.ram_stream(beyond)),
                              r'beyond the end of block "b" .* at offset '
                              r'0x[0-9a-f]+$')
        self.assertEqual(doc['ram']['pages_beyond_end'], 1)
        self.assertTrue(doc['eof'])
        self.fails_with(self.write(self.ram_stream(ram_hdr(0, 0x400))),
                        r'unknown RAM flags 0x400')
        self.fails_with(self.write(self.ram_stream(ram_hdr(0, 0x0a))),
                        r'invalid RAM flag combination')
        self.fails_with(self.write(self.ram_stream(
            ram_hdr(0, 0x22) + b'\0')), r'CONTINUE but no previous block')
        self.fails_with(self.write(self.ram_stream(
            ram_hdr(0, 0x02) + cstr('nope') + b'\0')), r'unknown block')

    def test_framing_errors(self):
        sb = self.ram_stream(b'')
        # The last byte of the device's footer: before EOF, 0x06, length.
        sb.b[-len(json.dumps(VMDESC)) - 7] ^= 0xff
        self.fails_with(self.write(sb), r'section footer names section')
        sb = StreamBuilder()
        sb.section(2, 9, EOS)
        self.fails_with(self.write(sb), r'unknown section id 9')
        sb = StreamBuilder()
        sb.b.append(0x33)
        self.fails_with(self.write(sb), r'unknown record type 0x33')
        # Device state without a vmdesc cannot be decoded.
        sb = StreamBuilder()
        sb.section(4, 3, DEV_PAYLOAD, 'dev', 0, 1)
        sb.eof()
        self.fails_with(self.write(sb), r'without the vmdesc')
        # A vmdesc that disagrees with the payload size.
        bad = json.loads(json.dumps(VMDESC))
        bad['devices'][0]['fields'][3]['size'] = 10
        sb = StreamBuilder()
        sb.section(4, 3, DEV_PAYLOAD, 'dev', 0, 1)
        sb.eof(bad)
        self.fails_with(self.write(sb), r'field "dev\.s": the vmdesc says 10 '
                        r'bytes but 9 were decoded')
        # A background-snapshot-like stream: no RAM END.
        page = b'\x11' * PAGE
        path = self.write(self.ram_stream(ram_hdr(0, 0x08) + cstr('b') +
                                          page, end=False))
        rc, doc, err = analyze(path, '--strict')
        self.assertEqual(rc, 0, err)
        ram = [s for s in doc['sections'] if s['idstr'] == 'ram'][0]
        self.assertEqual((ram['start'], ram['part'], ram['end']), (1, 1, 0))


if __name__ == '__main__':
    unittest.main(verbosity=2)
