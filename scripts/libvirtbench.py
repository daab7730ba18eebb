# SPDX-License-Identifier: GPL-2.0-or-later
"""migbench's libvirt scenario: virsh save, restore and migrate --live.

Two private libvirtds (tests/libvirt/lvenv.sh: every libvirt directory
bind-mounted from a scratch directory; the second has its own host name
and UUID, so that libvirt migrates to it) run a microvm domain booting the
verify firmware, with our binary and the peer as <emulator> in turn, round
by round. Each round and binary:

  virsh start; the firmware's 2nd PASS line
  virsh save (timed; the image's size; from libvirtd's log, the time from
  its migrate command to the completed event: the binary's part of it)
  sync, page cache dropped; virsh restore (timed), then a new PASS line
  virsh migrate --live to the second libvirtd (timed), then a new PASS line
  virsh destroy there

A FAIL line from the verify firmware (a page lost or misplaced by the save,
the restore or the migration) ends the run with an error. Needs root.
"""

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import snapbench

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LVENV = os.path.join(TOP, "tests", "libvirt", "lvenv.sh")
FIRMWARE = os.path.join(TOP, "build", "tests", "guest", "workload.elf")
DEADLINE = 300

DOMAIN_XML = """<domain type='kvm'>
  <name>{name}</name>
  <memory unit='MiB'>{mib}</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='microvm'>hvm</type>
    <kernel>{firmware}</kernel>
    <cmdline>{append}</cmdline>
  </os>
  <features>
    <acpi/>
  </features>
  <cpu mode='host-passthrough'>
    <feature policy='disable' name='arch-capabilities'/>
  </cpu>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <emulator>{emulator}</emulator>
    <serial type='file'>
      <source path='{serial}'/>
    </serial>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
</domain>
"""


def _mib(mem):
    n, unit = int(mem[:-1]), mem[-1]
    return n * 1024 if unit == "G" else n


class Libvirtds:
    """The two private daemons, under one scratch directory."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="libvirtbench-")
        self.src = os.path.join(self.tmp, "lv")
        self.dst = os.path.join(self.tmp, "lv-dst")
        subprocess.run([LVENV, "start", self.src], check=True, timeout=60)
        subprocess.run([LVENV, "start", self.dst, "lvdst"], check=True, timeout=60)
        self.uri = "qemu:///system?socket=%s/run/libvirt-sock" % self.src
        self.uri_dst = "qemu+unix:///system?socket=%s/run/libvirt-sock" % self.dst

    def virsh(self, *args, uri=None, ok=True):
        r = subprocess.run(["virsh", "-c", uri or self.uri] + list(args),
                           capture_output=True, timeout=DEADLINE)
        out = r.stdout.decode() + r.stderr.decode()
        if ok and r.returncode:
            raise RuntimeError("virsh %s: %s" % (" ".join(args), out.strip()))
        return out

    def timed(self, *args, uri=None):
        t0 = time.monotonic()
        self.virsh(*args, uri=uri)
        return time.monotonic() - t0

    def log_mark(self):
        """Where libvirtd's log ends now, for stream_seconds()."""
        return os.path.getsize(os.path.join(self.src, "log", "libvirtd.log"))

    def stream_seconds(self, mark):
        """From libvirt's migrate command to the migration's completed event,
        in the log written since @mark: the binary's part of a save."""
        with open(os.path.join(self.src, "log", "libvirtd.log"), errors="replace") as f:
            f.seek(mark)
            text = f.read()
        start = re.search(r'^(\S+ \S+): .*QEMU_MONITOR_SEND_MSG: .*"execute":"migrate",', text,
                          re.M)
        if not start:
            return None
        end = re.compile(r'^(\S+ \S+): .*changed state to completed', re.M).search(
            text, start.end())
        if not end:
            return None
        t = [time.mktime(time.strptime(m.group(1)[:19], "%Y-%m-%d %H:%M:%S")) +
             float(m.group(1)[19:23]) for m in (start, end)]
        return t[1] - t[0]

    def close(self):
        for d in (self.src, self.dst):
            subprocess.run([LVENV, "stop", d], timeout=60)
        shutil.rmtree(self.tmp, ignore_errors=True)


def _passes(serial):
    try:
        with open(serial, errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return 0
    if "FAIL" in text:
        raise RuntimeError("the verify firmware failed: %s" %
                           [l for l in text.splitlines() if "FAIL" in l][:3])
    return len(re.findall(r"^PASS ", text, re.M))


def _wait_passes(serial, more_than):
    end = time.monotonic() + DEADLINE
    while _passes(serial) <= more_than:
        if time.monotonic() > end:
            raise RuntimeError("no new PASS line in %d s" % DEADLINE)
        time.sleep(0.05)
    return _passes(serial)


def one_round(lv, sc, name, emulator):
    """save, restore, migrate --live of domain @name; seconds and sizes."""
    serial = os.path.join(lv.tmp, name + ".serial")
    image = os.path.join(lv.tmp, name + ".save")
    xml = os.path.join(lv.tmp, name + ".xml")
    with open(xml, "w") as f:
        f.write(DOMAIN_XML.format(name=name, mib=_mib(sc["mem"]), firmware=FIRMWARE,
                                  append=sc["append"], emulator=emulator, serial=serial))
    for p in (serial, image):
        if os.path.exists(p):
            os.unlink(p)
    lv.virsh("define", xml)
    try:
        lv.virsh("start", name)
        n = _wait_passes(serial, 1)
        subprocess.run(["sync"], check=True)
        mark = lv.log_mark()
        r = {"save-s": lv.timed("save", name, image),
             "image-MiB": os.path.getsize(image) / 2**20,
             "save-stream-s": lv.stream_seconds(mark)}
        n = _passes(serial)
        snapbench.drop_caches()
        r["restore-s"] = lv.timed("restore", image)
        n = _wait_passes(serial, n)
        r["migrate-s"] = lv.timed("migrate", "--live", name, lv.uri_dst, "--migrateuri",
                                  "tcp://127.0.0.1")
        _wait_passes(serial, n)
        lv.virsh("destroy", name, uri=lv.uri_dst)
    finally:
        lv.virsh("destroy", name, ok=False)
        lv.virsh("destroy", name, uri=lv.uri_dst, ok=False)
        lv.virsh("undefine", name, ok=False)
        if os.path.exists(image):
            os.unlink(image)
    return r


KEYS = ("save-s", "save-stream-s", "image-MiB", "restore-s", "migrate-s")


def run_libvirt(sc, runners, runs, quiet=False, ignored=()):
    """@runs rounds of every runner (ours and at most one peer: libvirt
    manages the destination itself); prints medians and ours/peer ratios.
    @ignored: further --peer paths, not run, named in the table."""
    if os.geteuid() != 0:
        sys.exit("migbench: the libvirt scenario needs root (private libvirtds)")
    for tool in ("virsh", "libvirtd", "virtlogd"):
        if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
            sys.exit("migbench: %s is not installed (scripts/install-deps.sh installs it)" % tool)
    results = {lab: [] for lab, _, _ in runners}
    lv = Libvirtds()
    try:
        for i in range(runs):
            for lab, binary, _ in runners:
                if not quiet:
                    print("run %d/%d %s ..." % (i + 1, runs, lab), file=sys.stderr, flush=True)
                r = one_round(lv, sc, "bench-" + lab, binary)
                results[lab].append(r)
                if not quiet:
                    print("   save %.2f s (stream %s s, %.0f MiB), restore %.2f s, migrate %.2f s"
                          % (r["save-s"], "%.2f" % r["save-stream-s"]
                             if r["save-stream-s"] is not None else "?", r["image-MiB"],
                             r["restore-s"], r["migrate-s"]), file=sys.stderr, flush=True)
    finally:
        lv.close()
    print("\n== libvirt: %s domain (%s), medians of %d (min-max)" % (sc["mem"], sc["append"],
                                                                    runs))
    labels = [lab for lab, _, _ in runners]
    if ignored:
        print("   (libvirt runs the first --peer only; not run: %s)" % ", ".join(ignored))
    print("%-12s" % "" + "".join("%24s" % lab for lab in labels) +
          ("%14s" % ("ours/" + labels[1]) if len(labels) > 1 else ""))
    for k in KEYS:
        cells, meds = [], []
        for lab in labels:
            vals = [r[k] for r in results[lab] if r.get(k) is not None]
            if not vals:
                cells.append("%24s" % "-")
                meds.append(None)
                continue
            meds.append(statistics.median(vals))
            cells.append("%24s" % ("%.2f (%.2f-%.2f)" % (meds[-1], min(vals), max(vals))))
        ratio = "%14.2fx" % (meds[0] / meds[1]) if len(meds) > 1 and meds[0] and meds[1] else ""
        print("%-12s" % k + "".join(cells) + ratio)
    return results
