#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""cpu-interop-check: do QEMU and we read each other's vCPU sections?

  cpu-interop-check.py [--build DIR] [--qemu BINARY]...

For each QEMU binary (default: /usr/bin/qemu-system-x86_64 and
/opt/qemu-10.0/bin/qemu-system-x86_64, those present), with the verify
firmware running in long mode on -M microvm:

 1. our stream's vmdesc of "cpu_common" and "cpu" must equal QEMU's
    (scripts/vmdesc-compare.py);
 2. QEMU -> ours: QEMU's two sections, spliced into a stream of ours in
    place of our own, are loaded by our binary (-incoming, paused), which
    saves again; the values must come back as QEMU sent them;
 3. ours -> QEMU: the same the other way, QEMU loading our sections in a
    stream of its own.

Values that may differ, and why: interrupt_request (QEMU-internal, we
send 0), env.tsc (the TSC runs on between the saves), env.mtrr_var (QEMU
writes variable-range masks with bits above our vCPU's physical address
width, which KVM refuses; and QEMU rewrites masks it loads). Needs
/dev/kvm; exit status 0 when all match, 1 otherwise, 77 without KVM or
QEMU.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SECTIONS = ('cpu_common', 'cpu')
MAY_DIFFER = {'interrupt_request', 'env.tsc', 'env.mtrr_var'}
QEMUS = ('/usr/bin/qemu-system-x86_64', '/opt/qemu-10.0/bin/qemu-system-x86_64')


def analyze(path, what):
    out = subprocess.run([sys.executable, os.path.join(HERE, 'analyze-migration.py'),
                          '-f', path, '-d', what], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run_vm(binary, firmware, out, incoming=None):
    """Start a VM (running, or paused loading @incoming), then save it to @out."""
    args = [binary, '-M', 'microvm', '-cpu', 'host,-arch-capabilities', '-m', '64M',
            '-nodefaults', '-display', 'none', '-enable-kvm', '-kernel', firmware,
            '-append', 'mode=verify mem=16', '-qmp', 'stdio']
    if incoming:
        args += ['-incoming', 'exec:cat ' + incoming]
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)

    def cmd(c, **a):
        p.stdin.write(json.dumps({'execute': c, 'arguments': a} if a else {'execute': c}) + '\n')
        p.stdin.flush()

    cmd('qmp_capabilities')
    time.sleep(2)               # the guest reaches long mode, or the load ends
    cmd('stop')
    cmd('migrate', uri='exec:cat > ' + out)
    time.sleep(3)
    cmd('quit')
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    if not os.path.exists(out) or not analyze(out, 'summary').get('complete'):
        raise RuntimeError('%s: no complete stream saved: %s' % (binary, err.strip()))


def splice(into, frm, out):
    """@into's records, with its cpu sections replaced by @frm's (section ids kept)."""
    ri, rf = analyze(into, 'records')['records'], analyze(frm, 'records')['records']
    bi, bf = open(into, 'rb').read(), open(frm, 'rb').read()
    theirs = {}
    for i, r in enumerate(rf):
        if r['type'] == 'full' and r.get('idstr') in SECTIONS:
            theirs[r['idstr']] = bytearray(bf[r['offset']:rf[i + 1]['offset']])
    res, last = bytearray(), 0
    for i, r in enumerate(ri):
        if r['type'] == 'full' and r.get('idstr') in SECTIONS:
            rec = theirs[r['idstr']]
            sid = r['id'].to_bytes(4, 'big')
            rec[1:5] = sid          # FULL record: type, section id, ...
            assert rec[-5] == 0x7e  # ... footer: 0x7e, section id
            rec[-4:] = sid
            res += bi[last:r['offset']] + rec
            last = ri[i + 1]['offset']
    res += bi[last:]
    with open(out, 'wb') as f:
        f.write(res)


def values(path):
    devs = analyze(path, 'state')['devices']
    return [devs['%s (0)' % s] for s in SECTIONS]


def compare(sent, got, what):
    bad = []
    for a, b in zip(values(sent), values(got)):
        for k in a:
            if k not in MAY_DIFFER and a[k] != b.get(k):
                bad.append('%s: %s sent %s, came back %s' % (what, k, json.dumps(a[k])[:120],
                                                               json.dumps(b.get(k))[:120]))
    return bad


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--build', default=os.path.join(HERE, '..', 'build'))
    p.add_argument('--qemu', action='append')
    args = p.parse_args(argv)
    ours = os.path.join(args.build, 'qemu-system-x86_64')
    firmware = os.path.join(args.build, 'tests', 'guest', 'workload.elf')
    qemus = [q for q in (args.qemu or QEMUS) if os.access(q, os.X_OK)]
    if not os.access('/dev/kvm', os.R_OK | os.W_OK) or not qemus:
        print('SKIP: needs /dev/kvm and a QEMU binary')
        return 77
    bad = []
    with tempfile.TemporaryDirectory() as d:
        mine = os.path.join(d, 'ours.mig')
        run_vm(ours, firmware, mine)
        for n, q in enumerate(qemus):
            theirs, t = os.path.join(d, 'q%d.mig' % n), os.path.join(d, 't%d' % n)
            run_vm(q, firmware, theirs)
            r = subprocess.run([sys.executable, os.path.join(HERE, 'vmdesc-compare.py'),
                                '--strict', '--sections', ','.join(SECTIONS), mine, theirs],
                               capture_output=True, text=True)
            print(r.stdout, end='')
            if r.returncode:
                bad.append('%s: vmdesc differs' % q)
            splice(mine, theirs, t + '-in-ours.mig')
            run_vm(ours, firmware, t + '-ours-out.mig', incoming=t + '-in-ours.mig')
            bad += compare(theirs, t + '-ours-out.mig', q + ' -> ours')
            splice(theirs, mine, t + '-in-qemu.mig')
            run_vm(q, firmware, t + '-qemu-out.mig', incoming=t + '-in-qemu.mig')
            bad += compare(mine, t + '-qemu-out.mig', 'ours -> ' + q)
            print('%s: both ways checked' % q)
    for b in bad:
        print('DIFF ' + b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
