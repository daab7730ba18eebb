#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-libvirt.py: libvirt drives our binary as it drives QEMU 7.2.

A private libvirtd and virtlogd (lvenv.sh: every directory libvirt uses,
bind-mounted from a scratch directory in a mount namespace of their own;
no system service is assumed or touched) probe our binary (virsh
domcapabilities, and no error in libvirtd's log about it), then run a
microvm domain booting the verify firmware through start, domstate,
suspend, resume, qemu-monitor-command --hmp, save, restore, live
migrations to and from a second private libvirtd (its own host name and
UUID, lvenv.sh): plain, --postcopy (the postcopy-active event seen),
--parallel (multifd) and --compressed (xbzrle), the same over TLS
(--tls: plain, --parallel, --postcopy, --compressed, on QEMU 7.2 plain and
--compressed only; both libvirtds given
one directory of certificates by qemu.conf's migrate_tls_x509_cert_dir,
and each hop checked in their logs to have added the tls-creds-x509
objects and set tls-creds, so a hop libvirt ran in plaintext fails), a
compression method we lack refused with the guest still running (ours
only), and destroy,
reading the firmware's PASS lines (and no FAIL: the verify firmware
checks its memory after the restore) in the serial file after each step.
virsh reboot and virsh shutdown go through the firmware's power button
(system_powerdown; for reboot then system_reset and cont).
A second domain has a qcow2 disk made by qemu-img (<disk type='file'
device='disk'>, bus virtio) that the blkverify firmware writes through
start and live migrations both ways, then virsh blockcopy --pivot (ours)
into a copy it writes on; qemu-img check and the host's check of every
acknowledged write follow. Storage moves with --copy-storage-all
(an empty image on the destination) and --copy-storage-inc (overlays of
one base on both sides: the base reads through, none of it copied), and
with --tls (the NBD server and client node given credentials). The same
domain XML is run with QEMU 7.2 as <emulator> when it is installed,
which proves the XML.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP, QEMU72_BINARY (default /usr/bin/qemu-system-x86_64).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
QEMU = os.environ.get('QTEST_QEMU_BINARY', os.path.join(HERE, '../../build/qemu-system-x86_64'))
FIRMWARE = os.environ.get('VMTEST_FIRMWARE',
                          os.path.join(HERE, '../../build/tests/guest/workload.elf'))
QEMU72 = os.environ.get('QEMU72_BINARY', '/usr/bin/qemu-system-x86_64')
DEADLINE = float(os.environ.get('VMTEST_DEADLINE', '60'))
LVENV = os.path.join(HERE, 'lvenv.sh')

# The domain: libvirtbench's XML (the README's), 256 MiB, the verify firmware on 64.
sys.path.insert(0, os.path.join(HERE, '../../scripts'))
from libvirtbench import DOMAIN_XML  # noqa: E402
import tlscerts  # noqa: E402
sys.path.insert(0, os.path.join(HERE, '../functional'))
from blkcase import host_check, stat_lines  # noqa: E402

DISK_SECTORS = 2048
# --copy-storage-inc: a base of BASE_SECTORS whose tail past DISK_SECTORS is BASE_BYTE.
BASE_SECTORS = 8192
BASE_BYTE = 0x5a
# A STAT line every 250 ms (not each second): the steps below wait for two.
BLK_APPEND = 'mode=blkverify depth=8 iops=2000 report_ms=250'
DISK_XML = """    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source file='{disk}'/>
      <target dev='vda' bus='virtio'/>
      <address type='virtio-mmio'/>
    </disk>
"""

# What libvirt sends over QMP for virsh migrate --tls (its object's id
# varies between versions, so any tls-creds but libvirt's reset to "").
TLS_OBJECT = '"qom-type":"tls-creds-x509"'
TLS_CREDS_SET = re.compile(r'"execute":"migrate-set-parameters".*"tls-creds":"[^"]')


def skip_reason():
    for tool in ('virsh', 'libvirtd', 'virtlogd', 'unshare'):
        if not shutil.which(tool) and not os.path.exists('/usr/sbin/' + tool):
            return '%s is not installed (scripts/install-deps.sh installs libvirt)' % tool
    if os.geteuid() != 0:
        return 'a private libvirtd for QEMU domains needs root'
    if not tlscerts.certtool():
        return 'certtool is missing (Debian package gnutls-bin)'
    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        return '/dev/kvm is missing or not accessible'
    if not os.access(QEMU, os.X_OK) or not os.path.exists(FIRMWARE):
        return 'the binary or the firmware is not built'
    return None


class LibvirtTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = skip_reason()
        if reason:
            if os.environ.get('VMTEST_FAIL_ON_SKIP'):
                raise AssertionError('cannot run: ' + reason)
            print('SKIP: ' + reason, file=sys.stderr)
            raise unittest.SkipTest(reason)
        cls.tmp = tempfile.mkdtemp(prefix='test-libvirt-')
        cls.lv = os.path.join(cls.tmp, 'lv')
        cls.lv_dst = os.path.join(cls.tmp, 'lv-dst')
        # One directory with QEMU's file names for both ends; its server
        # certificate names 127.0.0.1, the tls-hostname libvirt sets from
        # --migrateuri tcp://127.0.0.1.
        env = dict(os.environ,
                   LVENV_MIGRATE_TLS_DIR=tlscerts.make_cert_dirs(os.path.join(cls.tmp,
                                                                              'tls'))['both'])
        # The migration target: another libvirtd with its own host name and
        # UUID. The two share nothing, so they start side by side.
        cls.lvenv_all(['start', cls.lv], ['start', cls.lv_dst, 'lvdst'], env=env)
        cls.uri = 'qemu:///system?socket=%s/run/libvirt-sock' % cls.lv
        cls.uri_dst = 'qemu+unix:///system?socket=%s/run/libvirt-sock' % cls.lv_dst

    @classmethod
    def tearDownClass(cls):
        cls.lvenv_all(['stop', cls.lv], ['stop', cls.lv_dst], check=False)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @staticmethod
    def lvenv_all(*runs, check=True, env=None):
        """lvenv.sh with each of @runs' arguments, all at once; waits for all."""
        procs = [subprocess.Popen([LVENV] + args, env=env) for args in runs]
        codes = [p.wait(timeout=DEADLINE) for p in procs]
        if check:
            for args, code in zip(runs, codes):
                if code != 0:
                    raise subprocess.CalledProcessError(code, [LVENV] + args)

    def virsh(self, *args, ok=True, uri=None):
        r = subprocess.run(['virsh', '-c', uri or self.uri] + list(args), capture_output=True,
                           timeout=DEADLINE)
        out = r.stdout.decode() + r.stderr.decode()
        if ok:
            self.assertEqual(r.returncode, 0, 'virsh %s: %s' % (' '.join(args), out))
        return out

    @staticmethod
    def log_text(lv):
        with open(os.path.join(lv, 'log', 'libvirtd.log'), errors='replace') as f:
            return f.read()

    def log_errors_about(self, binary):
        """libvirtd's error lines that name @binary."""
        return [l for l in self.log_text(self.lv).splitlines()
                if ' error : ' in l and binary in l]

    def migrate(self, name, serial, n, frm, to, *flags):
        """virsh migrate --live @flags from @frm to @to; the guest goes on there."""
        self.virsh('migrate', '--live', *flags, name, to, '--migrateuri', 'tcp://127.0.0.1',
                   uri=frm)
        self.assertEqual(self.virsh('domstate', name, uri=to).strip(), 'running')
        self.assertNotIn('running', self.virsh('domstate', name, ok=False, uri=frm))
        return self.wait_more_passes(serial, n)

    def tls_counts(self, lv):
        """How often @lv's libvirtd added an x509 credentials object with
        endpoint=client and =server, and set tls-creds to one."""
        lines = [l for l in self.log_text(lv).splitlines() if 'QEMU_MONITOR_SEND_MSG' in l]
        adds = [l for l in lines if TLS_OBJECT in l]
        return (sum('"endpoint":"client"' in l for l in adds),
                sum('"endpoint":"server"' in l for l in adds),
                sum(bool(TLS_CREDS_SET.search(l)) for l in lines))

    def migrate_tls(self, name, serial, n, frm, to, *flags):
        """virsh migrate --live --tls @flags from @frm to @to, proven by the
        libvirtds' logs to have run over TLS: a client object and tls-creds
        on the source, a server object and tls-creds on the destination."""
        lv_frm, lv_to = (self.lv, self.lv_dst) if frm == self.uri else (self.lv_dst, self.lv)
        before = self.tls_counts(lv_frm), self.tls_counts(lv_to)
        n = self.migrate(name, serial, n, frm, to, '--tls', *flags)
        after = self.tls_counts(lv_frm), self.tls_counts(lv_to)
        what = ' '.join(('--tls',) + flags)
        self.assertGreater(after[0][0], before[0][0], '%s: no client credentials on the source'
                           % what)
        self.assertGreater(after[0][2], before[0][2], '%s: tls-creds not set on the source'
                           % what)
        self.assertGreater(after[1][1], before[1][1],
                           '%s: no server credentials on the destination' % what)
        self.assertGreater(after[1][2], before[1][2], '%s: tls-creds not set on the destination'
                           % what)
        return n

    def test_domcapabilities(self):
        caps = self.virsh('domcapabilities', '--emulatorbin', QEMU, '--virttype', 'kvm',
                          '--machine', 'microvm')
        self.assertIn('<machine>microvm</machine>', caps)
        self.assertIn("<mode name='host-passthrough' supported='yes'>", caps)
        self.assertEqual(self.log_errors_about(QEMU), [])

    def passes(self, serial):
        try:
            with open(serial, errors='replace') as f:
                text = f.read()
        except FileNotFoundError:
            return 0
        self.assertNotIn('FAIL', text)
        return len(re.findall(r'^PASS ', text, re.M))

    def wait_more_passes(self, serial, than):
        end = time.monotonic() + DEADLINE
        while self.passes(serial) <= than:
            self.assertLess(time.monotonic(), end, 'the firmware printed no new PASS')
            time.sleep(0.1)
        return self.passes(serial)

    def run_domain(self, name, emulator):
        serial = os.path.join(self.tmp, name + '.serial')
        xml = os.path.join(self.tmp, name + '.xml')
        with open(xml, 'w') as f:
            f.write(DOMAIN_XML.format(name=name, mib=256, firmware=FIRMWARE,
                                      append='mode=verify mem=64', emulator=emulator,
                                      serial=serial))
        self.virsh('define', xml)
        try:
            self.virsh('start', name)
            self.assertEqual(self.virsh('domstate', name).strip(), 'running')
            n = self.wait_more_passes(serial, 0)
            self.virsh('suspend', name)
            self.assertEqual(self.virsh('domstate', name).strip(), 'paused')
            n = self.passes(serial)
            time.sleep(0.5)
            self.assertEqual(self.passes(serial), n, 'the guest ran while suspended')
            self.virsh('resume', name)
            self.assertEqual(self.virsh('domstate', name).strip(), 'running')
            n = self.wait_more_passes(serial, n)
            self.assertIn('VM status: running',
                          self.virsh('qemu-monitor-command', name, '--hmp', 'info status'))
            # save: stop, getfd, migrate to fd:NAME through libvirt's helper;
            # restore: -incoming defer and migrate-incoming from the file.
            image = os.path.join(self.tmp, name + '.save')
            self.virsh('save', name, image)
            self.assertEqual(self.virsh('domstate', name).strip(), 'shut off')
            self.assertGreater(os.path.getsize(image), 1 << 20)
            n = self.passes(serial)
            self.virsh('restore', image)
            self.assertEqual(self.virsh('domstate', name).strip(), 'running')
            n = self.wait_more_passes(serial, n)
            # Live migrations between the two libvirtds (one host: the same serial
            # file), plain, then with each capability set libvirt maps to ours.
            n = self.migrate(name, serial, n, self.uri, self.uri_dst)
            # 64 MiB/s cannot converge on the verify guest's 64 MiB (it rewrites
            # them all in milliseconds; the default 300 ms of downtime holds 19 MiB
            # at that rate), so libvirt switches to postcopy after the first pass,
            # a second long at this rate (two at the 32 MiB/s this hop once had).
            seen = self.log_text(self.lv_dst).count('"status": "postcopy-active"')
            n = self.migrate(name, serial, n, self.uri_dst, self.uri, '--bandwidth', '64',
                             '--postcopy', '--postcopy-after-precopy')
            # The hop ran in postcopy: the event reached the source's libvirtd.
            self.assertGreater(self.log_text(self.lv_dst).count('"status": "postcopy-active"'),
                               seen)
            # libvirt resets the capabilities once a migration is over, so what
            # each hop turned on is read from the commands the source's libvirtd sent.
            multifd = '{"capability":"multifd","state":true}'
            seen = self.log_text(self.lv).count(multifd)
            n = self.migrate(name, serial, n, self.uri, self.uri_dst,
                             '--parallel', '--parallel-connections', '2')
            self.assertGreater(self.log_text(self.lv).count(multifd), seen)
            xbzrle = '{"capability":"xbzrle","state":true}'
            seen = self.log_text(self.lv_dst).count(xbzrle)
            n = self.migrate(name, serial, n, self.uri_dst, self.uri, '--compressed')
            self.assertGreater(self.log_text(self.lv_dst).count(xbzrle), seen)
            # The same over TLS.
            n = self.migrate_tls(name, serial, n, self.uri, self.uri_dst)
            if emulator == QEMU:
                # Each TLS mode on ours; on QEMU 7.2 (which proves the XML and
                # libvirt's TLS steps) plain and --compressed suffice.
                seen = self.log_text(self.lv_dst).count('"status": "postcopy-active"')
                n = self.migrate_tls(name, serial, n, self.uri_dst, self.uri, '--bandwidth', '64',
                                     '--postcopy', '--postcopy-after-precopy')
                self.assertGreater(
                    self.log_text(self.lv_dst).count('"status": "postcopy-active"'), seen)
                seen = self.log_text(self.lv).count(multifd)
                n = self.migrate_tls(name, serial, n, self.uri, self.uri_dst,
                                     '--parallel', '--parallel-connections', '2')
                self.assertGreater(self.log_text(self.lv).count(multifd), seen)
            # Back to the first libvirtd, for the steps below.
            seen = self.log_text(self.lv_dst).count(xbzrle)
            n = self.migrate_tls(name, serial, n, self.uri_dst, self.uri, '--compressed')
            self.assertGreater(self.log_text(self.lv_dst).count(xbzrle), seen)
            if emulator == QEMU:
                # A method this build does not have (QEMU 7.2 has 'mt') is refused by
                # the destination's libvirtd, and the source's guest goes on. (Its
                # serial file is not read after this: the destination's failed start
                # replaced it, which two hosts would not share.)
                out = self.virsh('migrate', '--live', '--compressed', '--comp-methods', 'mt',
                                 name, self.uri_dst, '--migrateuri', 'tcp://127.0.0.1',
                                 ok=False)
                self.assertIn("Migration option 'compress' is not supported", out)
                self.assertEqual(self.virsh('domstate', name).strip(), 'running')
                self.assertIn('VM status: running', self.virsh('qemu-monitor-command', name,
                                                               '--hmp', 'info status'))
            self.virsh('destroy', name)
            self.assertEqual(self.virsh('domstate', name).strip(), 'shut off')
        finally:
            self.virsh('destroy', name, ok=False)
            self.virsh('undefine', name, ok=False)
            self.virsh('destroy', name, ok=False, uri=self.uri_dst)
        self.assertEqual(self.log_errors_about(emulator), [])

    def wait_state(self, name, state):
        end = time.monotonic() + DEADLINE
        while self.virsh('domstate', name, ok=False).strip() != state:
            self.assertLess(time.monotonic(), end, '%s never reached "%s"' % (name, state))
            time.sleep(0.1)

    def serial_count(self, serial, text):
        with open(serial, errors='replace') as f:
            return f.read().count(text)

    def run_power_domain(self, name, emulator):
        """virsh reboot and virsh shutdown through the firmware's power button:
        libvirt sends system_powerdown for both; for reboot it then sends
        system_reset and cont once the guest powered off (-no-shutdown)."""
        serial = os.path.join(self.tmp, name + '.serial')
        xml = os.path.join(self.tmp, name + '.xml')
        with open(xml, 'w') as f:
            f.write(DOMAIN_XML.format(name=name, mib=256, firmware=FIRMWARE,
                                      append='mode=verify mem=64', emulator=emulator,
                                      serial=serial))
        self.virsh('define', xml)
        try:
            self.virsh('start', name)
            n = self.wait_more_passes(serial, 0)
            seen = self.log_text(self.lv).count('"execute":"system_powerdown"')
            self.virsh('reboot', name)
            end = time.monotonic() + DEADLINE
            while self.serial_count(serial, 'READY mode=verify') < 2:
                self.assertLess(time.monotonic(), end, 'virsh reboot: no second READY')
                time.sleep(0.1)
            self.assertEqual(self.serial_count(serial, 'POWER BUTTON'), 1)
            self.assertEqual(self.virsh('domstate', name).strip(), 'running')
            # (libvirtd's log has each command it sends on more than one line.)
            log = self.log_text(self.lv)
            after_reboot = log.count('"execute":"system_powerdown"')
            self.assertGreater(after_reboot, seen)
            self.assertIn('"execute":"system_reset"', log)
            n = self.wait_more_passes(serial, self.passes(serial))
            self.virsh('shutdown', name)
            self.wait_state(name, 'shut off')
            self.assertEqual(self.serial_count(serial, 'POWER BUTTON'), 2)
            self.assertGreater(self.log_text(self.lv).count('"execute":"system_powerdown"'),
                               after_reboot)
        finally:
            self.virsh('destroy', name, ok=False)
            self.virsh('undefine', name, ok=False)
        self.assertEqual(self.log_errors_about(emulator), [])

    def test_power_ours(self):
        self.run_power_domain('power-ours', QEMU)

    def test_power_qemu72(self):
        if not os.access(QEMU72, os.X_OK):
            if os.environ.get('VMTEST_FAIL_ON_SKIP'):
                self.fail('QEMU 7.2 is not installed at %s' % QEMU72)
            self.skipTest('QEMU 7.2 is not installed at %s' % QEMU72)
        self.run_power_domain('power-qemu72', QEMU72)

    def stats(self, serial):
        try:
            with open(serial, errors='replace') as f:
                text = f.read()
        except FileNotFoundError:
            return []
        self.assertNotIn('FAIL', text)
        return stat_lines(text)

    def wait_more_stats(self, serial, n):
        end = time.monotonic() + DEADLINE
        have = len(self.stats(serial))
        while len(self.stats(serial)) < have + n:
            self.assertLess(time.monotonic(), end, 'the firmware printed no new STAT')
            time.sleep(0.1)
        return self.stats(serial)[-1]

    def check_disk(self, disk, last):
        """qemu-img check finds nothing in @disk, and it holds every write the
        firmware acknowledged up to its @last STAT line."""
        check = subprocess.run(['qemu-img', 'check', disk], capture_output=True, text=True,
                               timeout=DEADLINE)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        raw = disk + '.raw'
        subprocess.run(['qemu-img', 'convert', '-f', 'qcow2', '-O', 'raw', disk, raw],
                       check=True, timeout=DEADLINE)
        self.assertEqual(host_check(raw, DISK_SECTORS, int(last['acked_gen'])), [])

    def run_disk_domain(self, name, emulator, pivot=False):
        """A qcow2 disk written through start and live migrations both ways."""
        serial = os.path.join(self.tmp, name + '.serial')
        xml = os.path.join(self.tmp, name + '.xml')
        disk = os.path.join(self.tmp, name + '.qcow2')
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', disk,
                        str(DISK_SECTORS * 512)], check=True, timeout=DEADLINE)
        domain = DOMAIN_XML.format(name=name, mib=128, firmware=FIRMWARE,
                                   append=BLK_APPEND,
                                   emulator=emulator, serial=serial)
        domain = domain.replace('    <controller', DISK_XML.format(disk=disk) + '    <controller', 1)
        with open(xml, 'w') as f:
            f.write(domain)
        self.virsh('define', xml)
        try:
            self.virsh('start', name)
            self.wait_more_stats(serial, 2)
            # One host: the disk is shared, which libvirt cannot see without
            # cache=none (not on every filesystem): --unsafe says it is.
            for frm, to in ((self.uri, self.uri_dst), (self.uri_dst, self.uri)):
                before = int(self.stats(serial)[-1]['writes'])
                self.virsh('migrate', '--live', '--unsafe', name, to,
                           '--migrateuri', 'tcp://127.0.0.1', uri=frm)
                self.assertEqual(self.virsh('domstate', name, uri=to).strip(), 'running')
                last = self.wait_more_stats(serial, 2)
                self.assertGreater(int(last['writes']), before, 'the destination writes on')
            if pivot:
                # virsh blockcopy --pivot: the mirror, then job-complete; the
                # guest writes on into the copy, which alone is checked.
                copy = os.path.join(self.tmp, name + '-copy.qcow2')
                subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', copy,
                                str(DISK_SECTORS * 512)], check=True, timeout=DEADLINE)
                before = int(self.stats(serial)[-1]['writes'])
                self.virsh('blockcopy', name, 'vda', copy, '--reuse-external', '--format',
                           'qcow2', '--transient-job', '--wait', '--pivot')
                self.assertIn(copy, self.virsh('domblklist', name))
                last = self.wait_more_stats(serial, 2)
                self.assertGreater(int(last['writes']), before, 'the guest writes on')
                disk = copy
            self.virsh('suspend', name)
            last = self.stats(serial)[-1]
            self.virsh('destroy', name)
        finally:
            self.virsh('destroy', name, ok=False)
            self.virsh('undefine', name, ok=False)
            self.virsh('destroy', name, ok=False, uri=self.uri_dst)
        self.check_disk(disk, last)
        self.assertEqual(self.log_errors_about(emulator), [])

    def run_storage_domain(self, name, emulator, peer=False, inc=False, tls=False):
        """virsh migrate --live --copy-storage-all of a writing guest whose
        qcow2 disk is local: the destination's empty image (pre-created, as
        libvirt requires) at another path (--xml: both libvirtds share this
        host's files), filled over NBD by the source's mirror; the guest
        writes on there, and every write it acknowledged is in that image.
        With @inc, --copy-storage-inc: both images are overlays of one
        base present on "both hosts", and only the overlay's data moves.
        With @tls, --tls: the disk's NBD connection is TLS too (libvirt
        gives nbd-server-start and the nbd client node its credentials)."""
        serial = os.path.join(self.tmp, name + '.serial')
        xml = os.path.join(self.tmp, name + '.xml')
        disk = os.path.join(self.tmp, name + '.qcow2')
        disk_dst = os.path.join(self.tmp, name + '-dst.qcow2')
        base = os.path.join(self.tmp, name + '-base.qcow2')
        if inc:
            self.make_base(base)
        for path in (disk, disk_dst):
            backing = ['-b', base, '-F', 'qcow2'] if inc else []
            subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2'] + backing +
                           [path, str(BASE_SECTORS * 512 if inc else DISK_SECTORS * 512)],
                           check=True, timeout=DEADLINE)
        # The guest writes the first DISK_SECTORS only: a base's data lies beyond.
        domain = DOMAIN_XML.format(name=name, mib=128, firmware=FIRMWARE,
                                   append='%s sectors=%d' % (BLK_APPEND, DISK_SECTORS),
                                   emulator=emulator, serial=serial)
        domain = domain.replace('    <controller', DISK_XML.format(disk=disk) + '    <controller', 1)
        if peer:
            # QEMU's virtio-mmio is legacy unless told; the firmware speaks 1.x only.
            domain = domain.replace("<domain type='kvm'>", "<domain type='kvm' xmlns:qemu="
                                    "'http://libvirt.org/schemas/domain/qemu/1.0'>", 1)
            domain = domain.replace('</devices>', '</devices>\n  <qemu:commandline>\n'
                                    "    <qemu:arg value='-global'/>\n"
                                    "    <qemu:arg value='virtio-mmio.force-legacy=false'/>\n"
                                    '  </qemu:commandline>', 1)
        with open(xml, 'w') as f:
            f.write(domain)
        self.virsh('define', xml)
        try:
            self.virsh('start', name)
            self.wait_more_stats(serial, 2)
            before = int(self.stats(serial)[-1]['writes'])
            dst_xml = os.path.join(self.tmp, name + '-dst.xml')
            with open(dst_xml, 'w') as f:
                f.write(self.virsh('dumpxml', '--migratable', name).replace(disk, disk_dst))
            self.virsh('migrate', '--live', '--copy-storage-inc' if inc else '--copy-storage-all',
                       *(['--tls'] if tls else []),
                       '--xml', dst_xml, name, self.uri_dst, '--migrateuri', 'tcp://127.0.0.1')
            if tls:
                self.check_nbd_tls()
            self.assertEqual(self.virsh('domstate', name, uri=self.uri_dst).strip(), 'running')
            last = self.wait_more_stats(serial, 2)
            self.assertGreater(int(last['writes']), before, 'the destination writes on')
            self.virsh('suspend', name, uri=self.uri_dst)
            last = self.stats(serial)[-1]
            self.virsh('destroy', name, uri=self.uri_dst)
        finally:
            self.virsh('destroy', name, ok=False)
            self.virsh('undefine', name, ok=False)
            self.virsh('destroy', name, ok=False, uri=self.uri_dst)
        self.check_disk(disk_dst, last)
        if inc:
            self.check_base_not_copied(disk_dst)
        self.assertEqual(self.log_errors_about(emulator), [])

    def check_nbd_tls(self):
        """The last disk copy ran over TLS: libvirt started the destination's
        NBD server and added the source's nbd client node with tls-creds
        (our binary refuses a plaintext client where the server wants TLS,
        and the mirror would fail)."""
        def last(lv, what):
            sent = [l for l in self.log_text(lv).splitlines()
                    if 'QEMU_MONITOR_SEND_MSG' in l and what in l]
            self.assertTrue(sent, 'libvirt sent no %s' % what)
            return sent[-1]
        self.assertIn('"tls-creds":"', last(self.lv_dst, '"execute":"nbd-server-start"'))
        self.assertIn('"tls-creds":"', last(self.lv, '"driver":"nbd"'))

    def make_base(self, base):
        """A qcow2 base whose sectors past the guest's DISK_SECTORS hold
        BASE_BYTE (written through qemu-io, as a user's template would be)."""
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', base, str(BASE_SECTORS * 512)],
                       check=True, timeout=DEADLINE)
        tail = (BASE_SECTORS - DISK_SECTORS) * 512
        subprocess.run(['qemu-io', '-f', 'qcow2', '-c',
                        'write -q -P %d %d %d' % (BASE_BYTE, DISK_SECTORS * 512, tail), base],
                       check=True, timeout=DEADLINE)

    def check_base_not_copied(self, disk_dst):
        """The base's data reads through the destination's overlay, yet none
        of it was copied into that overlay: only the top moved (sync=top)."""
        with open(disk_dst + '.raw', 'rb') as f:
            f.seek(DISK_SECTORS * 512)
            tail = f.read()
        self.assertEqual(tail, bytes([BASE_BYTE]) * ((BASE_SECTORS - DISK_SECTORS) * 512),
                         'the base reads through the destination overlay')
        out = subprocess.run(['qemu-img', 'map', '--output=json', disk_dst], capture_output=True,
                             text=True, check=True, timeout=DEADLINE).stdout
        top = [e for e in json.loads(out) if e['depth'] == 0 and e['data']]
        self.assertTrue(top, 'the overlay holds the guest\'s writes')
        self.assertLessEqual(max(e['start'] + e['length'] for e in top), DISK_SECTORS * 512,
                             'the base was copied into the overlay: %s' % top)

    def test_storage_copy_ours(self):
        self.run_storage_domain('storage-ours', QEMU, tls=True)

    def test_storage_copy_inc_ours(self):
        self.run_storage_domain('storage-inc-ours', QEMU, inc=True)

    def test_storage_copy_qemu72(self):
        if not os.access(QEMU72, os.X_OK):
            if os.environ.get('VMTEST_FAIL_ON_SKIP'):
                self.fail('QEMU 7.2 is not installed at %s' % QEMU72)
            self.skipTest('QEMU 7.2 is not installed at %s' % QEMU72)
        self.run_storage_domain('storage-qemu72', QEMU72, peer=True)

    def test_storage_copy_inc_qemu72(self):
        if not os.access(QEMU72, os.X_OK):
            if os.environ.get('VMTEST_FAIL_ON_SKIP'):
                self.fail('QEMU 7.2 is not installed at %s' % QEMU72)
            self.skipTest('QEMU 7.2 is not installed at %s' % QEMU72)
        self.run_storage_domain('storage-inc-qemu72', QEMU72, peer=True, inc=True)

    # Not with QEMU 7.2 as the emulator: its virtio-mmio transport is legacy
    # (version 1) unless told otherwise, which libvirt's XML cannot say and
    # the firmware's driver does not speak.
    def test_disk_domain_ours(self):
        self.run_disk_domain('disk-ours', QEMU, pivot=True)

    def test_domain_ours(self):
        self.run_domain('ours', QEMU)

    def test_domain_qemu72(self):
        if not os.access(QEMU72, os.X_OK):
            if os.environ.get('VMTEST_FAIL_ON_SKIP'):
                self.fail('QEMU 7.2 is not installed at %s' % QEMU72)
            self.skipTest('QEMU 7.2 is not installed at %s' % QEMU72)
        self.run_domain('qemu72', QEMU72)


if __name__ == '__main__':
    unittest.main()
