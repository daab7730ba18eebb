# SPDX-License-Identifier: GPL-2.0-or-later
"""What migbench prints and writes: the progress lines on stderr, the
min/median/max table of each metric per binary with the ratio of medians
of ours to each peer,
and the --json document (with the binaries' versions) and --plot
pictures."""
import json
import statistics
import sys
import time

from .binaries import binary_version, ratio_labels
from .series import SERIES_KEY


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.3g" % v if abs(v) < 1000 else "%.0f" % v
    return str(v)


def print_table(name, sc, results, labels, na=None):
    """@name's metrics, one min/med/max column per binary of @labels, then
    one ratio of medians per binary ours is put against ("ours/qemu-7.2");
    a binary in @na ({label: text}) could not run it: its column says so."""
    na = na or {}
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
    against = [lab for lab in ratio_labels(labels) if lab not in na]
    width = {lab: max(26, len(lab) + 12, len(na.get(lab, ""))) for lab in labels}
    rwidth = {lab: max(9, len("ours/" + lab)) for lab in against}
    head = "%-28s" % "metric"
    for lab in labels:
        head += " %*s" % (width[lab], lab + " min/med/max")
    for lab in against:
        head += " %*s" % (rwidth[lab], "ours/" + lab)
    print(head)
    for m in metrics:
        if not any(r.get(m) is not None for rs in results.values() for r in rs):
            continue
        row = "%-28s" % m
        meds = {}
        for lab in labels:
            vals = [r[m] for r in results.get(lab, []) if r.get(m) is not None]
            if lab in na or not vals:
                row += " %*s" % (width[lab], na.get(lab, "-"))
                continue
            med = meds[lab] = statistics.median(vals)
            row += " %*s" % (width[lab], "%s/%s/%s" % (fmt(min(vals)), fmt(med), fmt(max(vals))))
        for lab in against:
            ok = meds.get("ours") is not None and meds.get(lab)
            row += " %*s" % (rwidth[lab], fmt(meds["ours"] / meds[lab]) if ok else "-")
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


def write_results(args, runners, doc):
    """--json and --plot of @doc; every binary's label, path and version go
    first (results are keyed by those labels), for the pictures' legends."""
    doc = dict({"binaries": {lab: {"path": b, "version": binary_version(b)}
                             for lab, b, _ in runners}}, **doc)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.plot:
        import migplot
        files = migplot.plot(doc, args.plot)
        print("migbench: %d pictures in %s" % (len(files), args.plot), file=sys.stderr)
