# SPDX-License-Identifier: GPL-2.0-or-later
"""What the tests of the observers (test-migrate-watch.py, test-exporter.py,
test-usdt.py) share: a VM of the workload firmware with a QMP socket for
the test and a second monitor for the observer (a monitor serves one
client at a time), on a unix socket or on tcp; and a private libvirtd
(tests/libvirt/lvenv.sh) running one domain of that firmware, for the
observers' libvirt modes."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU, SRC_DIR
from analyzevm import QMP

LVENV = os.path.join(SRC_DIR, 'tests', 'libvirt', 'lvenv.sh')
sys.path.insert(0, os.path.join(SRC_DIR, 'scripts'))
from libvirtbench import DOMAIN_XML  # noqa: E402

# 64 MiB of random pages rewritten at 10 MB/s: at 32 MiB/s the first pass
# alone takes two seconds, and later passes converge.
APPEND = 'mode=dirty mem=64 rate=10 seconds=600'


def free_port():
    """A tcp port nobody listens on now (the VM binds it a moment later)."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Guest:
    """A VM of @binary with a QMP socket for the test (.qmp) and one for an
    observer: .watch_addr as -qmp spells it (a unix socket's bare path, or
    tcp:127.0.0.1:PORT with @observer='tcp')."""

    def __init__(self, tmpdir, name, binary=QEMU, cpu=CPU, extra=(),
                 mem='256M', append=APPEND, observer='unix'):
        self.sock = os.path.join(tmpdir, name + '.qmp')
        self.serial = os.path.join(tmpdir, name + '.serial')
        self.log = open(os.path.join(tmpdir, name + '.log'), 'wb')
        if observer == 'tcp':
            self.watch_addr = 'tcp:127.0.0.1:%d' % free_port()
            watch_qmp = self.watch_addr
        else:
            self.watch_addr = os.path.join(tmpdir, name + '-watch.qmp')
            watch_qmp = 'unix:' + self.watch_addr
        self.proc = subprocess.Popen(
            [binary, '-name', name, '-M', 'microvm', '-enable-kvm', '-cpu', cpu, '-m', mem,
             '-nodefaults', '-no-user-config', '-display', 'none',
             '-serial', 'file:' + self.serial, '-kernel', FIRMWARE, '-append', append,
             '-qmp', 'unix:%s,server=on,wait=off' % self.sock,
             '-qmp', watch_qmp + ',server=on,wait=off'] + list(extra),
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        # The test's monitor greets from the main loop: every -qmp listens by then.
        self.qmp = QMP(self.sock, self.proc)

    def ready(self):
        """Wait for the guest to have filled its area (else there is
        little to send)."""
        end = time.monotonic() + DEADLINE
        while True:
            try:
                with open(self.serial, 'rb') as f:
                    if b'READY ' in f.read():
                        return
            except FileNotFoundError:
                pass
            assert self.proc.poll() is None, 'the VM exited'
            assert time.monotonic() < end, 'no READY from the guest'
            time.sleep(0.05)

    def wait_status(self, statuses, timeout=DEADLINE):
        """query-migrate once its status is one of @statuses."""
        end = time.monotonic() + timeout
        while True:
            info = self.qmp.cmd('query-migrate')
            if info.get('status') in statuses:
                return info
            assert time.monotonic() < end, 'migration still %s' % info.get('status')
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.qmp.cmd('quit')
            except Exception:       # it may be going away already
                pass
        self.qmp.close()
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def libvirt_skip_reason():
    for tool in ('virsh', 'libvirtd', 'virtlogd', 'unshare'):
        if not shutil.which(tool) and not os.path.exists('/usr/sbin/' + tool):
            return '%s is not installed (scripts/install-deps.sh installs libvirt)' % tool
    if os.geteuid() != 0:
        return 'a private libvirtd for QEMU domains needs root'
    return None


class LibvirtDomain:
    """A private libvirtd (lvenv.sh) running one domain @name of our
    binary with the dirtying workload. .uri is its connection, .virsh()
    runs virsh there; stop() ends the domain and the daemons."""

    def __init__(self, name, append=APPEND):
        self.name = name
        self.tmp = tempfile.mkdtemp(prefix='obsvm-libvirt-')
        self.lv = os.path.join(self.tmp, 'lv')
        self.serial = os.path.join(self.tmp, name + '.serial')
        self.uri = 'qemu:///system?socket=%s/run/libvirt-sock' % self.lv
        subprocess.run([LVENV, 'start', self.lv], check=True, timeout=DEADLINE)
        try:
            xml = os.path.join(self.tmp, name + '.xml')
            with open(xml, 'w') as f:
                f.write(DOMAIN_XML.format(name=name, mib=256, firmware=FIRMWARE, append=append,
                                          emulator=QEMU, serial=self.serial))
            self.virsh('define', xml)
            self.virsh('start', name)
        except BaseException:
            self.stop()
            raise

    def virsh(self, *args):
        r = subprocess.run(['virsh', '-c', self.uri] + list(args), capture_output=True,
                           text=True, timeout=DEADLINE)
        assert r.returncode == 0, 'virsh %s: %s%s' % (' '.join(args), r.stdout, r.stderr)
        return r.stdout

    def qmp(self, name, **args):
        """@name through libvirt's monitor pass-through, as the observers do."""
        req = {'execute': name}
        if args:
            req['arguments'] = args
        reply = json.loads(self.virsh('qemu-monitor-command', self.name, json.dumps(req)))
        assert 'error' not in reply, reply
        return reply.get('return')

    def ready(self):
        end = time.monotonic() + DEADLINE
        while True:
            try:
                with open(self.serial, 'rb') as f:
                    if b'READY ' in f.read():
                        return
            except FileNotFoundError:
                pass
            assert time.monotonic() < end, 'no READY from the domain'
            time.sleep(0.1)

    def stop(self):
        subprocess.run([LVENV, 'stop', self.lv], timeout=DEADLINE)
        shutil.rmtree(self.tmp, ignore_errors=True)
