# SPDX-License-Identifier: GPL-2.0-or-later
"""Certificates for the TLS tests and benchmarks, made with GnuTLS's certtool the way
QEMU's documentation shows (a CA, then server and client certificates it
signs), each set in a directory with QEMU's file names.

    dirs = make_cert_dirs(tmp)      # {name: directory}
    dirs['server']   ca-cert.pem, server-cert.pem, server-key.pem (localhost, 127.0.0.1)
    dirs['client']   ca-cert.pem, client-cert.pem, client-key.pem (CN=client.example)
    dirs['client-nocert']           ca-cert.pem only
    dirs['client-otherca']          a client whose CA is another one (trusts no server of ours)
    dirs['client-signed-otherca']   a client certificate another CA signed
    dirs['server-expired'], dirs['server-notyet']   dates in the past / future
    dirs['psk-server'], dirs['psk-client'], dirs['psk-client-wrong']   keys.psk
    dirs['both']     a server's and a client's files in one directory (libvirt's
                     migrate_tls_x509_cert_dir, migbench: either end of a migration)
"""

import os
import shutil
import subprocess

CLIENT_DN = 'C=GB,O=Test,CN=client.example'


def certtool():
    return shutil.which('certtool')


def _run(*args):
    subprocess.run(['certtool'] + list(args), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def _template(path, lines):
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path


def _ca(work, name):
    key = os.path.join(work, name + '-key.pem')
    cert = os.path.join(work, name + '-cert.pem')
    _run('--generate-privkey', '--outfile', key)
    _run('--generate-self-signed', '--load-privkey', key, '--outfile', cert, '--template',
         _template(os.path.join(work, name + '.info'),
                   ['cn = %s' % name, 'ca', 'cert_signing_key', 'expiration_days = 3650']))
    return key, cert


def _signed(work, ca, name, lines, out_dir, role):
    """A key and a certificate @ca signs, as DIR/{role}-key.pem and {role}-cert.pem."""
    os.makedirs(out_dir, exist_ok=True)
    key = os.path.join(out_dir, role + '-key.pem')
    cert = os.path.join(out_dir, role + '-cert.pem')
    _run('--generate-privkey', '--outfile', key)
    _run('--generate-certificate', '--load-privkey', key, '--load-ca-certificate', ca[1],
         '--load-ca-privkey', ca[0], '--outfile', cert, '--template',
         _template(os.path.join(work, name + '.info'), lines))


def _ca_copy(ca, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    shutil.copy(ca[1], os.path.join(out_dir, 'ca-cert.pem'))
    return out_dir


SERVER = ['organization = Test', 'cn = localhost', 'dns_name = localhost',
          'ip_address = 127.0.0.1', 'tls_www_server', 'encryption_key', 'signing_key']
CLIENT = ['country = GB', 'organization = Test', 'cn = client.example', 'tls_www_client',
          'encryption_key', 'signing_key']


def make_cert_dirs(tmp):
    work = os.path.join(tmp, 'ca-work')
    os.makedirs(work, exist_ok=True)
    ca = _ca(work, 'ca')
    other = _ca(work, 'other-ca')
    d = {}

    def add(name, ca_for_dir):
        d[name] = _ca_copy(ca_for_dir, os.path.join(tmp, name))
        return d[name]

    _signed(work, ca, 'server', SERVER + ['expiration_days = 365'], add('server', ca), 'server')
    _signed(work, ca, 'client', CLIENT + ['expiration_days = 365'], add('client', ca), 'client')
    add('client-nocert', ca)
    _signed(work, other, 'client-o', CLIENT + ['expiration_days = 365'],
            add('client-otherca', other), 'client')
    _signed(work, other, 'client-so', CLIENT + ['expiration_days = 365'],
            add('client-signed-otherca', ca), 'client')
    _signed(work, ca, 'server-expired', SERVER + [
        'activation_date = "2020-01-01 00:00:00"', 'expiration_date = "2021-01-01 00:00:00"'],
        add('server-expired', ca), 'server')
    _signed(work, ca, 'server-notyet', SERVER + [
        'activation_date = "2090-01-01 00:00:00"', 'expiration_date = "2091-01-01 00:00:00"'],
        add('server-notyet', ca), 'server')
    both = add('both', ca)
    for role in ('server', 'client'):
        for part in ('cert', 'key'):
            shutil.copy(os.path.join(d[role], '%s-%s.pem' % (role, part)), both)
    key = 'f3a9c1' * 10 + 'ab12'
    for name, line in (('psk-server', 'qemu:' + key), ('psk-client', 'qemu:' + key),
                       ('psk-client-wrong', 'qemu:' + '00' * 32)):
        os.makedirs(os.path.join(tmp, name), exist_ok=True)
        with open(os.path.join(tmp, name, 'keys.psk'), 'w') as f:
            f.write(line + '\n')
        d[name] = os.path.join(tmp, name)
    return d
