#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-migration-tls.py: live migration over TLS, and every refusal.

Certificates are made with certtool as QEMU's documentation shows
(tlscerts.py). Each connection goes through a forwarder (tamperproxy.py)
that keeps what the source sent, as tcpdump of the port would: the first
byte must be a TLS handshake record and neither the stream's magic nor
the vmdesc's JSON may ever cross in the clear.

Refusals: each fails on the source with a clear error while its guest
verifies on, the destination says why on its side and never runs the
guest; the destination keeps listening, so the real source migrates to it
afterwards (QEMU 7.2's destination gives up after a failed stream).

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE  # noqa: E402
from analyzetest import SRC_DIR  # noqa: E402
from analyzevm import VM, QMPError, skip_class_without_kvm, free_port  # noqa: E402
from tamperproxy import TamperProxy  # noqa: E402

sys.path.insert(0, os.path.join(SRC_DIR, 'scripts'))
import tlscerts  # noqa: E402

MEM_MB = 128
APPEND = 'mode=verify mem=64'
# Never in the clear: the stream's magic and version, the ram section's name
# (its length byte, "ram", instance 0), the vmdesc's JSON. Each is at least
# 8 bytes: a 4-byte marker turns up by chance in a few hundred MB of
# ciphertext once in ~16 runs (n / 2^32), and CI saw it.
MARKERS = (b'QEVM\x00\x00\x00\x03', b'\x03ram\x00\x00\x00\x00', b'vmsd_name')
# What the side that did not refuse reads: the refusing side's alert.
ALERT = 'A TLS fatal alert has been received'


class TLSCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-migration-tls')
        if not tlscerts.certtool():
            msg = 'certtool is missing (Debian package gnutls-bin)'
            if os.environ.get('VMTEST_FAIL_ON_SKIP'):
                raise AssertionError('test-migration-tls cannot run: ' + msg)
            print('SKIP test-migration-tls: ' + msg, file=sys.stderr)
            raise unittest.SkipTest(msg)
        cls.tmp = tempfile.mkdtemp(prefix='qemu-mig-tls-')
        cls.dirs = tlscerts.make_cert_dirs(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.vms = []
        self.proxies = []

    def tearDown(self):
        for p in self.proxies:
            p.close()
        for vm in self.vms:
            vm.shutdown()

    # ---- helpers ----

    def creds(self, kind, name, endpoint, **props):
        o = '%s,id=tls0,dir=%s,endpoint=%s' % (kind, self.dirs[name], endpoint)
        return o + ''.join(',%s=%s' % (k.replace('_', '-'), v) for k, v in props.items())

    def source(self, creds=None, extra=()):
        args = list(extra)
        if creds:
            args += ['-object', creds]
        vm = VM(self.tmp, 'src%d' % len(self.vms), mem_mb=MEM_MB, append=APPEND, extra=args)
        self.vms.append(vm)
        vm.ready()
        vm.wait_serial(r'PASS n=2\b')
        if creds:
            vm.qmp.cmd('migrate-set-parameters', **{'tls-creds': 'tls0'})
        return vm

    def dest(self, creds=None, authz=None, caps=(), extra=()):
        args = ['-incoming', 'defer'] + list(extra)
        if creds:
            args += ['-object', creds]
        if authz:
            args += ['-object', authz]
        vm = VM(self.tmp, 'dst%d' % len(self.vms), mem_mb=MEM_MB, append=APPEND, extra=args)
        self.vms.append(vm)
        if caps:
            vm.qmp.cmd('migrate-set-capabilities',
                       capabilities=[{'capability': c, 'state': True} for c in caps])
        params = {}
        if creds:
            params['tls-creds'] = 'tls0'
        if authz:
            params['tls-authz'] = 'auth0'
        if params:
            vm.qmp.cmd('migrate-set-parameters', **params)
        vm.port = free_port()
        vm.qmp.cmd('migrate-incoming', uri='tcp:127.0.0.1:%d' % vm.port)
        return vm

    def proxy(self, dst, **kw):
        p = TamperProxy(dst.port, markers=MARKERS, **kw)
        self.proxies.append(p)
        return p

    def migrate(self, src, uri, caps=(), params=None):
        if caps:
            src.qmp.cmd('migrate-set-capabilities',
                        capabilities=[{'capability': c, 'state': True} for c in caps])
        # Unlimited unless a test paces it: at QEMU's default 128 MiB/s a
        # guest that rewrites its 64 MiB faster (this AMD host's does) never
        # fits 300 ms, and what these tests check is the channel, not that.
        src.qmp.cmd('migrate-set-parameters', **dict({'downtime-limit': 300,
                                                      'max-bandwidth': 1 << 40},
                                                     **(params or {})))
        src.qmp.cmd('migrate', uri=uri)

    def wait_end(self, src, dst=None):
        end = time.monotonic() + DEADLINE
        while True:
            info = src.qmp.cmd('query-migrate')
            if info.get('status') in ('completed', 'failed', 'cancelled'):
                return info
            if time.monotonic() > end:
                # Which side stopped: a destination alive and silent, or gone?
                dst_state = ('exited %s' % dst.proc.returncode if dst.proc.poll() is not None
                             else 'alive') if dst else '-'
                raise AssertionError('migration did not end: %s; destination %s, its log: %s'
                                     % (info, dst_state, dst.log_tail() if dst else ''))
            time.sleep(0.05)

    def assert_moved(self, src, dst):
        info = self.wait_end(src)
        self.assertEqual(info['status'], 'completed', '%s; src log: %s; dst log: %s'
                         % (info, src.log_tail(), dst.log_tail()))
        end = time.monotonic() + DEADLINE
        while dst.qmp.cmd('query-status')['status'] != 'running':
            self.assertLess(time.monotonic(), end, 'destination never ran')
            time.sleep(0.05)
        n = len(dst.serial_text())
        dst.wait_serial(r'PASS n=\d+')
        # Two more verified passes after the move, and no FAIL anywhere.
        text = dst.serial_text()
        deadline = time.monotonic() + DEADLINE
        while text[n:].count('PASS') < 2:
            self.assertLess(time.monotonic(), deadline, 'destination guest stalled')
            time.sleep(0.1)
            text = dst.serial_text()
        self.assertNotIn('FAIL', text)

    def assert_refused(self, src, dst, src_msg, dst_msg):
        info = self.wait_end(src, dst)
        self.assertEqual(info['status'], 'failed', info)
        if src_msg:
            # One text, or any of several where the order of two events decides.
            wants = (src_msg,) if isinstance(src_msg, str) else src_msg
            self.assertTrue(any(w in info.get('error-desc', '') for w in wants),
                            'none of %r in %s' % (wants, info))
        # The source guest verifies on.
        self.assertEqual(src.qmp.cmd('query-status')['status'], 'running')
        n = src.serial_text().count('PASS')
        end = time.monotonic() + DEADLINE
        while src.serial_text().count('PASS') < n + 2:
            self.assertLess(time.monotonic(), end, 'source guest stalled after the refusal')
            time.sleep(0.1)
        self.assertNotIn('FAIL', src.serial_text())
        if dst_msg:
            end = time.monotonic() + DEADLINE
            while dst_msg not in dst.log_tail():
                self.assertLess(time.monotonic(), end,
                                'destination did not say %r: %s' % (dst_msg, dst.log_tail()))
                time.sleep(0.05)
        # The destination never ran the guest (it may have given up, as a plaintext one does).
        if dst.proc.poll() is None:
            self.assertEqual(dst.qmp.cmd('query-status')['status'], 'inmigrate')

    def assert_clear_of_plaintext(self, p, nconns):
        first = p.first_bytes()
        self.assertEqual(len(first), nconns, 'connections: %d' % len(first))
        for b in first:
            # A TLS handshake record: content type 22, version 3.x.
            self.assertGreaterEqual(len(b), 3)
            self.assertEqual(b[0], 0x16, b[:16])
            self.assertEqual(b[1], 0x03, b[:16])
        for m in MARKERS:
            self.assertFalse(p.seen(m), '%r crossed in the clear' % m)


class TestTLSMigration(TLSCase):
    def test_markers_cross_plaintext(self):
        # The control for assert_clear_of_plaintext: without TLS the proxy
        # does see every marker, so their absence above means something.
        dst = self.dest()
        src = self.source()
        p = self.proxy(dst)
        self.migrate(src, 'tcp:127.0.0.1:%d' % p.port)
        self.assert_moved(src, dst)
        for m in MARKERS:
            self.assertTrue(p.seen(m), '%r not seen in a plaintext stream' % m)

    def test_x509_precopy(self):
        dst = self.dest(self.creds('tls-creds-x509', 'server', 'server', verify_peer='on'))
        src = self.source(self.creds('tls-creds-x509', 'client', 'client'))
        p = self.proxy(dst)
        # The name checked is the URI's host: the proxy listens on 127.0.0.1 too.
        self.migrate(src, 'tcp:127.0.0.1:%d' % p.port)
        self.assert_moved(src, dst)
        self.assert_clear_of_plaintext(p, 1)

    def test_x509_multifd(self):
        # The stream and two multifd channels, each its own TLS session.
        dst = self.dest(self.creds('tls-creds-x509', 'server', 'server'), caps=['multifd'])
        dst.qmp.cmd('migrate-set-parameters', **{'multifd-channels': 2})
        src = self.source(self.creds('tls-creds-x509', 'client', 'client'))
        src.qmp.cmd('migrate-set-parameters', **{'multifd-channels': 2})
        p = self.proxy(dst)
        self.migrate(src, 'tcp:127.0.0.1:%d' % p.port, caps=['multifd'])
        self.assert_moved(src, dst)
        self.assert_clear_of_plaintext(p, 3)

    def test_postcopy_preempt(self):
        caps = ['postcopy-ram', 'postcopy-preempt']
        dst = self.dest(self.creds('tls-creds-x509', 'server', 'server'), caps=caps)
        src = self.source(self.creds('tls-creds-x509', 'client', 'client'))
        p = self.proxy(dst)
        self.migrate(src, 'tcp:127.0.0.1:%d' % p.port, caps=caps,
                     params={'max-bandwidth': 8 << 20})
        end = time.monotonic() + DEADLINE
        while src.qmp.cmd('query-migrate').get('status') != 'active':
            self.assertLess(time.monotonic(), end)
            time.sleep(0.05)
        src.qmp.cmd('migrate-start-postcopy')
        self.assert_moved(src, dst)
        self.assert_clear_of_plaintext(p, 2)

    def recover(self, caps):
        """Postcopy cut after the switchover, then migrate-recover and a
        resume: the new connections handshake too."""
        dst = self.dest(self.creds('tls-creds-x509', 'server', 'server'), caps=caps)
        src = self.source(self.creds('tls-creds-x509', 'client', 'client'))
        p = self.proxy(dst)
        self.migrate(src, 'tcp:127.0.0.1:%d' % p.port, caps=caps,
                     params={'max-bandwidth': 8 << 20, 'max-postcopy-bandwidth': 4 << 20})
        self.wait_status(src, ('active',))
        src.qmp.cmd('migrate-start-postcopy')
        self.wait_status(dst, ('postcopy-active',))
        end = time.monotonic() + DEADLINE
        while src.qmp.cmd('query-migrate').get('ram', {}).get('postcopy-bytes', 0) < 2 << 20:
            self.assertLess(time.monotonic(), end, 'postcopy sent nothing')
            time.sleep(0.05)
        p.cut()
        self.wait_status(src, ('postcopy-paused',))
        self.wait_status(dst, ('postcopy-paused',))
        port = free_port()
        dst.qmp.hmp('migrate_recover tcp:127.0.0.1:%d' % port)
        p2 = TamperProxy(port, markers=MARKERS)
        self.proxies.append(p2)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % p2.port, resume=True)
        src.qmp.cmd('migrate-set-parameters', **{'max-postcopy-bandwidth': 0})
        self.assert_moved(src, dst)
        self.assert_clear_of_plaintext(p2, 2 if 'postcopy-preempt' in caps else 1)

    def wait_status(self, vm, want):
        end = time.monotonic() + DEADLINE
        while True:
            st = vm.qmp.cmd('query-migrate').get('status')
            if st in want:
                return st
            self.assertNotIn(st, ('failed', 'cancelled', 'completed'),
                             'waiting for %s: %s' % (want, vm.log_tail()))
            self.assertLess(time.monotonic(), end, 'status %s, not %s' % (st, want))
            time.sleep(0.05)

    def test_postcopy_recovery(self):
        self.recover(['postcopy-ram'])

    def test_postcopy_preempt_recovery(self):
        self.recover(['postcopy-ram', 'postcopy-preempt'])

    def test_psk(self):
        dst = self.dest(self.creds('tls-creds-psk', 'psk-server', 'server'))
        src = self.source(self.creds('tls-creds-psk', 'psk-client', 'client'))
        self.migrate(src, 'tcp:127.0.0.1:%d' % dst.port)
        self.assert_moved(src, dst)

    def test_authz_allows(self):
        dst = self.dest(self.creds('tls-creds-x509', 'server', 'server'),
                        authz='authz-simple,id=auth0,identity=%s'
                        % tlscerts.CLIENT_DN.replace(',', ',,'))
        src = self.source(self.creds('tls-creds-x509', 'client', 'client'))
        self.migrate(src, 'tcp:127.0.0.1:%d' % dst.port)
        self.assert_moved(src, dst)

    def test_hmp_parameters(self):
        dst = self.dest(self.creds('tls-creds-x509', 'server', 'server'))
        src = self.source(extra=['-object', self.creds('tls-creds-x509', 'client', 'client')])
        src.qmp.hmp('migrate_set_parameter tls-creds tls0')
        src.qmp.hmp('migrate_set_parameter tls-hostname localhost')
        out = src.qmp.hmp('info migrate_parameters')
        self.assertIn("tls-creds: 'tls0'", out)
        self.assertIn("tls-hostname: 'localhost'", out)
        # Unpaced, as self.migrate's hops (its comment says why).
        src.qmp.cmd('migrate-set-parameters', **{'downtime-limit': 300, 'max-bandwidth': 1 << 40})
        src.qmp.hmp('migrate -d tcp:127.0.0.1:%d' % dst.port)
        self.assert_moved(src, dst)


class TestTLSRefusals(TLSCase):
    X509_SRV = ('tls-creds-x509', 'server', 'server')

    def refused(self, dst_creds, src_creds, src_msg, dst_msg, params=None, authz=None, **proxy):
        dst = self.dest(dst_creds, authz=authz)
        src = self.source(src_creds)
        uri = 'tcp:127.0.0.1:%d' % (self.proxy(dst, **proxy).port if proxy else dst.port)
        self.migrate(src, uri, params=params)
        self.assert_refused(src, dst, src_msg, dst_msg)
        return src, dst

    def then_real_source_moves(self, dst):
        """The listener outlived the refused peer: the real source gets through."""
        src = self.source(self.creds('tls-creds-x509', 'client', 'client'))
        self.migrate(src, 'tcp:127.0.0.1:%d' % dst.port)
        self.assert_moved(src, dst)

    def test_wrong_ca(self):
        _, dst = self.refused(self.creds(*self.X509_SRV),
                              self.creds('tls-creds-x509', 'client-otherca', 'client'),
                              "The certificate hasn't got a known issuer",
                              'No certificate was found')
        self.then_real_source_moves(dst)

    def test_client_signed_by_other_ca(self):
        _, dst = self.refused(self.creds(*self.X509_SRV, verify_peer='on'),
                              # Loads only unchecked: our own CA would not sign it.
                              self.creds('tls-creds-x509', 'client-signed-otherca', 'client',
                                         sanity_check='off'),
                              # The server names the CAs it trusts; a client with none
                              # of them sends no certificate (QEMU 7.2 says the same).
                              # The source reads the alert, or writes into the reset first.
                              (ALERT, 'Connection reset by peer'), 'No certificate was found')
        self.then_real_source_moves(dst)

    def test_wrong_hostname(self):
        _, dst = self.refused(self.creds(*self.X509_SRV),
                              self.creds('tls-creds-x509', 'client', 'client'),
                              'Certificate does not match the hostname other.example', ALERT,
                              params={'tls-hostname': 'other.example'})
        self.then_real_source_moves(dst)

    def test_expired(self):
        self.refused(self.creds('tls-creds-x509', 'server-expired', 'server', sanity_check='off'),
                     self.creds('tls-creds-x509', 'client', 'client'),
                     'The certificate has expired', ALERT)

    def test_not_yet_valid(self):
        self.refused(self.creds('tls-creds-x509', 'server-notyet', 'server', sanity_check='off'),
                     self.creds('tls-creds-x509', 'client', 'client'),
                     'The certificate is not yet activated', ALERT)

    def test_client_without_certificate(self):
        _, dst = self.refused(self.creds(*self.X509_SRV, verify_peer='on'),
                              self.creds('tls-creds-x509', 'client-nocert', 'client'),
                              (ALERT, 'Connection reset by peer'), 'No certificate was found')
        self.then_real_source_moves(dst)

    def test_authz_denies(self):
        _, dst = self.refused(self.creds(*self.X509_SRV),
                              self.creds('tls-creds-x509', 'client', 'client'),
                              ('Access was denied', 'Connection reset by peer'), 'is denied',
                              authz='authz-simple,id=auth0,identity=CN=someone-else')

    def test_plaintext_source(self):
        _, dst = self.refused(self.creds(*self.X509_SRV), None,
                              'the destination closed the connection', 'TLS handshake failed')
        self.then_real_source_moves(dst)

    def test_plaintext_destination(self):
        self.refused(None, self.creds('tls-creds-x509', 'client', 'client'),
                     'TLS handshake failed', 'Not a migration stream')

    def test_handshake_cut(self):
        # The server's hello is cut half-way: both sides fail, nothing moves.
        _, dst = self.refused(self.creds(*self.X509_SRV),
                              self.creds('tls-creds-x509', 'client', 'client'),
                              'TLS handshake failed', 'TLS handshake failed', cut_s2c_after=300)
        self.then_real_source_moves(dst)

    def test_garbage_after_handshake(self):
        # One byte flipped 1 MiB into the stream: a record fails its integrity check.
        self.refused(self.creds(*self.X509_SRV),
                     self.creds('tls-creds-x509', 'client', 'client'),
                     'Cannot write to TLS channel', 'Cannot read from TLS channel',
                     flip_c2s_at=1 << 20)

    def test_psk_wrong_key(self):
        self.refused(self.creds('tls-creds-psk', 'psk-server', 'server'),
                     self.creds('tls-creds-psk', 'psk-client-wrong', 'client'),
                     'TLS handshake failed', 'TLS handshake failed')

    def test_transports_without_peer(self):
        src = self.source(self.creds('tls-creds-x509', 'client', 'client'))
        for uri in ('exec:cat > /dev/null', 'file:' + os.path.join(self.tmp, 'x.mig')):
            with self.assertRaises(QMPError) as cm:
                src.qmp.cmd('migrate', uri=uri)
            self.assertIn('TLS needs a connection to a peer', str(cm.exception))
        with self.assertRaises(QMPError) as cm:
            src.qmp.cmd('migrate', uri='unix:' + os.path.join(self.tmp, 'nowhere.sock'))
        self.assertIn('No hostname for certificate validation', str(cm.exception))
        src.qmp.cmd('migrate-set-parameters', **{'tls-creds': 'nope'})
        with self.assertRaises(QMPError) as cm:
            src.qmp.cmd('migrate', uri='tcp:127.0.0.1:1')
        self.assertIn("No TLS credentials with id 'nope'", str(cm.exception))

    def test_server_creds_on_source(self):
        src = self.source(self.creds(*self.X509_SRV))
        with self.assertRaises(QMPError) as cm:
            src.qmp.cmd('migrate', uri='tcp:127.0.0.1:1')
        self.assertIn('Expected TLS credentials for a client endpoint', str(cm.exception))

    def test_object_in_use(self):
        # A migration holds its credentials: object-del refuses until it ends.
        dst = self.dest(self.creds(*self.X509_SRV))
        src = self.source(self.creds('tls-creds-x509', 'client', 'client'))
        self.migrate(src, 'tcp:127.0.0.1:%d' % dst.port, params={'max-bandwidth': 4 << 20})
        with self.assertRaises(QMPError) as cm:
            src.qmp.cmd('object-del', id='tls0')
        self.assertIn('in use', str(cm.exception))
        src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': 1 << 40})
        self.assert_moved(src, dst)


if __name__ == '__main__':
    unittest.main(verbosity=2)
