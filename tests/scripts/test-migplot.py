#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/migplot.py on migbench results recorded with --json (trimmed, in
fixtures/): it writes exactly the pictures expected, each a PNG of the size
its figure and DPI give and under 150 KB. No KVM, no binary. Exits 77 (a
skip) without matplotlib."""

import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts")
sys.path.insert(0, SCRIPTS)
import migplot  # noqa: E402

MAX_BYTES = 150 * 1024
# Each fixture's pictures: ours and QEMU 7.2 ran once each.
FIXTURES = {
    # precopy: no latency histogram
    "migbench-small.json": ["dirty-random-run1-timeline", "dirty-random-run1-guest",
                            "dirty-random-summary"],
    # background snapshot (faults) and precopy into a file
    "migbench-snapshot-small.json": ["snapshot-bg-run1-timeline", "snapshot-bg-run1-guest",
                                     "snapshot-bg-run1-latency", "snapshot-bg-summary",
                                     "snapshot-file-run1-timeline", "snapshot-file-run1-guest",
                                     "snapshot-file-summary"],
    # postcopy (the destination's page requests)
    "migbench-postcopy-small.json": ["postcopy-at-once-run1-timeline",
                                     "postcopy-at-once-run1-guest",
                                     "postcopy-at-once-run1-latency",
                                     "postcopy-at-once-summary"],
    # snapshot-file (snapbench): per variant, no series; one wide summary
    "migbench-snapfile-small.json": [("snapshot-file-summary", "snapfile")],
    # libvirt (libvirtbench): timed virsh operations, no series; one summary
    "migbench-libvirt-small.json": [("libvirt-summary", "libvirt")],
}


def png_size(path):
    """(width, height) from a PNG's IHDR, or an error string."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return "no PNG signature"
    length, kind = struct.unpack(">I4s", head[8:16])
    if kind != b"IHDR" or length != 13:
        return "first chunk is %r, not IHDR" % kind
    return struct.unpack(">II", head[16:24])


def check_fixture(fixture, names, out):
    """Errors of migplot on @fixture: missing, unexpected or malformed files."""
    run = subprocess.run([sys.executable, os.path.join(SCRIPTS, "migplot.py"),
                          os.path.join(HERE, "fixtures", fixture), out],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if run.returncode != 0:
        return ["migplot exited %d: %s" % (run.returncode, run.stderr.decode())]
    errors = []
    written = {os.path.basename(p) for p in run.stdout.decode().splitlines()}
    kinds = {}
    for n in names:
        n, kind = n if isinstance(n, tuple) else (n, n.rsplit("-", 1)[1])
        kinds[n + ".png"] = kind
    want = set(kinds)
    for name in sorted(written - want):
        errors.append("%s: not expected" % name)
    for name in sorted(want):
        path = os.path.join(out, name)
        if name not in written or not os.path.exists(path):
            errors.append("%s: not written" % name)
            continue
        w, h = migplot.SIZES[kinds[name]]
        expect = (round(w * migplot.DPI), round(h * migplot.DPI))
        got = png_size(path)
        if got != expect:
            errors.append("%s: %s, expected a %dx%d PNG" % (name, got, *expect))
        if os.path.getsize(path) > MAX_BYTES:
            errors.append("%s: %d bytes, more than %d" % (name, os.path.getsize(path),
                                                          MAX_BYTES))
    return errors


def main():
    if migplot.matplotlib_python() is None:
        print("SKIP: no python3 here imports matplotlib (apt-get install python3-matplotlib)",
              file=sys.stderr)
        sys.exit(77)
    failed = 0
    print("1..%d" % len(FIXTURES))
    with tempfile.TemporaryDirectory(prefix="test-migplot-") as tmp:
        for n, (fixture, names) in enumerate(FIXTURES.items(), 1):
            errors = check_fixture(fixture, names, os.path.join(tmp, str(n)))
            print("%s %d - %s: %d pictures" % ("not ok" if errors else "ok", n, fixture,
                                              len(names)))
            for e in errors:
                print("# " + e)
            failed += bool(errors)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
