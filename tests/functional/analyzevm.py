# SPDX-License-Identifier: GPL-2.0-or-later
"""What test-analyze.py and test-analyze-mapped.py share: a QMP connection
(scripts/qmp.py's client) and a VM running the workload firmware, the
checks for skipping without KVM, and StreamCase, the base of their test
classes (a scratch directory per class, a cache of streams made once, and
the checks of an analyzer summary against the guest)."""

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from analyzetest import (
    ANY_ERROR_RE, CPU, DEADLINE, FIRMWARE, MiB, PAGE, QEMU, SRC_DIR, analyze)

sys.path.insert(0, os.path.join(SRC_DIR, 'scripts'))
import qmp  # noqa: E402
from qmp import MonitorGone, QMPError  # noqa: E402,F401  (re-exported to the tests)


# ---------------------------------------------------------------------------
# A QMP connection (scripts/qmp.py's client) and a VM, just enough for these
# tests.

class QMP(qmp.QMP):
    """A test's connection to the VM @proc started: connecting, the greeting
    and every reply bounded by DEADLINE, and no waiting on a VM that died."""

    def __init__(self, path, proc):
        try:
            super().__init__(path, DEADLINE, reply_timeout=DEADLINE, proc=proc)
        except MonitorGone as e:
            # The test names the socket: a test holds several.
            raise MonitorGone('QMP at %s: %s' % (path, e)) from e


END_STATUSES = ('completed', 'failed', 'cancelled')


class ProgressCheck:
    """Issue 41: x-progress.percent never decreases within one migration,
    as libvmtest.c's vm_check_progress checks for the C tests. Fed every
    query-migrate a helper polls (VM.query_migrate); a peer without
    x-progress passes unchecked. Owned by the VM, used by the test's
    thread only."""

    def __init__(self, where):
        self.where = where
        self.last = None        # (percent, total-time, status) last polled

    def new_migration(self, total, status):
        """Whether this poll is of another migration than the last one: its
        total-time went down, or the last one had ended (an ended
        migration's total-time stays put) and this one has not or is
        another."""
        _, last_total, last_status = self.last
        return total < last_total or (last_status in END_STATUSES and
                                      (status not in END_STATUSES or
                                       total != last_total))

    def check(self, info):
        pct = info.get('x-progress', {}).get('percent')
        total = info.get('total-time')
        status = info.get('status')
        if pct is None or total is None:
            return
        if self.last is not None and self.new_migration(total, status):
            self.last = None
        if not 0 <= pct <= 100 or (self.last and pct < self.last[0]):
            was = ('nothing' if self.last is None else '%.3f%% (%s at %d ms)'
                   % (self.last[0], self.last[2], self.last[1]))
            what = ('went back within one migration' if 0 <= pct <= 100
                    else 'is outside 0..100')
            raise AssertionError(
                'x-progress.percent %s at %s: from %s to %.3f%% (%s at %d ms); '
                'x-progress %s' % (what, self.where, was, pct, status, total,
                                   info['x-progress']))
        self.last = (pct, total, status)


class VM:
    def __init__(self, tmpdir, name, machine='microvm', mem_mb=256,
                 append='mode=verify mem=64', binary=None, cpu=None, extra=(), connect=True):
        self.dir = tmpdir
        self.serial = os.path.join(tmpdir, name + '.serial')
        self._serial_read = 0
        self._serial_text = ''
        self.log = os.path.join(tmpdir, name + '.log')
        sock = os.path.join(tmpdir, name + '.qmp')
        # A peer (QEMU) without a CPU given gets PEER_CPU: QEMU's plain
        # "host" sets ARCH_CAPABILITIES, which KVM refuses on some hosts
        # (this AMD one: "failed to set MSR 0x10a", an abort).
        if cpu is None and binary and os.path.realpath(binary) != os.path.realpath(QEMU):
            cpu = PEER_CPU
        args = [binary or QEMU, '-M', machine, '-enable-kvm', '-cpu', cpu or CPU,
                '-m', '%dM' % mem_mb, '-nodefaults', '-no-user-config',
                '-nographic', '-serial', 'file:' + self.serial,
                '-kernel', FIRMWARE, '-append', append,
                '-qmp', 'unix:%s,server=on,wait=off' % sock] + list(extra)
        self.args = args
        self.logf = open(self.log, 'wb')
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=self.logf,
                                     stderr=subprocess.STDOUT)
        self.qmp = None
        self.qmp_path = sock
        self.progress = ProgressCheck(name)
        # A live update's new process serves QMP only once the old one handed it the memory.
        if connect:
            self.connect_qmp()

    def connect_qmp(self):
        try:
            self.qmp = QMP(self.qmp_path, self.proc)
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

    def query_migrate(self):
        """query-migrate, its x-progress checked against the last one's:
        every helper that polls a migration to its end polls through this."""
        info = self.qmp.cmd('query-migrate')
        self.progress.check(info)
        return info

    def wait_children_exited(self, end):
        """Until every child of the VM (exec:'s shell and cat) has exited: a
        migration completes once its last byte is in the pipe, before cat
        has written it to the file (test-virtio-blk-held read a file that
        lacked its device sections under make check's load)."""
        me = str(self.proc.pid)
        while True:
            live = []
            for pid in os.listdir('/proc'):
                if not pid.isdigit():
                    continue
                try:
                    with open('/proc/%s/stat' % pid) as f:
                        st = f.read()
                except OSError:
                    continue
                fields = st[st.rindex(')') + 2:].split()
                if fields[1] == me and fields[0] != 'Z':
                    live.append(pid)
            if not live:
                return
            if time.monotonic() > end:
                raise AssertionError('the exec: command (pids %s) still runs after the '
                                     'migration completed' % ', '.join(live))
            time.sleep(0.02)

    def migrate(self, path, caps=(), params=None, uri=None):
        """Migrate to path with exec:cat (or to uri); return the final
        query-migrate."""
        if caps:
            self.qmp.cmd('migrate-set-capabilities',
                         capabilities=[{'capability': c, 'state': True}
                                       for c in caps])
        if params:
            self.qmp.cmd('migrate-set-parameters', **params)
        self.qmp.cmd('migrate', uri=uri or 'exec:cat > ' + path)
        end = time.monotonic() + DEADLINE
        while True:
            info = self.query_migrate()
            status = info.get('status')
            if status == 'completed':
                if not uri:
                    self.wait_children_exited(end)
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
        elif self.proc.poll() is None:
            self.proc.terminate()     # never connected: nothing to ask to quit
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


# QEMU 10.0 from bookworm-backports (scripts/install-qemu10.sh), a peer of the interop tests.
QEMU10 = os.environ.get('VMTEST_QEMU10', '/opt/qemu-10.0/bin/qemu-system-x86_64')


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def need_binary(test, path, what):
    """For a test: skip loudly when a peer binary (QEMU 7.2, 10.0) is missing,
    or fail under VMTEST_FAIL_ON_SKIP (CI)."""
    if os.access(path, os.X_OK):
        return
    msg = '%s is not installed at %s (scripts/install-deps.sh installs it)' % (what, path)
    if os.environ.get('VMTEST_FAIL_ON_SKIP'):
        raise AssertionError('%s cannot run: %s' % (test.id(), msg))
    print('SKIP %s: %s' % (test.id(), msg), file=sys.stderr)
    raise unittest.SkipTest(msg)


def skip_class_without_kvm(test_name):
    """For a setUpClass: skip the class loudly without KVM, the binary or
    the firmware, or fail under VMTEST_FAIL_ON_SKIP (CI)."""
    reason = kvm_skip_reason()
    if not reason:
        return
    if os.environ.get('VMTEST_FAIL_ON_SKIP'):
        raise AssertionError('%s cannot run: %s' % (test_name, reason))
    print('SKIP %s: %s' % (test_name, reason), file=sys.stderr)
    raise unittest.SkipTest(reason)


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
# The base of the test classes.

class StreamCase(unittest.TestCase):
    """Streams written by the binary under test: a scratch directory for
    the class, streams made once and shared by its tests (_fixtures), and
    the checks of a summary.  Skipped without KVM, the binary or the
    firmware."""

    # What the skip message names, and the scratch directory's prefix.
    skip_what = 'test-analyze real streams'
    tmp_prefix = 'test-analyze-'

    tmpdir = None
    _fixtures = {}

    @classmethod
    def setUpClass(cls):
        reason = kvm_skip_reason()
        if reason:
            sys.stderr.write('\n*** SKIP %s: %s ***\n'
                             % (cls.skip_what, reason))
            raise unittest.SkipTest(reason)
        cls.tmpdir = tempfile.mkdtemp(prefix=cls.tmp_prefix)
        cls._fixtures = {}

    @classmethod
    def tearDownClass(cls):
        if cls.tmpdir:
            shutil.rmtree(cls.tmpdir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmpdir, name)

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

    def assert_clean_error(self, rc, doc, err, what):
        self.assertNotIn('Traceback', err, what)
        self.assertNotIn('internal error', err, what)
        self.assertEqual(rc, 1, '%s: expected failure, got %d: %s'
                         % (what, rc, err))
        lines = [x for x in err.splitlines() if ' error: ' in x]
        self.assertTrue(lines, what)
        self.assertRegex(lines[-1], ANY_ERROR_RE, what)
