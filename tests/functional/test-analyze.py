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
traceback.  Small hand-built streams, which need no KVM, are in
test-analyze-built.py.

Environment:
  QTEST_QEMU_BINARY  binary to migrate with (default: build/qemu-system-x86_64)
  VMTEST_FIRMWARE    PVH guest (default: build/tests/guest/workload.elf)
  VMTEST_CPU         -cpu argument (default: host; QEMU 7.2 on kvm-pvm needs
                     host,-arch-capabilities)
  VMTEST_DEADLINE    seconds to wait for any one event (default: 120)

Run: tests/functional/test-analyze.py [-v] [TestClass.test_name ...]
"""

import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import (  # noqa: E402
    ANY_ERROR_RE, CPU, DEADLINE, ERROR_RE, FIRMWARE, MiB, PAGE, QEMU, analyze, copy_prefix)


# ---------------------------------------------------------------------------
# A QMP client and a VM, just enough for these tests.

class QMPError(Exception):
    def __init__(self, reply):
        err = reply.get('error', {})
        super().__init__('%s: %s' % (err.get('class'), err.get('desc')))
        self.cls = err.get('class')


class QMP:
    def __init__(self, path, proc):
        end = time.monotonic() + DEADLINE
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if proc.poll() is not None:
                    raise RuntimeError('the VM exited (status %d) before its '
                                       'QMP socket came up' % proc.returncode)
                if time.monotonic() > end:
                    raise RuntimeError('no QMP socket at %s after %ds'
                                       % (path, DEADLINE))
                time.sleep(0.05)
        self.sock.settimeout(DEADLINE)
        self.file = self.sock.makefile('rwb')
        self.events = []
        greeting = self._recv()
        if 'QMP' not in greeting:
            raise RuntimeError('bad QMP greeting %r' % greeting)
        self.cmd('qmp_capabilities')

    def _recv(self):
        while True:
            line = self.file.readline()
            if not line:
                raise RuntimeError('QMP connection closed')
            msg = json.loads(line)
            if 'event' in msg:
                self.events.append(msg)
                continue
            return msg

    def cmd(self, name, **args):
        msg = {'execute': name}
        if args:
            msg['arguments'] = args
        self.file.write(json.dumps(msg).encode() + b'\n')
        self.file.flush()
        reply = self._recv()
        if 'error' in reply:
            raise QMPError(reply)
        return reply.get('return')

    def close(self):
        try:
            self.file.close()
            self.sock.close()
        except OSError:
            pass


class VM:
    def __init__(self, tmpdir, name, machine='microvm', mem_mb=256,
                 append='mode=verify mem=64', binary=None, cpu=None):
        self.dir = tmpdir
        self.serial = os.path.join(tmpdir, name + '.serial')
        self._serial_read = 0
        self._serial_text = ''
        self.log = os.path.join(tmpdir, name + '.log')
        sock = os.path.join(tmpdir, name + '.qmp')
        args = [binary or QEMU, '-M', machine, '-enable-kvm', '-cpu', cpu or CPU,
                '-m', '%dM' % mem_mb, '-nodefaults', '-no-user-config',
                '-nographic', '-serial', 'file:' + self.serial,
                '-kernel', FIRMWARE, '-append', append,
                '-qmp', 'unix:%s,server=on,wait=off' % sock]
        self.logf = open(self.log, 'wb')
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=self.logf,
                                     stderr=subprocess.STDOUT)
        self.qmp = None
        try:
            self.qmp = QMP(sock, self.proc)
        except Exception:
            self.shutdown()
            raise RuntimeError('VM did not start: %s' % self.log_tail())

    def log_tail(self):
        try:
            with open(self.log, 'rb') as f:
                return f.read()[-2000:].decode('utf-8', 'replace')
        except OSError:
            return ''

    def serial_text(self):
        """All serial output so far (read incrementally: the workload
        prints a line per pass, so the file grows fast)."""
        try:
            with open(self.serial, 'rb') as f:
                f.seek(self._serial_read)
                data = f.read()
        except OSError:
            return self._serial_text
        self._serial_read += len(data)
        self._serial_text += data.decode('utf-8', 'replace')
        return self._serial_text

    def wait_serial(self, regex):
        """Wait until the serial output matches regex; return the match."""
        rx = re.compile(regex, re.M)
        end = time.monotonic() + DEADLINE
        pos = 0
        while True:
            text = self.serial_text()
            m = rx.search(text, pos)
            if m:
                return m
            pos = max(0, len(text) - 512)
            if self.proc.poll() is not None:
                raise AssertionError('VM exited (status %d) waiting for %r; '
                                     'serial: %s; log: %s'
                                     % (self.proc.returncode, regex,
                                        self.serial_text()[-500:],
                                        self.log_tail()))
            if time.monotonic() > end:
                raise AssertionError('no %r on the serial line after %ds: %s'
                                     % (regex, DEADLINE,
                                        self.serial_text()[-500:]))
            time.sleep(0.05)

    def ready(self):
        """Wait for READY; return (work area base, end)."""
        # Not anchored: under -M pc the BIOS's output precedes it. The
        # newline is required: the serial file may end in the middle of
        # the line (seen: "base=0x" parsed before the digits arrived).
        m = self.wait_serial(r'READY [^\n]*\n')
        kv = dict(w.split('=', 1) for w in m.group(0).split()[1:]
                  if '=' in w)
        base = int(kv['base'], 0)
        end = int(kv['end'], 0) if 'end' in kv else \
            base + int(kv['mem_mb']) * MiB
        return base, end

    def migrate(self, path, caps=(), params=None):
        """Migrate to path with exec:cat; return the final query-migrate."""
        if caps:
            self.qmp.cmd('migrate-set-capabilities',
                         capabilities=[{'capability': c, 'state': True}
                                       for c in caps])
        if params:
            self.qmp.cmd('migrate-set-parameters', **params)
        self.qmp.cmd('migrate', uri='exec:cat > ' + path)
        end = time.monotonic() + DEADLINE
        while True:
            info = self.qmp.cmd('query-migrate')
            status = info.get('status')
            if status == 'completed':
                return info
            if status in ('failed', 'cancelled'):
                raise AssertionError('migration %s: %s; log: %s'
                                     % (status, info, self.log_tail()))
            if time.monotonic() > end:
                raise AssertionError('migration not done after %ds: %s'
                                     % (DEADLINE, info))
            time.sleep(0.05)

    def pmemsave(self, path, size):
        """Save guest-physical [0, size) to path; False if unsupported."""
        try:
            self.qmp.cmd('pmemsave', val=0, size=size, filename=path)
        except QMPError as e:
            if e.cls == 'CommandNotFound':
                return False
            raise
        return True

    def shutdown(self):
        if self.qmp is not None:
            try:
                self.qmp.cmd('quit')
            except Exception:       # the VM may already be gone
                pass
            self.qmp.close()
            self.qmp = None
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()


# QEMU 7.2 from Debian: the source of streams with a machine we do not have.
PEER = os.environ.get('VMTEST_PEER', '/usr/bin/qemu-system-x86_64')
PEER_CPU = 'host,-arch-capabilities'


def supports_machine(machine, binary=None):
    try:
        p = subprocess.run([binary or QEMU, '-M', 'help'], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(line.split()[:1] == [machine]
               for line in p.stdout.decode('utf-8', 'replace').splitlines())


def kvm_skip_reason():
    if not os.path.exists('/dev/kvm'):
        return '/dev/kvm is missing'
    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        return '/dev/kvm is not accessible'
    if not os.access(QEMU, os.X_OK):
        return 'no binary at %s (set QTEST_QEMU_BINARY)' % QEMU
    if not os.path.exists(FIRMWARE):
        return 'no firmware at %s (build it: ninja -C build)' % FIRMWARE
    return None


# ---------------------------------------------------------------------------
# Real streams.

class RealStreams(unittest.TestCase):
    """Streams written by the binary under test."""

    tmpdir = None
    _fixtures = {}

    @classmethod
    def setUpClass(cls):
        reason = kvm_skip_reason()
        if reason:
            sys.stderr.write('\n*** SKIP test-analyze real streams: %s ***\n'
                             % reason)
            raise unittest.SkipTest(reason)
        cls.tmpdir = tempfile.mkdtemp(prefix='test-analyze-')
        cls._fixtures = {}

    @classmethod
    def tearDownClass(cls):
        if cls.tmpdir:
            shutil.rmtree(cls.tmpdir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmpdir, name)

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

    # -- checks ------------------------------------------------------------

    def run_ok(self, path, *args):
        rc, doc, err = analyze(path, *args)
        self.assertNotIn('Traceback', err)
        self.assertEqual(rc, 0, 'analyzer failed on %s: %s' % (path, err))
        self.assertIsNotNone(doc)
        return doc

    def check_complete(self, s, machine):
        self.assertEqual(s['header'], {'magic': '0x5145564d', 'version': 3})
        self.assertTrue(s['configuration']['machine'].startswith(
            'pc-' if machine == 'pc' else machine), s['configuration'])
        self.assertTrue(s['eof'])
        self.assertTrue(s['vmdesc'])
        self.assertTrue(s['complete'])
        self.assertEqual(s['errors'], [])
        self.assertEqual(s['trailing_bytes'], 0)
        self.assertTrue(s['ram'])
        self.assertEqual(s['ram']['pages_beyond_end'], 0)
        full = [x for x in s['sections'] if x['type'] == 'full']
        self.assertEqual(len(full), len(s['devices']))
        self.assertGreater(len(s['devices']), 0)
        # Every device the vmdesc describes was in the stream and decoded.
        self.assertNotIn('devices_not_in_stream', s)
        desc = self.run_ok(s['_path'], '-d', 'desc')
        self.assertEqual(sorted((d['name'], d['instance_id'])
                                for d in desc['devices']),
                         sorted((d['name'], d['instance_id'])
                                for d in s['devices']))
        state = self.run_ok(s['_path'], '-d', 'state')
        self.assertEqual(len(state['devices']), len(s['devices']))
        for name, st in state['devices'].items():
            self.assertIsInstance(st, dict, name)

    def check_each_page_once(self, ram):
        for b in ram['blocks']:
            sent = b['zero_pages'] + b['normal_pages'] + b['xbzrle_pages'] + \
                b['compressed_pages']
            self.assertEqual(sent, b['pages'], b)
            self.assertEqual(b['pages_covered'], b['pages'], b)
        self.assertEqual(ram['pages_covered'], ram['total_pages'])

    def check_counts_match(self, ram, info):
        """The analyzer's counts against the sender's query-migrate."""
        qram = info.get('ram', {})
        if 'normal' in qram:
            self.assertEqual(ram['normal_pages'], qram['normal'])
        if 'duplicate' in qram:
            self.assertEqual(ram['zero_pages'], qram['duplicate'])

    def main_block(self, ram, mem):
        blocks = [b for b in ram['blocks']
                  if b['name'] in ('microvm.ram', 'pc.ram')]
        if not blocks:
            blocks = [b for b in ram['blocks'] if b['length'] == mem]
        self.assertEqual(len(blocks), 1, ram['blocks'])
        return blocks[0]

    def dump_file(self, ddir, name):
        return os.path.join(ddir, name.replace('/', '_') + '.bin')

    def compare_with_pmem(self, ram, ddir, pmem, mem):
        """The dumped main block must equal pmemsave's image, except where
        a ROM is mapped over RAM below 1 MiB (the BIOS window): there the
        image must show the end of a dumped ROM block instead."""
        main = self.main_block(ram, mem)
        path = self.dump_file(ddir, main['name'])
        self.assertEqual(os.path.getsize(path), main['length'])
        roms = []
        for b in ram['blocks']:
            if b is main:
                continue
            with open(self.dump_file(ddir, b['name']), 'rb') as f:
                data = f.read()
            win = min(len(data), 128 << 10)
            roms.append((0x100000 - win, data[len(data) - win:]))
        bad = []
        with open(path, 'rb') as a, open(pmem, 'rb') as b:
            pos = 0
            while pos < min(mem, main['length']):
                x = a.read(MiB)
                y = b.read(MiB)
                if not x or not y:
                    break
                if x != y:
                    for o in range(0, min(len(x), len(y)), PAGE):
                        if x[o:o + PAGE] == y[o:o + PAGE]:
                            continue
                        addr = pos + o
                        ok = any(lo <= addr < 0x100000 and
                                 rom[addr - lo:addr - lo + PAGE] ==
                                 y[o:o + PAGE] for lo, rom in roms)
                        if not ok:
                            bad.append(addr)
                pos += len(x)
        self.assertEqual(bad[:16], [], '%d pages differ from pmemsave'
                         % len(bad))

    def check_verify_pattern(self, ram, ddir, base, end, mem):
        """Each page of the verify workload's area holds the pass that
        wrote it (at +0) and its own address (at +8); a point-in-time image
        has at most two consecutive pass numbers."""
        main = self.main_block(ram, mem)
        path = self.dump_file(ddir, main['name'])
        passes = {}
        wrong = []
        with open(path, 'rb') as f:
            f.seek(base)
            addr = base
            while addr < end:
                chunk = f.read(min(MiB, end - addr))
                self.assertTrue(chunk)
                for o in range(0, len(chunk), PAGE):
                    n, a = struct.unpack_from('<QQ', chunk, o)
                    if a != addr + o:
                        wrong.append(addr + o)
                    passes[n] = passes.get(n, 0) + 1
                addr += len(chunk)
        self.assertEqual(wrong[:8], [], '%d pages hold a wrong address'
                         % len(wrong))
        self.assertTrue(1 <= len(passes) <= 2, passes)
        self.assertGreaterEqual(min(passes), 1)
        self.assertLessEqual(max(passes) - min(passes), 1, passes)

    def summary_of(self, path, *args):
        s = self.run_ok(path, *args)
        s['_path'] = path
        return s

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

    def assert_clean_error(self, rc, doc, err, what):
        self.assertNotIn('Traceback', err, what)
        self.assertNotIn('internal error', err, what)
        self.assertEqual(rc, 1, '%s: expected failure, got %d: %s'
                         % (what, rc, err))
        lines = [x for x in err.splitlines() if ' error: ' in x]
        self.assertTrue(lines, what)
        self.assertRegex(lines[-1], ANY_ERROR_RE, what)

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
