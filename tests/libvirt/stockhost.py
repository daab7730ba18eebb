# SPDX-License-Identifier: GPL-2.0-or-later
"""
stockhost.py: the host side of test-libvirt-stock.py: the system's
virtlogd and libvirtd (started if nothing serves their sockets, and then
stopped, on every path out), /dev/kvm as udev would leave it, the image
directory, the migration target (lvenv.sh), and virsh's output parsed.
"""

import grp
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LVENV = os.path.join(HERE, 'lvenv.sh')
DEADLINE = float(os.environ.get('VMTEST_DEADLINE', '60'))
URI = 'qemu:///system'
QEMU_USER = 'libvirt-qemu'
IMAGES = '/var/lib/libvirt/images'


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=DEADLINE, **kw)


def pid_alive(pidfile, name):
    """The pid in @pidfile if a process called @name runs with it, else None."""
    try:
        with open(pidfile) as f:
            pid = int(f.read().strip())
        with open('/proc/%d/comm' % pid) as f:
            return pid if f.read().strip() == name and pid_running(pid) else None
    except (OSError, ValueError):
        return None


def pid_running(pid):
    """False once @pid has exited, even if nobody reaped it yet (where
    PID 1 reaps no orphans, a daemon stays a zombie)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def socket_answers(path):
    """Whether something accepts connections on the unix socket @path."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sk:
        try:
            sk.connect(path)
            return True
        except OSError:
            return False


class StockHost:
    """What the test changed on the host, undone once by cleanup(), from
    tearDownClass, atexit or SIGTERM (meson's timeout), whichever comes
    first. Everything here is the main thread's."""

    # Each daemon's pid file and the socket it serves (which a service
    # manager may hold for it, starting it on the first connection).
    DAEMONS = (('virtlogd', '/run/virtlogd.pid', '/run/libvirt/virtlogd-sock'),
               ('libvirtd', '/run/libvirtd.pid', '/run/libvirt/libvirt-sock'))

    def __init__(self):
        self.started = []          # (name, pid) of the daemons this test started
        self.domains = []          # (uri, name) defined or started here
        self.kvm_mode = None       # /dev/kvm's (mode, gid) before we changed it
        self.lv_dst = None         # lvenv.sh's directory for the target
        self.tmp = tempfile.mkdtemp(prefix='test-libvirt-stock-')
        # The domain's files: libvirt-qemu must reach them, so not mkdtemp's 0700.
        self.images = tempfile.mkdtemp(prefix='qemu-mig-test-', dir=IMAGES)
        os.chmod(self.images, 0o755)
        self.log = os.path.join(self.tmp, 'libvirtd.log')
        self.done = False

    def kvm_for_group(self):
        """No udev runs here, so /dev/kvm may still be the kernel's root-only
        node; Debian's udev rule makes it root:kvm 0660, which is how
        libvirt-qemu (a member of kvm) opens it. Do what the rule does."""
        st = os.stat('/dev/kvm')
        kvm = grp.getgrnam('kvm').gr_gid
        if st.st_gid == kvm and st.st_mode & 0o060 == 0o060:
            return
        self.kvm_mode = (st.st_mode & 0o7777, st.st_gid)
        print('NOTE: /dev/kvm is %o gid %d (no udev); making it root:kvm 0660 as Debian\'s '
              'udev rule would, until the test ends' % self.kvm_mode, file=sys.stderr)
        os.chown('/dev/kvm', 0, kvm)
        os.chmod('/dev/kvm', 0o660)

    def start_daemons(self):
        for name, pidfile, sock in self.DAEMONS:
            if pid_alive(pidfile, name) or socket_answers(sock):
                print('NOTE: the system %s runs already; it is used and left running' % name,
                      file=sys.stderr)
                continue
            env = dict(os.environ)
            if name == 'libvirtd':
                # Where its errors go (the default is stderr, which -d closes);
                # an environment setting, so /etc/libvirt stays as installed.
                env['LIBVIRT_LOG_OUTPUTS'] = '2:file:' + self.log
            subprocess.run([name, '-d'], check=True, timeout=DEADLINE, env=env)
            end = time.monotonic() + DEADLINE
            while not pid_alive(pidfile, name):
                if time.monotonic() > end:
                    raise RuntimeError('%s -d did not come up (log: %s)' % (name, self.log))
                time.sleep(0.1)
            self.started.append((name, pid_alive(pidfile, name)))
        end = time.monotonic() + DEADLINE
        while run(['virsh', '-c', URI, 'version']).returncode:
            if time.monotonic() > end:
                raise RuntimeError('libvirtd does not answer on %s (log: %s)' % (URI, self.log))
            time.sleep(0.2)

    def start_target(self):
        self.lv_dst = os.path.join(self.tmp, 'lv-dst')
        subprocess.run([LVENV, 'start', self.lv_dst, 'lvdst'], check=True, timeout=DEADLINE)
        return 'qemu+unix:///system?socket=%s/run/libvirt-sock' % self.lv_dst

    def target_path(self, path):
        """@path (under /var/lib/libvirt) as the target's libvirtd sees it."""
        return os.path.join(self.lv_dst, 'lib', os.path.relpath(path, '/var/lib/libvirt'))

    def cleanup(self):
        if self.done:
            return
        self.done = True
        # Every step is tried whatever the one before did: a daemon left
        # running would outlive the test.
        steps = [lambda u=uri, n=name: self.forget_domain(u, n)
                 for uri, name in reversed(self.domains)]
        if self.lv_dst:
            steps.append(lambda: subprocess.run([LVENV, 'stop', self.lv_dst], timeout=30))
        steps += [lambda n=name, p=pid: self.stop_daemon(n, p)
                  for name, pid in reversed(self.started)]
        if self.kvm_mode:
            steps.append(lambda: (os.chown('/dev/kvm', 0, self.kvm_mode[1]),
                                  os.chmod('/dev/kvm', self.kvm_mode[0])))
        for step in steps:
            try:
                step()
            except Exception as e:  # noqa: BLE001 (go on with the next step)
                print('WARNING: cleanup: %r' % e, file=sys.stderr)
        shutil.rmtree(self.images, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    @staticmethod
    def forget_domain(uri, name):
        for cmd in ('destroy', 'undefine'):
            subprocess.run(['virsh', '-c', uri, cmd, name], capture_output=True, timeout=30)

    @staticmethod
    def stop_daemon(name, pid):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(100):
            if not pid_running(pid):
                return
            time.sleep(0.1)
        print('WARNING: %s (pid %d) did not exit' % (name, pid), file=sys.stderr)


def size_bytes(text):
    """virsh's "14.537 MiB" / "0.000 B" as bytes."""
    n, unit = text.split()
    return float(n) * {'B': 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30,
                       'TiB': 1 << 40}[unit]


def parse_jobinfo(text):
    """virsh domjobinfo's "Key:   value unit" lines as a dict of strings."""
    info = {}
    for line in text.splitlines():
        key, sep, value = line.partition(':')
        if sep and value.strip():
            info[key.strip()] = ' '.join(value.split())
    return info


def progress(stderr):
    """The percentages of virsh migrate --verbose's "Migration: [ NN %]" lines."""
    return [int(p) for p in re.findall(r'Migration: \[\s*(\d+) %\]', stderr)]


def emulator_has_pty(emulator):
    """Whether the binary makes a pty chardev: it says where, as QEMU does
    (on stdout; libvirt reads both streams), before anything else; a binary
    without one refuses the option."""
    p = subprocess.Popen([emulator, '-nodefaults', '-display', 'none', '-S', '-machine',
                          'microvm', '-chardev', 'pty,id=probe'],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text, end = b'', time.monotonic() + 10
    try:
        while b'\n' not in text and time.monotonic() < end:
            if select.select([p.stdout], [], [], 0.2)[0]:
                chunk = os.read(p.stdout.fileno(), 4096)
                if not chunk:
                    break
                text += chunk
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
    return b'char device redirected to /dev/pts/' in text
