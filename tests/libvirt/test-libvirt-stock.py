#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-libvirt-stock.py: the README's domain under Debian's libvirtd as an
operator runs it.

test-libvirt.py runs private daemons as root without a security driver;
this one uses the system's libvirtd and virtlogd with /etc/libvirt as the
packages installed it (checked with dpkg --verify, never edited): domains
run as libvirt-qemu, dynamic ownership chowns the files they are given,
and whatever security drivers the host offers are on (virsh capabilities'
secmodel is printed; AppArmor only where the kernel has it). Where no
service manager runs (here, CI) the test starts `virtlogd -d` and
`libvirtd -d` itself and stops exactly those, on every path out; with no
udev either, /dev/kvm is made root:kvm 0660 (Debian's udev rule) while
it runs, since the domains open it as a member of group kvm.

The firmware is copied into /var/lib/libvirt/images/qemu-mig-test-XXXX
(libvirt chowns what it is given; the build tree stays root's). A
migration target is a private libvirtd of lvenv.sh with a host name of its
own: its /var/lib/libvirt is a directory of its own, so it gets its own
copy of the firmware at the same path, as a second host would.

Covered: define/start (the emulator's uid is libvirt-qemu, the firmware
chowned while it runs and given back after), migrate-setspeed and
migrate-setmaxdowntime (seen in query-migrate-parameters and honoured),
domjobinfo during a migration, migrate --live --verbose's progress lines,
an incoming migration into the stock libvirtd, virt-install of a microvm
domain; virsh console (pexpect) and virsh shutdown when the binary has a
pty chardev and system_powerdown (skipped loudly otherwise).

Arguments: --emulator PATH (or QEMU_MIG_EMULATOR; default QTEST_QEMU_BINARY,
then the build's qemu-system-x86_64), --firmware PATH (or VMTEST_FIRMWARE).
Environment: VMTEST_DEADLINE, VMTEST_FAIL_ON_SKIP; STOCK_DEBUG=1 prints every
domjobinfo sample.
"""

import argparse
import atexit
import importlib.util
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

from stockhost import (DEADLINE, QEMU_USER, URI, StockHost, emulator_has_pty,
                       parse_jobinfo, progress, run, size_bytes)

HERE = os.path.dirname(os.path.abspath(__file__))
# The packages whose conffiles make up /etc/libvirt's QEMU setup.
LIBVIRT_PACKAGES = ('libvirt-daemon-system', 'libvirt-daemon', 'libvirt-daemon-driver-qemu',
                    'libvirt-clients', 'libvirt-daemon-config-network',
                    'libvirt-daemon-config-nwfilter')

sys.path.insert(0, os.path.join(HERE, '../../scripts'))
from libvirtbench import DOMAIN_XML  # noqa: E402


def parse_args():
    """--emulator and --firmware; the rest goes to unittest."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument('--emulator', default=os.environ.get(
        'QEMU_MIG_EMULATOR', os.environ.get('QTEST_QEMU_BINARY',
                                            os.path.join(HERE, '../../build/qemu-system-x86_64'))))
    p.add_argument('--firmware', default=os.environ.get(
        'VMTEST_FIRMWARE', os.path.join(HERE, '../../build/tests/guest/workload.elf')))
    args, rest = p.parse_known_args()
    return os.path.realpath(args.emulator), os.path.realpath(args.firmware), rest


EMULATOR, FIRMWARE, UNITTEST_ARGV = parse_args()


def as_qemu_user(*argv):
    """True if @argv succeeds as libvirt-qemu with its groups, as the domain runs."""
    return run(['runuser', '-u', QEMU_USER, '--'] + list(argv)).returncode == 0


def skip_reason():
    for tool in ('virsh', 'libvirtd', 'virtlogd', 'virt-install', 'runuser', 'unshare'):
        if not shutil.which(tool):
            return '%s is not installed (scripts/install-deps.sh installs it)' % tool
    if not importlib.util.find_spec('pexpect'):
        return 'python3-pexpect is not installed (scripts/install-deps.sh installs it)'
    if os.geteuid() != 0:
        return 'the system libvirtd needs root'
    try:
        pwd.getpwnam(QEMU_USER)
    except KeyError:
        return 'there is no %s user (libvirt-daemon-system creates it)' % QEMU_USER
    if not os.path.exists('/dev/kvm'):
        return '/dev/kvm is missing'
    if not os.access(EMULATOR, os.X_OK) or not os.path.exists(FIRMWARE):
        return 'the binary or the firmware is not built'
    if not as_qemu_user('test', '-x', EMULATOR):
        return ('%s cannot run %s: every directory on its path must be searchable by it'
                % (QEMU_USER, EMULATOR))
    return None


class StockLibvirtTest(unittest.TestCase):
    host = None

    @classmethod
    def setUpClass(cls):
        reason = skip_reason()
        if reason:
            if os.environ.get('VMTEST_FAIL_ON_SKIP'):
                raise AssertionError('cannot run: ' + reason)
            print('SKIP: ' + reason, file=sys.stderr)
            raise unittest.SkipTest(reason)
        cls.host = StockHost()
        atexit.register(cls.host.cleanup)
        # meson's timeout sends SIGTERM: the daemons started here must still go.
        signal.signal(signal.SIGTERM, lambda *_: (cls.host.cleanup(), os._exit(1)))
        try:
            cls.host.kvm_for_group()
            cls.host.start_daemons()
            cls.uri_dst = cls.host.start_target()
        except BaseException:
            cls.host.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.host:
            cls.host.cleanup()

    def skip_loudly(self, reason):
        if os.environ.get('VMTEST_FAIL_ON_SKIP'):
            self.fail('cannot run: ' + reason)
        print('SKIP: ' + reason, file=sys.stderr)
        self.skipTest(reason)

    def virsh(self, *args, ok=True, uri=URI):
        r = run(['virsh', '-c', uri] + list(args))
        out = r.stdout + r.stderr
        if ok:
            self.assertEqual(r.returncode, 0, 'virsh %s: %s' % (' '.join(args), out))
        return out

    # The domain's files.

    def firmware_copy(self, name):
        """A copy of the firmware of the domain's own (libvirt chowns it)."""
        path = os.path.join(self.host.images, name + '.elf')
        shutil.copy(FIRMWARE, path)
        os.chmod(path, 0o644)
        return path

    def serial_text(self, serial):
        try:
            with open(serial, errors='replace') as f:
                text = f.read()
        except FileNotFoundError:
            return ''
        self.assertNotIn('FAIL', text)
        return text

    def wait_lines(self, serial, pattern, more_than):
        """Waits for more than @more_than lines matching @pattern in @serial."""
        end = time.monotonic() + DEADLINE
        while True:
            n = len(re.findall(pattern, self.serial_text(serial), re.M))
            if n > more_than:
                return n
            self.assertLess(time.monotonic(), end, 'no new %r in %s' % (pattern, serial))
            time.sleep(0.1)

    def define(self, name, append, mib=256):
        """The README's domain, defined in the stock libvirtd."""
        firmware = self.firmware_copy(name)
        serial = os.path.join(self.host.images, name + '.serial')
        xml = os.path.join(self.host.tmp, name + '.xml')
        with open(xml, 'w') as f:
            f.write(DOMAIN_XML.format(name=name, mib=mib, firmware=firmware, append=append,
                                      emulator=EMULATOR, serial=serial))
        self.host.domains.append((URI, name))
        self.virsh('define', xml)
        return firmware, serial

    def emulator_pid(self, name):
        with open('/run/libvirt/qemu/%s.pid' % name) as f:
            return int(f.read().strip())

    def check_runs_as_qemu_user(self, name):
        pid = self.emulator_pid(name)
        with open('/proc/%d/status' % pid) as f:
            status = dict(l.split(':', 1) for l in f.read().splitlines() if ':' in l)
        uids = status['Uid'].split()
        self.assertEqual(set(uids), {str(pwd.getpwnam(QEMU_USER).pw_uid)},
                         'the emulator runs as uids %s' % uids)
        self.assertEqual(os.path.realpath('/proc/%d/exe' % pid), EMULATOR)

    def prepare_target(self, firmware):
        """The target host's copy of the firmware, at the same path."""
        path = self.host.target_path(firmware)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copy(FIRMWARE, path)
        return path

    # The tests.

    def test_stock_configuration(self):
        """/etc/libvirt is as installed; which security drivers are on."""
        r = run(['dpkg', '--verify'] + list(LIBVIRT_PACKAGES))
        changed = [l for l in r.stdout.splitlines() if '/etc/libvirt' in l]
        self.assertEqual(changed, [], '/etc/libvirt is not as the packages installed it '
                         '(a reinstall or an edit?): %s' % changed)
        caps = self.virsh('capabilities')
        host = caps[caps.index('<host>'):caps.index('</host>')]
        models = re.findall(r'<secmodel>\s*<model>([^<]+)</model>', host)
        labels = re.findall(r"<baselabel type='kvm'>([^<]+)</baselabel>", host)
        lsm = '/sys/kernel/security/lsm'
        lsms = open(lsm).read().strip() if os.path.exists(lsm) else None
        print('security drivers (virsh capabilities): %s; dac base label for kvm: %s; '
              'kernel LSMs: %s' % (', '.join(models), ', '.join(labels),
                                    lsms if lsms is not None else 'none (no %s)' % lsm),
              file=sys.stderr)
        uid = pwd.getpwnam(QEMU_USER).pw_uid
        self.assertIn('dac', models)
        self.assertTrue(labels and labels[0].startswith('+%d:' % uid), labels)
        if lsms and 'apparmor' in lsms.split(','):
            # libvirt confines domains only where its own profile is loaded
            # (the apparmor package's service loads it at boot).
            try:
                with open('/sys/kernel/security/apparmor/profiles') as f:
                    loaded = 'libvirtd' in f.read()
            except OSError:
                loaded = False
            if loaded:
                self.assertIn('apparmor', models, 'libvirtd\'s AppArmor profile is loaded '
                              'but libvirt does not confine domains')
            else:
                print('NOTE: the kernel has AppArmor but no libvirtd profile is loaded: '
                      'domains are not confined', file=sys.stderr)

    def test_readme_domain(self):
        """Start, limits, domjobinfo and migrate --verbose out, then back in."""
        name = 'stock-readme'
        firmware, serial = self.define(name, 'mode=verify mem=64')
        self.virsh('start', name)
        self.assertEqual(self.virsh('domstate', name).strip(), 'running')
        n = self.wait_lines(serial, r'^PASS ', 0)
        self.check_runs_as_qemu_user(name)
        # Dynamic ownership: libvirt gave the emulator its kernel.
        self.assertEqual(os.stat(firmware).st_uid, pwd.getpwnam(QEMU_USER).pw_uid)
        print('security labels: %s' % [l for l in self.virsh('dominfo', name).splitlines()
                                       if l.startswith('Security')], file=sys.stderr)

        # 16 MiB/s: the verify guest's 64 MiB take four seconds a pass, long
        # enough to watch even under make check's load (at 32 MiB/s the
        # limit was seen holding for only 0.68 s once there, 1.5-2.1 s
        # alone); 1000 ms of downtime lets it converge.
        speed, downtime = 16, 1000
        self.virsh('migrate-setspeed', name, str(speed))
        self.virsh('migrate-setmaxdowntime', name, str(downtime))
        self.assertEqual(self.virsh('migrate-getspeed', name).strip(), str(speed))
        params = self.virsh('qemu-monitor-command', name,
                            '{"execute":"query-migrate-parameters"}')
        self.assertIn('"max-bandwidth":%d' % (speed << 20), params)
        self.assertIn('"downtime-limit":%d' % downtime, params)

        dst_serial = self.host.target_path(serial)
        self.prepare_target(firmware)
        samples, err = self.migrate_watched(name)
        self.check_jobinfo(samples, speed)
        pct = progress(err)
        # The verify guest rewrites its 64 MiB every few milliseconds, so
        # each iteration sends them again and "data remaining" (what virsh's
        # percentage is made of) can go back up; it is at 100 only at the end.
        self.assertGreaterEqual(len(pct), 2, 'progress lines: %r' % err)
        self.assertEqual(pct[-1], 100, pct)
        self.assertTrue(all(0 <= p <= 100 for p in pct), pct)
        self.assertLess(pct[0], 100, pct)
        self.assertEqual(self.virsh('domstate', name, uri=self.uri_dst).strip(), 'running')
        self.wait_lines(dst_serial, r'^PASS ', 0)
        # The completed job, as the target reports it: the downtime asked for.
        done = parse_jobinfo(self.virsh('domjobinfo', '--completed', name, uri=self.uri_dst))
        self.assertEqual(done.get('Job type'), 'Completed', done)
        total_downtime = int(done['Total downtime'].split()[0])
        self.assertLessEqual(total_downtime, downtime, done)
        print('completed: %s' % done, file=sys.stderr)

        # Back into the stock libvirtd: it chowns the firmware again and
        # starts the incoming emulator as libvirt-qemu.
        n = len(re.findall(r'^PASS ', self.serial_text(serial), re.M))
        self.virsh('migrate', '--live', name, URI, '--migrateuri', 'tcp://127.0.0.1',
                   uri=self.uri_dst)
        self.assertEqual(self.virsh('domstate', name).strip(), 'running')
        self.wait_lines(serial, r'^PASS ', n)
        self.check_runs_as_qemu_user(name)
        self.virsh('destroy', name)
        # remember_owner: the firmware is root's again once no domain uses it.
        self.assertEqual(os.stat(firmware).st_uid, 0)
        self.virsh('undefine', name)

    def migrate_watched(self, name, *flags):
        """virsh migrate --live --verbose to the target, with domjobinfo
        sampled as fast as virsh answers meanwhile; returns the samples (with
        the wall time) and virsh migrate's stderr."""
        mig = subprocess.Popen(['virsh', '-c', URI, 'migrate', '--live', '--verbose'] +
                               list(flags) + [name, self.uri_dst, '--migrateuri',
                                              'tcp://127.0.0.1'],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        samples = []
        end = time.monotonic() + DEADLINE
        while mig.poll() is None and time.monotonic() < end:
            r = run(['virsh', '-c', URI, 'domjobinfo', name])
            if r.returncode == 0:
                info = parse_jobinfo(r.stdout)
                info['wall'] = time.monotonic()
                samples.append(info)
        try:
            out, err = mig.communicate(timeout=DEADLINE)
        finally:
            mig.kill()
        self.assertEqual(mig.returncode, 0, 'virsh migrate: %s%s' % (out, err))
        return samples, err

    def check_jobinfo(self, samples, speed):
        """domjobinfo during the migration: the fields a job has, sane, and
        the memory sent no faster than @speed MiB/s (measured here: the
        bytes processed between two samples of one iteration over the wall
        time between them)."""
        if os.environ.get('STOCK_DEBUG'):
            for s in samples:
                print('%.3f %s' % (s['wall'], {k: s.get(k) for k in (
                    'Time elapsed', 'Iteration', 'Memory processed', 'Memory remaining',
                    'Memory bandwidth', 'Expected downtime')}), file=sys.stderr)
        jobs = [s for s in samples if s.get('Job type') == 'Unbounded']
        self.assertTrue(jobs, 'domjobinfo never saw the job: %s' % samples[:3])
        for s in jobs:
            self.assertEqual(s['Operation'], 'Outgoing migration', s)
        elapsed = [int(s['Time elapsed'].split()[0]) for s in jobs]
        self.assertEqual(elapsed, sorted(elapsed), 'time elapsed went back')
        mem = [s for s in jobs if 'Memory total' in s]
        self.assertTrue(mem, 'no sample had memory statistics: %s' % jobs[-1])
        for s in mem:
            total = size_bytes(s['Memory total'])
            self.assertGreaterEqual(total, 256 << 20, s)
            self.assertLess(total, 260 << 20, s)
            self.assertLessEqual(size_bytes(s['Memory remaining']), total, s)
            self.assertGreater(int(s['Iteration']), 0, s)
        # The limit holds while the guest runs; the switchover then sends
        # what is left at full speed (as QEMU's does). So the window checked
        # runs from the first sample to the last before a step of more than
        # the limit allows (a limiter sends in bursts: a quarter of a
        # second's worth of slack): were the limit ignored, the whole
        # migration would be such a step and the window too short.
        window = mem[:1]
        for prev, s in zip(mem, mem[1:]):
            sent = size_bytes(s['Memory processed']) - size_bytes(prev['Memory processed'])
            if sent > speed * (s['wall'] - prev['wall'] + 0.25) * (1 << 20):
                break
            window.append(s)
        # (virsh leaves out a bandwidth not measured yet.)
        for s in window:
            bw = s.get('Memory bandwidth', '0 MiB/s').split()
            self.assertIn(bw[1], ('B/s', 'KiB/s', 'MiB/s'), s)
            self.assertLessEqual(size_bytes('%s %s' % (bw[0], bw[1][:-2])),
                                 speed * 1.1 * (1 << 20), s)
        span = window[-1]['wall'] - window[0]['wall']
        rate = (size_bytes(window[-1]['Memory processed']) -
                size_bytes(window[0]['Memory processed'])) / max(span, 0.001) / (1 << 20)
        print('domjobinfo: %d samples; %.1f MiB/s measured over %.2f s, iterations %s-%s '
              '(limit %d)' % (len(jobs), rate, span, window[0]['Iteration'],
                              window[-1]['Iteration'], speed), file=sys.stderr)
        self.assertGreater(span, 1.0, 'the limit held for only %.2f s' % span)
        self.assertLessEqual(rate, speed * 1.2)
        self.assertGreater(rate, speed * 0.5, 'the migration did not use its bandwidth')

    def test_progress_of_a_quiet_guest(self):
        """migrate --verbose of a guest that wrote its memory once: every
        iteration after the first sends little, so the percentage only
        grows, and reaches 100."""
        name = 'stock-quiet'
        firmware, serial = self.define(name, 'mode=idle fill=random mem=128')
        self.virsh('start', name)
        self.wait_lines(serial, r'^READY ', 0)
        self.prepare_target(firmware)
        # 64 MiB/s: the 128 MiB it filled take two seconds, four of virsh's polls.
        self.virsh('migrate-setspeed', name, '64')
        _, err = self.migrate_watched(name)
        pct = progress(err)
        self.assertGreaterEqual(len(set(pct)), 3, 'progress lines: %r' % err)
        self.assertEqual(pct, sorted(pct), 'the progress went back: %s' % pct)
        self.assertEqual(pct[-1], 100, pct)
        self.wait_lines(self.host.target_path(serial), r'^STAT ', 0)
        self.virsh('destroy', name, uri=self.uri_dst)
        self.virsh('undefine', name)

    def virt_install(self, name, *extra):
        """virt-install 4.1 of a microvm domain booting the verify firmware.
        What it needs beyond the obvious, and why:
        --import: it demands an install method, and --boot kernel= is none;
        --xml ./devices/emulator=: it has no --emulator option;
        --controller usb,model=none and --memballoon none: otherwise ICH9
          USB controllers and a virtio balloon, which want a PCI bus microvm
          has not ("No PCI buses available");
        --xml xpath.delete=./clock: its <timer name='hpet' present='no'/>
          becomes -no-hpet, which QEMU 7.2's microvm refuses (its
          <timer name='rtc' tickpolicy='catchup'/>, -rtc driftfix=slew,
          both binaries take: test-cmdline);
        --cpu ...,disable=arch-capabilities: as the README's domain (QEMU 7.2
          aborts setting that MSR on this kernel, and both run this XML)."""
        firmware = self.firmware_copy(name)
        self.host.domains.append((URI, name))
        r = run(['virt-install', '--connect', URI, '--name', name, '--memory', '256',
                 '--vcpus', '1', '--machine', 'microvm', '--import',
                 '--boot', 'kernel=%s,kernel_args=mode=verify mem=64' % firmware,
                 '--osinfo', 'none', '--disk', 'none', '--network', 'none',
                 '--graphics', 'none', '--noautoconsole',
                 '--cpu', 'host-passthrough,disable=arch-capabilities',
                 '--controller', 'usb,model=none', '--memballoon', 'none',
                 '--xml', './devices/emulator=' + EMULATOR,
                 '--xml', 'xpath.delete=./clock'] + list(extra))
        self.assertEqual(r.returncode, 0, 'virt-install: %s%s' % (r.stdout, r.stderr))
        self.assertEqual(self.virsh('domstate', name).strip(), 'running')
        self.check_runs_as_qemu_user(name)
        # Its default <pm> (S3 and S4 off) reaches us as QEMU's -global switches.
        self.assertIn("<suspend-to-mem enabled='no'/>", self.virsh('dumpxml', name))
        with open('/proc/%d/cmdline' % self.emulator_pid(name), 'rb') as f:
            argv = f.read().decode().split('\0')
        self.assertIn('PIIX4_PM.disable_s3=1', argv)
        return firmware

    def test_virt_install(self):
        """virt-install with the serial in a file; the firmware PASSes."""
        name = 'stock-vi-file'
        serial = os.path.join(self.host.images, name + '.serial')
        self.virt_install(name, '--serial', 'file,path=' + serial)
        self.wait_lines(serial, r'^PASS ', 1)
        self.virsh('destroy', name)
        self.virsh('undefine', name)

    def need_pty(self, what):
        if not emulator_has_pty(EMULATOR):
            self.skip_loudly('%s has no pty chardev (issue 42 item 1): %s cannot start'
                             % (EMULATOR, what))

    def need_powerdown(self, name):
        """Skips (the domain destroyed) if the binary lacks system_powerdown."""
        cmds = self.virsh('qemu-monitor-command', name, '{"execute":"query-commands"}')
        if '"system_powerdown"' not in cmds:
            self.virsh('destroy', name)
            self.skip_loudly('%s has no system_powerdown (issue 42 item 2): virsh shutdown '
                             'cannot press the power button' % EMULATOR)

    def console_passes(self, name):
        """virsh console, driven by pexpect: two PASS lines, then Ctrl-]."""
        import pexpect
        con = pexpect.spawn('virsh', ['-c', URI, 'console', '--force', name], encoding='utf-8',
                            timeout=DEADLINE)
        try:
            con.expect('Escape character is')
            # The space ends the number: pexpect matches what has arrived,
            # so "PASS n=17" half read would otherwise be n=1.
            con.expect(r'PASS n=(\d+) ')
            first = int(con.match.group(1))
            con.expect(r'PASS n=(\d+) ')
            self.assertGreater(int(con.match.group(1)), first)
            con.sendcontrol(']')
            con.expect(pexpect.EOF)
        finally:
            con.close(force=True)

    def shutdown(self, name):
        """virsh shutdown, until libvirt says the guest shut itself off."""
        self.virsh('shutdown', name)
        end = time.monotonic() + DEADLINE
        while self.virsh('domstate', name).strip() != 'shut off':
            self.assertLess(time.monotonic(), end, 'the guest did not power off')
            time.sleep(0.2)
        self.assertIn('shut off (shutdown)', self.virsh('domstate', '--reason', name))

    def test_virt_install_default_console(self):
        """virt-install's default console (a pty), read by virsh console
        through pexpect until the firmware's PASS lines."""
        self.need_pty("virt-install's default <console type='pty'>")
        name = 'stock-vi-console'
        self.virt_install(name)
        self.console_passes(name)
        self.virsh('destroy', name)
        self.virsh('undefine', name)

    def test_virsh_shutdown(self):
        """virsh shutdown: the power button, the firmware powers off, libvirt
        sees the domain shut off by the guest: virt-install's domain, which
        has <acpi/> (QEMU's acpi=on default)."""
        name = 'stock-vi-shutdown'
        serial = os.path.join(self.host.images, name + '.serial')
        self.virt_install(name, '--serial', 'file,path=' + serial)
        self.wait_lines(serial, r'^PASS ', 0)
        self.need_powerdown(name)
        self.shutdown(name)
        self.virsh('undefine', name)

    def test_readme_domain_console_shutdown(self):
        """What issue 42's operator does with the README's domain: start,
        virsh console, virsh shutdown. A file serial is refused by virsh
        console ("not using a PTY"), so here, as the README says for
        console use, it is a pty with a <log file=...> (libvirt's
        logfile=, through virtlogd) that keeps the lines too; its <acpi/>
        gives it the power button (without it libvirt passes -no-acpi:
        acpi=off, no button)."""
        self.need_pty("<serial type='pty'/>")
        name = 'stock-readme-console'
        firmware = self.firmware_copy(name)
        log = os.path.join(self.host.images, name + '.log')
        xml = DOMAIN_XML.format(name=name, mib=256, firmware=firmware,
                                append='mode=verify mem=64', emulator=EMULATOR, serial='')
        xml = re.sub(r"<serial type='file'>.*?</serial>",
                     "<serial type='pty'><log file='%s'/></serial>" % log, xml, flags=re.S)
        path = os.path.join(self.host.tmp, name + '.xml')
        with open(path, 'w') as f:
            f.write(xml)
        self.host.domains.append((URI, name))
        self.virsh('define', path)
        self.virsh('start', name)
        self.check_runs_as_qemu_user(name)
        self.console_passes(name)
        self.wait_lines(log, r'^PASS n=\d+ ', 2)
        self.need_powerdown(name)
        self.shutdown(name)
        self.virsh('undefine', name)


if __name__ == '__main__':
    unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGV)
