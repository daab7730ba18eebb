# SPDX-License-Identifier: GPL-2.0-or-later
"""What migbench prints and writes: the progress lines on stderr, the
min/median/max table of each metric per binary with the ratio of medians,
and the --json document (with the binaries' versions) and --plot
pictures."""
import json
import statistics
import subprocess
import sys
import time

from .series import SERIES_KEY


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.3g" % v if abs(v) < 1000 else "%.0f" % v
    return str(v)


def print_table(name, sc, results, labels):
    metrics = []
    for rs in results.values():
        for r in rs:
            for k in r:
                if k not in metrics and k != SERIES_KEY:
                    metrics.append(k)
    print("\n== %s: %s" % (name, sc["doc"]))
    print("   -m %s -append '%s' params %s%s" % (sc["mem"], sc["append"], json.dumps(sc.get("params", {})),
                                             " caps %s" % ",".join(sc["caps"]) if sc.get("caps") else ""))
    extra = {k: v for k, v in sc.get("ours_params", {}).items()
             if (sc.get("params") or {}).get(k) != v}
    if extra:
        print("   ours also: %s" % json.dumps(extra))
    head = "%-28s" % "metric"
    for lab in labels:
        head += " %26s" % (lab + " min/med/max")
    if len(labels) == 2:
        head += " %9s" % "ratio"
    print(head)
    for m in metrics:
        if not any(r.get(m) is not None for rs in results.values() for r in rs):
            continue
        row = "%-28s" % m
        meds = []
        for lab in labels:
            vals = [r[m] for r in results[lab] if r.get(m) is not None]
            if not vals:
                row += " %26s" % "-"
                meds.append(None)
                continue
            med = statistics.median(vals)
            meds.append(med)
            row += " %26s" % ("%s/%s/%s" % (fmt(min(vals)), fmt(med), fmt(max(vals))))
        if len(labels) == 2:
            row += " %9s" % (fmt(meds[0] / meds[1]) if meds[0] is not None and meds[1] else "-")
        print(row)


class Progress:
    """The lines migbench prints to stderr while it runs (none with --quiet):
    each run's start and figures, then runs done of the total, the time
    elapsed and the time left at the mean pace so far."""

    def __init__(self, total, quiet):
        self.total, self.quiet = total, quiet
        self.done, self.t0 = 0, time.monotonic()

    def say(self, text):
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def skip(self, n):
        """@n runs will not happen (a binary that failed gets no more)."""
        self.total -= n

    def run_done(self):
        self.done += 1
        elapsed = time.monotonic() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        self.say("   [%d/%d runs done, %s elapsed, about %s left]" %
                 (self.done, self.total, hms(elapsed), hms(left)))


def hms(secs):
    secs = int(round(secs))
    return "%dh%02dm%02ds" % (secs // 3600, secs // 60 % 60, secs % 60) if secs >= 3600 else \
        "%dm%02ds" % (secs // 60, secs % 60)


def binary_version(path):
    """The first line of @path --version, or None."""
    try:
        out = subprocess.run([path, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=30).stdout.decode()
        return out.splitlines()[0].strip() if out.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def write_results(args, runners, doc):
    """--json and --plot of @doc; the binaries' paths and versions go along,
    for the pictures' legends."""
    doc["binaries"] = {lab: {"path": b, "version": binary_version(b)} for lab, b, _ in runners}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.plot:
        import migplot
        files = migplot.plot(doc, args.plot)
        print("migbench: %d pictures in %s" % (len(files), args.plot), file=sys.stderr)
