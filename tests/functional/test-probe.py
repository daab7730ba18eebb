#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-probe.py: -machine none and the answers management software probes
the binary for, the way libvirt does it.

The binary is started with libvirt's probe command line (-S -nodefaults
-nographic -machine none,accel=kvm:tcg, a QMP socket, -pidfile and
-daemonize) and asked libvirt's probe commands.  Every device type
qom-list-types lists has its properties from device-list-properties, and
each property with a default is taken by -device on a microvm with that
value (so the list and the parser agree).  -machine none,accel=tcg runs
without KVM; accel=tcg for a real machine, and guest options with none,
are refused with an error. libvirt's domain command line (JSON -object and
-device, a secret, -uuid, -overcommit, -rtc, -boot, -msg, -audiodev) is
taken and shows in query-uuid, query-chardev and qom-list; every value of
those options we cannot honour is refused with the reason; getfd without
an fd, closefd and migrate fd:NAME of unknown names fail cleanly.
query-cpu-model-expansion of host (static, then full, as libvirt asks)
gives the host's identity (/proc/cpuinfo) and exactly the features a vCPU
started with the same properties has (qom-get), named and valued as QEMU
7.2's expansion when it is installed; bad models and properties are refused.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU, SRC_DIR  # noqa: E402
from analyzevm import skip_class_without_kvm  # noqa: E402

sys.path.insert(0, os.path.join(SRC_DIR, 'scripts'))
from qmp import QMP, QMPError  # noqa: E402


def probe_args(sock, pidfile, accel):
    """libvirt 9.0's probe command line (qemuProcessQMPLaunch)."""
    return [QEMU, '-S', '-no-user-config', '-nodefaults', '-nographic',
            '-machine', 'none,accel=' + accel,
            '-qmp', 'unix:%s,server=on,wait=off' % sock,
            '-pidfile', pidfile, '-daemonize']


class Probed:
    """A daemonized -machine none instance and a QMP connection to it."""

    def __init__(self, tmpdir, accel):
        self.sock = os.path.join(tmpdir, accel.replace(':', '-') + '.qmp')
        self.pidfile = os.path.join(tmpdir, accel.replace(':', '-') + '.pid')
        r = subprocess.run(probe_args(self.sock, self.pidfile, accel),
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=DEADLINE)
        if r.returncode != 0:
            raise AssertionError('probe instance failed: %s' % r.stderr.decode())
        # -daemonize returns once the monitor listens and the pidfile is written.
        with open(self.pidfile) as f:
            self.pid = int(f.read().strip())
        self.qmp = QMP(self.sock, timeout=DEADLINE)

    def close(self):
        try:
            self.qmp.cmd('quit')
        except (QMPError, OSError):
            pass
        self.qmp.file.close()
        self.qmp.close()
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        os.kill(self.pid, 9)
        raise AssertionError('the probe instance did not quit')


QEMU72 = os.environ.get('QEMU72_BINARY', '/usr/bin/qemu-system-x86_64')


def qemu72_static_host(tmpdir):
    """QEMU 7.2's static expansion of host (migratable=off), from a -machine none."""
    sock = os.path.join(tmpdir, 'q72.qmp')
    proc = subprocess.Popen([QEMU72, '-S', '-nodefaults', '-display', 'none',
                             '-machine', 'none,accel=kvm',
                             '-qmp', 'unix:%s,server=on,wait=off' % sock],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + DEADLINE
        while not os.path.exists(sock):
            if time.monotonic() > end or proc.poll() is not None:
                raise AssertionError('QEMU 7.2 did not start')
            time.sleep(0.05)
        q = QMP(sock, timeout=DEADLINE)
        r = q.cmd('query-cpu-model-expansion', type='static',
                  model={'name': 'host', 'props': {'migratable': False}})
        q.close()
        return r['model']['props']
    finally:
        proc.kill()
        proc.wait()


def qmp_error(qmp, name, **args):
    """The error text of a command that must fail."""
    try:
        qmp.cmd(name, **args)
    except QMPError as e:
        return str(e)
    raise AssertionError('%s %s succeeded' % (name, args))


class ProbeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-probe')
        cls.tmpdir = tempfile.mkdtemp(prefix='test-probe-')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmpdir, ignore_errors=True)

    def test_libvirt_probe_kvm(self):
        p = Probed(self.tmpdir, 'kvm:tcg')
        try:
            q = p.qmp
            self.assertEqual(q.cmd('query-status')['status'], 'prelaunch')
            self.assertEqual(q.cmd('query-kvm'), {'enabled': True, 'present': True})
            self.assertEqual(q.cmd('query-target'), {'arch': 'x86_64'})
            machines = {m['name']: m for m in q.cmd('query-machines')}
            self.assertEqual(set(machines), {'microvm', 'none'})
            self.assertTrue(machines['microvm']['is-default'])
            self.assertEqual(machines['microvm']['default-ram-id'], 'microvm.ram')
            self.assertNotIn('default-cpu-type', machines['none'])
            cpus = q.cmd('query-cpu-definitions')
            self.assertEqual([c['name'] for c in cpus], ['host', 'max'])
            cpu_props = {p['name'] for p in q.cmd('qom-list-properties', typename='host-x86_64-cpu')}
            self.assertTrue({'migratable', 'arch-capabilities', 'invtsc'} <= cpu_props)
            commands = {c['name'] for c in q.cmd('query-commands')}
            schema = q.cmd('query-qmp-schema')
            in_schema = {e['name'] for e in schema if e['meta-type'] == 'command'}
            self.assertEqual(commands, in_schema)
            # libvirt passes object-add's properties flat (as QEMU 6.0 and later
            # want) only when object-add's qom-type is an enum with 'secret' in it;
            # else it nests them in 'props', which object-add refuses.
            by_name = {e['name']: e for e in schema}
            add_arg = by_name[next(e['arg-type'] for e in schema if e['name'] == 'object-add')]
            qom_type = by_name[next(m['type'] for m in add_arg['members']
                                    if m['name'] == 'qom-type')]
            self.assertEqual(qom_type['meta-type'], 'enum')
            self.assertTrue({'secret', 'tls-creds-x509', 'authz-simple'}
                            <= set(qom_type['values']))
            for c in ('query-machines', 'qom-list-types', 'device-list-properties',
                      'query-command-line-options', 'query-cpu-definitions'):
                self.assertIn(c, commands)
            self.assertEqual(q.cmd('query-tpm-models'), [])
            self.assertEqual(q.cmd('query-tpm-types'), [])
            self.assertIn('SEV is not available', qmp_error(q, 'query-sev-capabilities'))
            self.assertIn('SGX is not available', qmp_error(q, 'query-sgx-capabilities'))
            self.assertIn("Device 'virtio-blk-pci' not found",
                          qmp_error(q, 'device-list-properties', typename='virtio-blk-pci'))
            self.assertIn("Class 'x86_64-cpu-9' not found",
                          qmp_error(q, 'qom-list-properties', typename='x86_64-cpu-9'))
            opts = {o['option']: {p['name']: p['type'] for p in o['parameters']}
                    for o in q.cmd('query-command-line-options')}
            self.assertEqual(opts['machine']['memory-backend'], 'string')
            self.assertEqual(opts['memory']['size'], 'size')
            self.assertIn('invalid option name',
                          qmp_error(q, 'query-command-line-options', option='sandbox'))
            backends = [t['name'] for t in q.cmd('qom-list-types', implements='memory-backend')]
            self.assertEqual(sorted(backends), ['memory-backend-file', 'memory-backend-memfd',
                                                'memory-backend-ram'])
            for b in backends:
                names = [p['name'] for p in q.cmd('qom-list-properties', typename=b)]
                self.assertIn('size', names)
            devices = [t['name'] for t in q.cmd('qom-list-types', implements='device')
                       if not t.get('abstract') and not t['name'].endswith('-cpu')]
            self.assertIn('isa-vga', devices)
            self.props = {d: q.cmd('device-list-properties', typename=d) for d in devices}
        finally:
            p.close()
        self.check_defaults_taken(self.props)

    def check_defaults_taken(self, props):
        """Each device with its listed defaults given explicitly is accepted,
        but PIIX4_PM: listed (as QEMU lists it) for libvirt's <pm> switches,
        which -global takes; a PCI function microvm never has, refused by
        -device in QEMU's words."""
        self.assertEqual(props['PIIX4_PM'], [
            {'name': 'disable_s3', 'type': 'uint8', 'default-value': 0},
            {'name': 'disable_s4', 'type': 'uint8', 'default-value': 0}])
        err = self.refused(['-M', 'microvm', '-nodefaults', '-device', 'PIIX4_PM'])
        self.assertIn("-device PIIX4_PM: Parameter 'driver' expects a pluggable device type", err)
        err = self.refused(['-M', 'microvm', '-nodefaults', '-global', 'PIIX4_PM.disable_s3=256'])
        self.assertIn("Parameter 'disable_s3' expects uint8_t", err)
        for dev, plist in props.items():
            if dev == 'PIIX4_PM':
                continue
            given = ','.join('%s=%s' % (p['name'], json.dumps(p['default-value']))
                             for p in plist if 'default-value' in p)
            if not given:
                continue
            if any(p['name'] == 'chardev' for p in plist):
                given += ',chardev=c0'      # required: a chardev made for it
            if any(p['name'] == 'drive' for p in plist):
                given += ',drive=d0'        # required: a drive made for it
            self.assert_device_accepted(dev, given)

    def assert_device_accepted(self, dev, given):
        sock = os.path.join(self.tmpdir, 'dev.qmp')
        disk = os.path.join(self.tmpdir, 'dev.raw')
        with open(disk, 'wb') as f:
            f.truncate(1 << 20)
        proc = subprocess.Popen([QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', CPU, '-m', '64M',
                                 '-nodefaults', '-no-user-config', '-display', 'none', '-S',
                                 '-kernel', FIRMWARE, '-chardev', 'null,id=c0',
                                 '-drive', 'file=%s,format=raw,if=none,id=d0' % disk,
                                 '-device', dev + ',' + given,
                                 '-qmp', 'unix:%s,server=on,wait=off' % sock],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            q = QMP(sock, timeout=DEADLINE)
            q.cmd('quit')
            q.file.close()
            q.close()
            proc.communicate(timeout=DEADLINE)
        except Exception:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError('-device %s,%s refused: %s' % (dev, given, err.decode()))
        finally:
            if os.path.exists(sock):
                os.unlink(sock)

    def test_cpu_model_expansion(self):
        """host expanded as libvirt asks (static, then full); the answers are what
        a vCPU started with the same properties has (qom-get), the host's
        identity (/proc/cpuinfo), and QEMU 7.2's for the same features."""
        p = Probed(self.tmpdir, 'kvm:tcg')
        try:
            q = p.qmp

            def expand(kind, name, **props):
                model = {'name': name}
                if props:
                    model['props'] = props
                r = q.cmd('query-cpu-model-expansion', type=kind, model=model)['model']
                return r['name'], r['props']

            name, static = expand('static', 'host', migratable=False)
            self.assertEqual(name, 'base')
            name, full = expand('full', 'host')
            self.assertEqual(name, 'host')
            self.assertTrue(full['migratable'])
            self.assertNotIn('migratable', static)
            self.assertFalse(full['invtsc'])        # migratable leaves it out
            self.assertTrue(full['hypervisor'])
            # A static expansion expanded again (libvirt's second step) is itself.
            self.assertEqual(expand('full', 'base', **static), ('base', static))
            self.assertEqual(expand('full', 'max', avx=True)[1]['avx'], True)
            self.assertEqual(expand('static', 'base'),
                             ('base', {k: (False if isinstance(v, bool) else
                                           0 if isinstance(v, int) else '')
                                       for k, v in static.items()}))
            cpuinfo = {}
            with open('/proc/cpuinfo') as f:
                for line in f:
                    k, _, v = line.partition(':')
                    cpuinfo.setdefault(k.strip(), v.strip())
            self.assertEqual(static['vendor'], cpuinfo['vendor_id'])
            self.assertEqual(static['family'], int(cpuinfo['cpu family']))
            self.assertEqual(static['model'], int(cpuinfo['model']))
            self.assertEqual(static['stepping'], int(cpuinfo['stepping']))
            self.assertEqual(static['model-id'].strip(), cpuinfo['model name'])
            for bad, want in (({'name': 'no-such-cpu'}, "CPU model 'no-such-cpu' not found"),
                              ({'name': 'host', 'props': {'nope': True}},
                               "Property 'host-x86_64-cpu.nope' not found"),
                              ({'name': 'base', 'props': {'migratable': True}},
                               "Property 'base-x86_64-cpu.migratable' not found"),
                              ({'name': 'host', 'props': {'avx': 1}},
                               "Invalid parameter type for 'avx', expected: boolean"),
                              ({'name': 'host', 'props': {'family': 'six'}},
                               "Invalid parameter type for 'family', expected: integer"),
                              ({'name': 'host', 'props': {'stepping': 16}},
                               "doesn't take value 16"),
                              ({'name': 'host', 'props': {'vendor': 'Intel'}},
                               "doesn't take value 'Intel'"),
                              ({'name': 'host', 'props': [1]},
                               "Invalid parameter type for 'props', expected: dict")):
                self.assertIn(want, qmp_error(q, 'query-cpu-model-expansion', type='full',
                                              model=bad))
            self.assertIn("Parameter 'type' does not accept value 'partial'",
                          qmp_error(q, 'query-cpu-model-expansion', type='partial',
                                    model={'name': 'host'}))
        finally:
            p.close()
        # The vCPU a domain gets with -cpu host,-arch-capabilities has exactly that;
        # a feature the host lacks, asked for, is left out with QEMU's warning.
        lacking = sorted(k for k, v in full.items() if v is False and k != 'invtsc')
        sock = os.path.join(self.tmpdir, 'cpu.qmp')
        cpu = CPU + (',+' + lacking[0] if lacking else '')
        proc = subprocess.Popen([QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', cpu, '-m', '64M',
                                 '-nodefaults', '-display', 'none', '-S', '-kernel', FIRMWARE,
                                 '-qmp', 'unix:%s,server=on,wait=off' % sock],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            q = QMP(sock, timeout=DEADLINE)
            off = {f.lstrip('-'): False for f in CPU.split(',')[1:] if f.startswith('-')}
            want = q.cmd('query-cpu-model-expansion', type='full',
                         model={'name': 'host', 'props': off})['model']['props']
            for k, v in want.items():
                if isinstance(v, bool):
                    self.assertEqual(q.cmd('qom-get', path='/machine/unattached/device[0]',
                                           property=k), v, k)
            if lacking:
                self.assertFalse(q.cmd('qom-get', path='/machine/unattached/device[0]',
                                       property=lacking[0]))
            q.cmd('quit')
            q.close()
            _, err = proc.communicate(timeout=DEADLINE)
            if lacking:
                self.assertIn("warning: host doesn't support requested feature: ", err.decode())
                self.assertIn('.%s [bit ' % lacking[0], err.decode())
        finally:
            proc.kill()
            proc.wait()
        if os.access(QEMU72, os.X_OK):
            # QEMU 7.2's static expansion of host, for the features we name.
            # Every name is one QEMU 7.2 has, with its value, except topoext: QEMU's
            # host model leaves it out unless asked, our vCPUs get what KVM offers.
            theirs = qemu72_static_host(self.tmpdir)
            for k, v in static.items():
                self.assertIn(k, theirs, '%s: QEMU 7.2 has no such property' % k)
                if k != 'topoext':
                    self.assertEqual(theirs[k], v, 'QEMU 7.2 says %s=%r' % (k, theirs[k]))

    def test_probe_tcg_has_no_kvm(self):
        p = Probed(self.tmpdir, 'tcg')
        try:
            self.assertEqual(p.qmp.cmd('query-kvm'), {'enabled': False, 'present': True})
            self.assertEqual({m['name'] for m in p.qmp.cmd('query-machines')},
                             {'microvm', 'none'})
            # No KVM, no host CPU to describe: an error, not an empty identity.
            self.assertIn("CPU model 'host' requires KVM",
                          qmp_error(p.qmp, 'query-cpu-model-expansion', type='static',
                                    model={'name': 'host'}))
        finally:
            p.close()

    def refused(self, args):
        r = subprocess.run([QEMU] + args, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=DEADLINE)
        self.assertEqual(r.returncode, 1, r.stderr)
        return r.stderr.decode()

    def test_refusals(self):
        err = self.refused(['-machine', 'microvm,accel=tcg', '-nodefaults', '-kernel', FIRMWARE])
        self.assertIn('invalid accelerator tcg', err)
        err = self.refused(['-machine', 'none,accel=hvf', '-nodefaults'])
        self.assertIn('invalid accelerator hvf', err)
        err = self.refused(['-machine', 'none', '-nodefaults', '-m', '1G'])
        self.assertIn('-machine none: -m needs a machine with a guest', err)
        err = self.refused(['-machine', 'none', '-nodefaults', '-device', 'isa-vga'])
        self.assertIn('-machine none: -device needs a machine with a guest', err)
        # libvirt's other options: what cannot be honoured says why.
        guest = ['-M', 'microvm', '-nodefaults', '-display', 'none', '-S', '-kernel', FIRMWARE]
        for args, want in (
                (['-uuid', 'not-a-uuid'], 'Fail to parse UUID string'),
                (['-overcommit', 'cpu-pm=on'], 'cpu-pm=on is not supported'),
                (['-overcommit', 'mem-lock=maybe'], "mem-lock"),
                (['-rtc', 'base=localtime'], 'rtc base=localtime is not supported'),
                (['-rtc', 'driftfix=bogus'], "invalid option value 'bogus'"),
                (['-boot', 'order=c'], "Invalid parameter 'order'"),
                (['-msg', 'colour=on'], "Invalid parameter 'colour'"),
                (['-audiodev', '{"id":"a","driver":"pa"}'], "audiodev driver 'pa' is not supported"),
                (['-audiodev', 'driver=none'], "Parameter 'id' is missing"),
                (['-object', '{"qom-type":"memory-backend-ram","id":"r","size":'],
                 'JSON parse error'),
                (['-object', '{"qom-type":"memory-backend-ram","id":"r","size":[1]}'],
                 "only strings, numbers and booleans"),
                (['-object', 'secret,id=s0'], "Either 'file' or 'data' must be provided"),
                (['-object', 'secret,id=s0,file=/nonexistent/key'], 'Unable to read'),
                (['-device', 'isa-serial,chardev=c0,index=1', '-chardev', 'null,id=c0'],
                 'microvm has one serial port'),
                (['-device', 'isa-serial'], "Property 'isa-serial.chardev' is required"),
                (['-device', 'isa-vga,id=d0', '-device', 'isa-debug-exit,id=d0'],
                 "Duplicate ID 'd0' for device"),
                (['-cpu', 'host,migratable=maybe'], "expects 'on' or 'off'")):
            err = self.refused(guest + args)
            self.assertIn(want, err, args)
        # -msg timestamp=on: QEMU's ISO 8601 stamp before every report.
        err = self.refused(guest + ['-msg', 'timestamp=on', '-rtc', 'base=localtime'])
        self.assertRegex(err, r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z qemu-system-x86_64: ')

    def test_libvirt_style_options(self):
        """JSON -object/-device, a secret, -uuid and libvirt's other options, taken."""
        sock = os.path.join(self.tmpdir, 'lv.qmp')
        key = os.path.join(self.tmpdir, 'master-key.aes')
        with open(key, 'wb') as f:
            f.write(os.urandom(32))
        uuid = 'df14b064-4be7-4106-95e5-56eb359e72c9'
        proc = subprocess.Popen(
            [QEMU, '-name', 'guest=lv,debug-threads=on', '-S',
             '-object', json.dumps({'qom-type': 'secret', 'id': 'masterKey0', 'format': 'raw',
                                    'file': key}),
             '-machine', 'microvm,usb=off,dump-guest-core=off,memory-backend=microvm.ram',
             '-accel', 'kvm', '-cpu', CPU + ',migratable=on', '-m', '64',
             '-object', json.dumps({'qom-type': 'memory-backend-ram', 'id': 'microvm.ram',
                                    'size': 64 << 20}),
             '-overcommit', 'mem-lock=off', '-smp', '1,sockets=1,cores=1,threads=1',
             '-uuid', uuid, '-display', 'none', '-no-user-config', '-nodefaults',
             '-qmp', 'unix:%s,server=on,wait=off' % sock, '-rtc', 'base=utc,driftfix=slew',
             '-no-shutdown',
             '-no-acpi', '-boot', 'strict=on', '-kernel', FIRMWARE, '-append', 'mode=idle mem=8',
             '-chardev', 'null,id=charserial0',
             '-device', json.dumps({'driver': 'isa-serial', 'chardev': 'charserial0',
                                    'id': 'serial0', 'index': 0}),
             '-audiodev', json.dumps({'id': 'audio1', 'driver': 'none'}),
             '-msg', 'timestamp=on'],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            q = QMP(sock, timeout=DEADLINE)
            self.assertEqual(q.cmd('query-uuid'), {'UUID': uuid})
            chardevs = {c['label']: c for c in q.cmd('query-chardev')}
            self.assertTrue(chardevs['charserial0']['frontend-open'])
            self.assertEqual(chardevs['charserial0']['filename'], 'null')
            peripheral = {p['name']: p['type'] for p in q.cmd('qom-list', path='/machine/peripheral')}
            self.assertEqual(peripheral.get('serial0'), 'child<isa-serial>')
            self.assertEqual(q.cmd('qom-get', path='/machine/unattached/device[0]',
                                   property='migratable'), True)
            self.assertIn('No file descriptor supplied via SCM_RIGHTS',
                          qmp_error(q, 'getfd', fdname='migrate'))
            self.assertIn("File descriptor named 'x' not found", qmp_error(q, 'closefd', fdname='x'))
            self.assertIn("File descriptor named 'nope' has not been found",
                          qmp_error(q, 'migrate', uri='fd:nope'))
            q.cmd('quit')
            q.file.close()
            q.close()
            proc.communicate(timeout=DEADLINE)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


if __name__ == '__main__':
    unittest.main()
