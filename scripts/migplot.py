#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""migplot: scripts/migbench's results as pictures (PNG, matplotlib).

  migplot.py RESULTS.json [RESULTS.json ...] DIR

RESULTS.json is what `migbench --json` wrote; `migbench --plot DIR` calls
plot() on the same document. For every run N of a scenario SET it draws
SET-runN-timeline.png (RAM left to send, throughput and a third series over
time, the passes and the switchover marked), SET-runN-guest.png (the guest's
write rate and worst write per STAT period, before, during and after) and,
when query-migrate had one, SET-runN-latency.png (the background snapshot's
fault or the postcopy destination's page request latency histogram); ours
and every peer's run N share the axes. SET-summary.png puts the medians of
the runs side by side, ours against each peer (every binary the document
holds: "ours" and one label per --peer, or the single "peer" of older
files; migplot_labels.py). A snapshot scenario's SET is
SCENARIO-bg and SCENARIO-file. It prints the files it wrote, one a line.

Only the drawing needs matplotlib. Debian's python3-matplotlib serves
/usr/bin/python3, so when the python3 running this (a virtualenv's, pyenv's)
lacks it, the drawing runs there.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap

from migplot_labels import color, label, order, present

DPI = 90
# Figure sizes in inches; at DPI each gives whole pixels (the test checks them).
SIZES = {"timeline": (10, 7), "guest": (10, 6), "latency": (9, 5), "summary": (14, 9),
         "snapfile": (14, 5.5), "libvirt": (12, 5)}
SYSTEM_PYTHON = "/usr/bin/python3"
UNLIMITED = 100 << 30           # migscenarios.UNLIMITED: "unlimited" bandwidth

# The summary's panels, in order of interest; the first eight present are drawn.
# (result key, title, factor to the unit, unit, which is better)
METRICS = (
    ("total-time-ms", "total time", 1e-3, "s", "low"),
    ("downtime-ms", "downtime (query-migrate)", 1, "ms", "low"),
    ("stop-to-dst-run-ms", "guest paused: source STOP\nto destination RESUME", 1, "ms", "low"),
    ("request-p99-us", "page request latency p99\n(destination)", 1e-3, "ms", "low"),
    ("fault-p99-us", "write fault latency p99", 1e-3, "ms", "low"),
    ("guest-max-write-us-postcopy", "guest's worst write\nin postcopy", 1e-3, "ms", "low"),
    ("guest-rate-kept-%", "guest write rate kept\nin postcopy", 1, "%", "high"),
    ("transferred-MiB", "RAM bytes sent", 1, "MiB", "low"),
    ("file-MiB", "snapshot file", 1, "MiB", "low"),
    ("src-cpu-s", "source process CPU\n(vCPUs included)", 1, "s", "low"),
    ("guest-max-write-us-during", "guest's worst write\nduring the migration", 1e-3, "ms", "low"),
    ("guest-rate-kept", "guest write rate kept\nduring", 100, "%", "high"),
    ("mig-thread-cpu-s", "migration thread CPU", 1, "s", "low"),
    ("passes", "passes (dirty bitmap syncs)", 1, "", "low"),
    ("dst-cpu-s", "destination process CPU", 1, "s", "low"),
)
PANELS = 8


# -- the document ------------------------------------------------------------

def scenario_sets(doc):
    """(set name, what, scenario config, {label: [run results]}) of a migbench
    document: one per scenario of a group, one per variant of a snapshot."""
    cfg, res = doc["config"], doc["results"]
    if "mem" in cfg:                        # a snapshot scenario's own config
        if cfg.get("kind") != "snapshot":
            return []                       # snapshot-file: no series recorded
        return [("%s-%s" % (doc["scenario"], v), what, cfg, res[v])
                for v, what in (("bg", "background snapshot"), ("file", "precopy into a file"))
                if v in res]
    if len(cfg) == 1:
        res = {next(iter(cfg)): res}
    kinds = {n: "postcopy" if sc.get("postcopy") else "precopy" for n, sc in cfg.items()}
    return [(n, kinds[n], sc, res[n]) for n, sc in cfg.items() if n in res]


def fmt_size(v):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if v >= 1 << shift and v % (1 << shift) == 0:
            return "%d %s" % (v >> shift, unit)
    return str(v)


def fmt_param(k, v):
    if "bandwidth" in k:
        return "%s %s" % (k, "unlimited" if v >= UNLIMITED else fmt_size(v) + "/s")
    if k.endswith("-size"):
        return "%s %s" % (k, fmt_size(v))
    if k == "downtime-limit":
        return "%s %d ms" % (k, v)
    return "%s %s" % (k, v)


def how_run(sc, quick):
    """What the scenario ran, in one or two lines: -m, -append, parameters."""
    line = "-m %s -append '%s'" % (sc["mem"], sc["append"])
    if sc.get("smp"):
        line += " -smp %d" % sc["smp"]
    params = ", ".join(fmt_param(k, v) for k, v in (sc.get("params") or {}).items())
    extra = {k: v for k, v in (sc.get("ours_params") or {}).items()
             if (sc.get("params") or {}).get(k) != v}
    if params:
        line += "\n" + params
    if extra:
        line += "; ours also " + ", ".join(fmt_param(k, v) for k, v in extra.items())
    if sc.get("caps"):
        line += "; capabilities " + ", ".join(sc["caps"])
    if sc.get("postcopy"):
        line += "; postcopy " + sc["postcopy"].replace("-", " ")
    return line + ("  [--quick]" if quick else "")


def phases(r, kind):
    """One run's time in named consecutive phases, ms: [(name, ms), ...]."""
    total = r.get("total-time-ms") or 0
    down = r.get("downtime-ms") or 0
    s = r.get("series") or {}
    setup = r.get("setup-time-ms")
    if setup is None:
        # Snapshots carry no setup-time: the first poll past "setup" bounds it.
        polls = s.get("polls", {})
        setup = next((t * 1000 for t, st in zip(polls.get("t", []), polls.get("status", []))
                      if st not in (None, "setup")), 0)
    if kind == "postcopy" and "postcopy-start-s" in s:
        pc = s["postcopy-start-s"] * 1000
        return [("setup", setup), ("precopy", max(pc - setup, 0)), ("switchover pause", down),
                ("postcopy", max(total - pc - down, 0))]
    if kind == "background snapshot":
        return [("setup", setup), ("guest paused", down),
                ("saving RAM, guest running", max(total - setup - down, 0))]
    return [("setup", setup), ("iterating, guest running", max(total - setup - down, 0)),
            ("downtime", down)]


def passes_at(polls):
    """(t, pass number) where dirty-sync-count went up."""
    out, last = [], None
    for t, p in zip(polls.get("t", []), polls.get("passes", [])):
        if p is not None and last is not None and p > last:
            out.append((t, p))
        if p is not None:
            last = p
    return out


def rate_mbit(polls, window):
    """Throughput at each poll, Mbit/s: the slope of ram.transferred over the
    polls of the last @window seconds (a least-squares fit: max-bandwidth
    sends in bursts each 100 ms, and a difference of two polls beats with
    them). query-migrate's own mbps is a figure of the last bandwidth period
    (and, in our background snapshot, of the end only)."""
    pts = [(t, b) for t, b in zip(polls.get("t", []), polls.get("transferred", []))]
    out = []
    for i, (ti, bi) in enumerate(pts):
        w = [(t, b) for t, b in pts[max(0, i - 200):i + 1] if b is not None and t >= ti - window]
        if bi is None or len(w) < 3 or w[-1][0] - w[0][0] < window * 0.75:
            out.append(None)
            continue
        mt = sum(t for t, _ in w) / len(w)
        mb = sum(b for _, b in w) / len(w)
        var = sum((t - mt) ** 2 for t, _ in w)
        out.append(sum((t - mt) * (b - mb) for t, b in w) / var * 8 / 1e6 if var else None)
    return out


def resume_at(s):
    """The destination's RESUME after the switchover (or the source's, in a
    background snapshot after its start pause), seconds, or None."""
    sw = s.get("switchover-s")
    for t, side, ev in s.get("events", []):
        if ev == "RESUME" and (sw is None or t >= sw):
            return t
    return None


def matplotlib_python():
    """An interpreter that can import matplotlib, this one first, or None."""
    try:
        import matplotlib  # noqa: F401
        return sys.executable
    except ImportError:
        pass
    if os.access(SYSTEM_PYTHON, os.X_OK) and \
            os.path.realpath(SYSTEM_PYTHON) != os.path.realpath(sys.executable) and \
            subprocess.run([SYSTEM_PYTHON, "-c", "import matplotlib"], stderr=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL).returncode == 0:
        return SYSTEM_PYTHON
    return None


def plot(doc, outdir):
    """Draw @doc (a migbench document) into @outdir; the files written."""
    py = matplotlib_python()
    if py is None:
        raise SystemExit("migplot: matplotlib is missing (Debian: apt-get install "
                         "python3-matplotlib)")
    if py == sys.executable:
        return draw(doc, outdir)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(doc, f)
        f.flush()
        out = subprocess.run([py, os.path.abspath(__file__), f.name, outdir],
                             stdout=subprocess.PIPE)
    if out.returncode != 0:
        raise SystemExit("migplot: drawing with %s failed (above)" % py)
    return out.stdout.decode().splitlines()


# -- the pictures (matplotlib from here on) ----------------------------------

PHASE_COLORS = {"setup": "0.7", "iterating, guest running": "#9ecae1", "precopy": "#9ecae1",
                "saving RAM, guest running": "#9ecae1", "postcopy": "#c5b0d5",
                "downtime": "#d62728", "switchover pause": "#d62728", "guest paused": "#d62728"}


def _wrap(title, width=110):
    """@title's lines folded to @width characters: a figure clips what is wider."""
    return "\n".join(textwrap.fill(l, width, break_on_hyphens=False) if l else l
                     for l in title.split("\n"))


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _nan(values, f=1.0, positive=False):
    """@values times @f with None (and, for a log axis, values <= 0) as NaN."""
    return [float("nan") if v is None or (positive and v <= 0) else v * f for v in values]


def _fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return "%.0f" % v
    return "%.3g" % v


def _fmt_us(us):
    """Microseconds in µs, ms or s, about two digits (bucket bounds are 2^n µs)."""
    if us < 1000:
        return "%d µs" % us
    if us < 1e6:
        return "%.2g ms" % (us / 1000) if us < 1e5 else "%d ms" % round(us / 1000)
    return "%.2g s" % (us / 1e6)


def _save(plt, fig, path):
    """@fig as a PNG of at most 256 colours: line art loses nothing visible
    and the file a half to two thirds of its size."""
    import io
    from PIL import Image
    buf = io.BytesIO()
    fig.savefig(buf, dpi=DPI, format="png")
    plt.close(fig)
    buf.seek(0)
    with Image.open(buf) as im:
        im.convert("RGB").quantize(colors=256).save(path, optimize=True, dpi=(DPI, DPI))
    return [path]


def _mark_run(ax, s, color, passes=True, numbers_at=None, gap=0):
    """The passes (dotted), the switchover (solid) and postcopy's start
    (dashed) of series @s on @ax; with @numbers_at (a height in axes
    fractions), the pass numbers, none closer than @gap to the last."""
    last = None
    for t, n in passes_at(s.get("polls", {})) if passes else ():
        ax.axvline(t, color=color, ls=":", lw=0.9, alpha=0.8)
        if numbers_at is not None and (last is None or t - last >= gap):
            ax.text(t, numbers_at, str(n), color=color, fontsize=7, ha="center", va="top",
                    transform=ax.get_xaxis_transform())
            last = t
    if s.get("switchover-s") is not None:
        ax.axvline(s["switchover-s"], color=color, lw=1.8)
        end = resume_at(s)
        if end is not None and end > s["switchover-s"]:
            ax.axvspan(s["switchover-s"], end, color=color, alpha=0.3, lw=0)
    if s.get("postcopy-start-s") is not None:
        ax.axvline(s["postcopy-start-s"], color=color, ls="--", lw=1.4)
    for t in _start_stops(s):
        ax.axvline(t, color=color, ls="-.", lw=1.4)


def _start_stops(s):
    """The source's STOPs before the switchover (a background snapshot's start)."""
    return [t for t, side, ev in s.get("events", []) if side == "src" and ev == "STOP"
            and (s.get("switchover-s") is None or t < s["switchover-s"])]


def _mark_legend(plt, ax, runs, extra=(), passes=True):
    """A legend above @ax of its lines plus what _mark_run drew."""
    from matplotlib.lines import Line2D
    handles, labels = ax.get_legend_handles_labels()
    series = [r["series"] for r in runs.values()]
    if passes and any(passes_at(s.get("polls", {})) for s in series):
        handles.append(Line2D([], [], color="0.4", ls=":"))
        labels.append("new pass (dirty bitmap sync), numbered")
    if any(s.get("switchover-s") is not None for s in series):
        handles.append(Line2D([], [], color="0.4", lw=1.8))
        labels.append("switchover (the source's STOP)")
    if any(s.get("postcopy-start-s") is not None for s in series):
        handles.append(Line2D([], [], color="0.4", ls="--"))
        labels.append("postcopy starts")
    if any(_start_stops(s) for s in series):
        handles.append(Line2D([], [], color="0.4", ls="-."))
        labels.append("guest stopped to start the snapshot")
    for h, lab in extra:
        handles.append(h)
        labels.append(lab)
    ax.legend(handles, labels, fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0),
              ncol=min(len(handles), 4), frameon=False, borderaxespad=0.2)


def _third(what, sc, runs):
    """The timeline's third panel: (poll column, y label, factor, log scale)."""
    cols = [r["series"]["polls"] for r in runs.values()]
    if what == "postcopy" and any("requests" in c for c in cols):
        return "requests", "page requests from the\ndestination (cumulative)", 1, False
    if what == "background snapshot" and any("faults" in c for c in cols):
        return "faults", "guest write faults\nserved (cumulative)", 1, False
    if any(any(v is not None for v in c.get("expected-downtime", [])) for c in cols):
        return "expected-downtime", "expected downtime\n(ms, log scale)", 1, True
    return "transferred", "RAM bytes sent (MiB)", 1.0 / 2**20, False


def _timeline(plt, doc, name, what, sc, runs, i, path):
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=SIZES["timeline"], dpi=DPI,
                             layout="constrained")
    col, ylabel, f, log = _third(what, sc, runs)
    span = max((r["series"]["polls"]["t"][-1] for r in runs.values()
                if r["series"]["polls"].get("t")), default=1)
    for k, (lab, r) in enumerate(runs.items()):
        s, c = r["series"], color(doc, lab)
        p = s["polls"]
        axes[0].plot(p["t"], _nan(p.get("remaining", []), 1.0 / 2**20), color=c, lw=1.5,
                     label=label(doc, lab))
        # Windows of many polls: max-bandwidth sends in 100 ms slots, and a
        # window of a few polls beats with them.
        axes[1].plot(p["t"], _nan(rate_mbit(p, min(1.0, max(0.2, span / 12)))), color=c,
                     lw=1.5)
        axes[1].plot(p["t"], _nan(p.get("mbps", [])), color=c, lw=0.8, ls="--", alpha=0.6)
        if col in p:
            axes[2].plot(p["t"], _nan(p[col], f, log), color=c, lw=1.2)
        for j, ax in enumerate(axes):
            _mark_run(ax, s, c, numbers_at=0.97 - 0.07 * k if j == 0 else None, gap=span / 50)
    params = sc.get("params") or {}
    limit = params.get("downtime-limit")
    bw = params.get("max-bandwidth")
    if bw and bw < UNLIMITED and what != "postcopy":
        axes[1].axhline(bw * 8 / 1e6, color="0.3", ls="-.", lw=1)
        axes[1].annotate("max-bandwidth %s/s = %.0f Mbit/s" % (fmt_size(bw), bw * 8 / 1e6),
                         (0.01, bw * 8 / 1e6), xycoords=axes[1].get_yaxis_transform(),
                         xytext=(30, -12), textcoords="offset points", color="0.3", fontsize=8,
                         va="top")
    if col == "expected-downtime" and limit:
        axes[2].axhline(limit, color="0.3", ls="-.", lw=1)
        axes[2].text(0.005, limit, " downtime-limit %d ms" % limit, color="0.3", fontsize=8,
                     va="bottom", transform=axes[2].get_yaxis_transform())
    vals = [v for r in runs.values() for v in r["series"]["polls"].get(col, [])
            if v is not None and v > 0]
    if log and vals and max(vals) / min(vals) > 30:
        axes[2].set_yscale("log")
    elif log:
        ylabel = ylabel.replace(", log scale", "")
        log = False
    axes[0].set_ylabel("RAM left to send\n(MiB)")
    axes[1].set_ylabel("throughput (Mbit/s)\nsolid: bytes sent / time\ndashed: its mbps")
    axes[2].set_ylabel(ylabel)
    axes[2].set_xlabel("seconds since the migrate command")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=None if log and ax is axes[2] else 0)
    _mark_legend(plt, axes[0], runs)
    fig.suptitle(_wrap("%s (%s), run %d: RAM left to send and throughput over time, %s\n%s" %
                 (name, what, i + 1, " vs ".join(label(doc, lab) for lab in runs),
                  how_run(sc, doc.get("quick")))), fontsize=10)
    return _save(plt, fig, path)


def _guest(plt, doc, name, what, sc, runs, i, path):
    # An idle guest writes nothing: nothing to draw.
    if not any(any(v for v in r["series"].get("guest", {}).get("rate_mbps", []))
               for r in runs.values()):
        return []
    from matplotlib.lines import Line2D
    fig, axes = plt.subplots(2, 1, sharex=True, figsize=SIZES["guest"], dpi=DPI,
                             layout="constrained")
    spans, notes = [], []
    for lab, r in runs.items():
        s, c, name_l = r["series"], color(doc, lab), label(doc, lab)
        g = s["guest"]
        rows = [row for row in zip(g["t"], g["cpu"], g["rate_mbps"], g.get("max_write_us", []),
                                   g.get("p99_write_us", [])) if row[2] is not None]
        cpus = sorted({row[1] for row in rows})
        for n, cpu in enumerate(cpus):
            mine = [row for row in rows if row[1] == cpu]
            suffix = " (CPU %d)" % cpu if len(cpus) > 1 else ""
            ls = "-" if n == 0 else "--"
            t = [row[0] for row in mine]
            axes[0].plot(t, [row[2] for row in mine], color=c, ls=ls, marker="o", ms=3,
                         label=name_l + suffix)
            axes[1].plot(t, _nan([row[3] for row in mine], 1, True), color=c, ls=ls, marker="o",
                         ms=3, label=name_l + suffix + ": worst write")
            axes[1].plot(t, _nan([row[4] for row in mine], 1, True), color=c, ls=":", marker=".",
                         ms=3, alpha=0.7, label=name_l + suffix + ": 99th percentile")
        end = s["polls"]["t"][-1] if s["polls"].get("t") else None
        for ax in axes:
            if end:
                # A bar along the bottom: from the migrate command to completed.
                ax.plot([0, end], [0.02 + 0.035 * len(spans)] * 2, color=c, lw=5, alpha=0.5,
                        solid_capstyle="butt", transform=ax.get_xaxis_transform())
            _mark_run(ax, s, c, passes=False)
        if end:
            spans.append((Line2D([], [], color=c, lw=5, alpha=0.5),
                          "%s migrating" % name_l))
            if not any(0 < row[0] <= end for row in rows):
                notes.append("%s: no STAT period ended during its %.2f s migration" %
                             (name_l, end))
    if notes:
        axes[0].text(0.01, 0.5, "\n".join(notes) + "\n(the guest reports once a second)",
                     transform=axes[0].transAxes, fontsize=8, color="0.3", va="center")
    axes[0].set_ylabel("guest write rate\n(MB/s per STAT period)")
    axes[0].set_ylim(0, axes[0].get_ylim()[1] * 1.1)
    axes[1].set_ylabel("slowest single write\nper STAT period (µs, log)")
    if any(v for r in runs.values() for v in r["series"]["guest"].get("max_write_us", [])):
        axes[1].set_yscale("log")
    axes[1].set_xlabel("seconds since the migrate command (before 0: before it%s)" % (
        "; the guest runs on the destination after the switchover"
        if what in ("precopy", "postcopy") else ""))
    for ax in axes:
        ax.grid(alpha=0.3)
    _mark_legend(plt, axes[0], runs, spans, passes=False)
    axes[1].legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=4,
                   frameon=False, borderaxespad=0.2)
    fig.suptitle(_wrap("%s (%s), run %d: the guest's writes before, during and after, %s\n%s" %
                 (name, what, i + 1, " vs ".join(label(doc, lab) for lab in runs),
                  how_run(sc, doc.get("quick")))), fontsize=10)
    return _save(plt, fig, path)


def _latency(plt, doc, name, what, sc, runs, i, path):
    hs = {lab: r["series"]["latency"] for lab, r in runs.items() if r["series"].get("latency")}
    if not hs:
        return []
    kind = next(iter(hs.values()))["what"]
    used = [b for h in hs.values() for b, n in enumerate(h["histogram"]) if n]
    lo, hi = (min(used), max(used)) if used else (0, 1)
    from matplotlib.patches import Patch
    fig, ax = plt.subplots(figsize=SIZES["latency"], dpi=DPI, layout="constrained")
    width = 0.8 / len(hs)
    noun = "faults" if kind == "fault" else "requests"
    for k, lab in enumerate(hs):
        x0 = (k - (len(hs) - 1) / 2) * width
        h = hs[lab]
        bins = range(lo, hi + 1)
        ax.bar([b + x0 for b in bins], [h["histogram"][b] for b in bins], width=width,
               color=color(doc, lab), label="%s: %d %s, p50 %s, p99 %s, max %s" % (
                   label(doc, lab), sum(h["histogram"]), noun, _fmt_us(h["p50-us"]),
                   _fmt_us(h["p99-us"]), _fmt_us(h["max-us"])))
    ticks = range(lo, hi + 1)
    ax.set_xticks(list(ticks), ["< 1 µs" if b == 0 else "%s – %s" % (
        _fmt_us(2 ** (b - 1)), _fmt_us(2 ** b)) for b in ticks], rotation=30, ha="right",
        fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("%s (log scale)" % noun)
    ax.set_xlabel("latency (log2 buckets)")
    ax.grid(alpha=0.3, axis="y")
    handles, labels = ax.get_legend_handles_labels()
    for lab in runs:
        if lab not in hs:
            handles.append(Patch(color="none"))
            labels.append("%s: no latency histogram in its query-migrate" % label(doc, lab))
    ax.legend(handles, labels, fontsize=8, loc="upper right")
    what_l = ("background snapshot write faults: guest write fault to page saved and "
              "unprotected" if kind == "fault" else
              "postcopy page requests on the destination: fault read to page placed")
    fig.suptitle(_wrap("%s (%s), run %d: %s\n%s" % (name, what, i + 1, what_l,
                                                how_run(sc, doc.get("quick"))), 160), fontsize=10)
    return _save(plt, fig, path)


def _headline(doc, labs, results):
    def med(lab, key):
        vals = [r[key] for r in results[lab] if r.get(key) is not None]
        return statistics.median(vals) if vals else None
    tot = {lab: med(lab, "total-time-ms") for lab in labs}
    down = {lab: med(lab, "downtime-ms") for lab in labs}
    if len(labs) < 2 or labs[0] != "ours" or None in tot.values():
        return "%s only: %s s in all, %s ms downtime" % (
            label(doc, labs[0]), _fmt((tot[labs[0]] or 0) / 1000), _fmt(down[labs[0]]))
    a = tot["ours"]
    parts = []
    for lab in labs[1:]:
        b, peer = tot[lab], label(doc, lab)
        if abs(a / b - 1) < 0.03:
            faster = "about the same time"
        else:
            faster = ("ours %.2f× faster" % (b / a)) if a < b else \
                ("%s %.2f× faster" % (peer, a / b))
        parts.append("%s in %s s: %s, downtime %s ms" % (peer, _fmt(b / 1000), faster,
                                                         _fmt(down[lab])))
    return "ours finished in %s s (downtime %s ms); %s" % (
        _fmt(a / 1000), _fmt(down["ours"]), "; ".join(parts))


def _phases_panel(ax, doc, what, labs, results):
    for y, lab in enumerate(labs):
        per_run = [phases(r, what) for r in results[lab]]
        names = [n for n, _ in per_run[0]]
        meds = [statistics.median(p[j][1] for p in per_run) for j in range(len(names))]
        total = sum(meds)
        left = 0
        for n, v in zip(names, meds):
            ax.barh(y, v / 1000, left=left / 1000, color=PHASE_COLORS.get(n, "0.5"),
                    edgecolor="white", label=n if y == 0 else None, height=0.6)
            if total and v / total > 0.12:
                ax.text((left + v / 2) / 1000, y, "%s\n%s s" % (n, _fmt(v / 1000)),
                        ha="center", va="center", fontsize=8)
            left += v
        small = ", ".join("%s %s ms" % (n, _fmt(v)) for n, v in zip(names, meds)
                          if not total or v / total <= 0.12)
        ax.text(left / 1000, y, "  %s s%s" % (_fmt(left / 1000), " (%s)" % small if small else ""),
                va="center", fontsize=9)
    ax.set_yticks(range(len(labs)), [label(doc, lab) for lab in labs])
    ax.invert_yaxis()
    ax.set_xlim(0, ax.get_xlim()[1] * 1.45)
    ax.set_xlabel("seconds from the migrate command to completed (medians)")
    ax.set_title("where the time went", fontsize=10)
    ax.legend(fontsize=8, loc="lower right", ncol=4)
    ax.grid(alpha=0.3, axis="x")


def _metric_panel(ax, doc, labs, results, metric):
    key, title, f, unit, better = metric
    meds = {}
    top = 0
    for x, lab in enumerate(labs):
        vals = [r[key] * f for r in results[lab] if r.get(key) is not None]
        if not vals:
            ax.text(x, 0, "not\nreported", ha="center", va="bottom", fontsize=8, color="0.4")
            continue
        med = meds[lab] = statistics.median(vals)
        ax.bar(x, med, color=color(doc, lab), width=0.6,
               yerr=[[med - min(vals)], [max(vals) - med]], capsize=5, ecolor="0.2")
        ax.text(x, max(vals), _fmt(med), ha="center", va="bottom", fontsize=9)
        top = max(top, max(vals))
    ax.set_xticks(range(len(labs)), [label(doc, lab) for lab in labs], fontsize=8)
    ax.set_xlim(-0.6, len(labs) - 0.4)
    ax.set_ylim(0, (top or 1) * 1.45)
    ax.set_ylabel(unit or "count", fontsize=8)
    ax.set_title(title + (" (higher is better)" if better == "high" else ""), fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    ax.tick_params(axis="y", labelsize=8)
    lines, colors = [], []
    for lab in labs[1:]:
        if "ours" not in meds or not meds.get(lab):
            continue
        ratio = meds["ours"] / meds[lab]
        if abs(ratio - 1) < 0.03:
            verdict, c = "about the same", "0.3"
        elif (ratio < 1) == (better == "low"):
            verdict, c = "ours better", "tab:green"
        else:
            verdict, c = "ours worse", "tab:red"
        lines.append("ours / %s = %.2f×%s%s" % (label(doc, lab), ratio,
                                               "\n" if len(labs) == 2 else ": ", verdict))
        colors.append(c)
    if lines:
        ax.text(0.5, 0.97, "\n".join(lines), transform=ax.transAxes, ha="center", va="top",
                fontsize=9 if len(lines) == 1 else 7,
                color=colors[0] if len(set(colors)) == 1 else "0.2", fontweight="bold")


def _summary(plt, doc, name, what, sc, results, path):
    labs = present(doc, results)
    if not labs:
        return []
    metrics = [m for m in METRICS if any(r.get(m[0]) is not None for lab in labs
                                         for r in results[lab])][:PANELS]
    fig = plt.figure(figsize=SIZES["summary"], dpi=DPI, layout="constrained")
    gs = fig.add_gridspec(3, 4, height_ratios=[0.75, 1, 1])
    _phases_panel(fig.add_subplot(gs[0, :]), doc, what, labs, results)
    for k, m in enumerate(metrics):
        _metric_panel(fig.add_subplot(gs[1 + k // 4, k % 4]), doc, labs, results, m)
    n = max(len(results[lab]) for lab in labs)
    fails = [v for k, v in (doc.get("failed") or {}).items() if k.startswith(name + " ")]
    foot = "bars: median of %d run%s, whiskers: min to max%s" % (
        n, "s" if n > 1 else "", "; ratios: ours / %s" % ", ".join(label(doc, lab) for lab in labs[1:]) if len(labs) > 1
        else "")
    na = doc.get("n/a") or {}
    na = na.get(name) if isinstance(na.get(name), dict) else \
        {k: v for k, v in na.items() if isinstance(v, str)}
    if na:
        foot += "\nnot run: " + "; ".join("%s %s" % (label(doc, k), v) for k, v in na.items())
    if fails:
        foot += "\nFAILED: " + "; ".join(fails)
    fig.supxlabel(foot, fontsize=8, color="tab:red" if fails else "0.3")
    # The scenario's doc describes its full size, not --quick's.
    about = "" if doc.get("quick") else ": " + sc.get("doc", "")
    fig.suptitle(_wrap("%s (%s)%s\n%s\n%s" % (name, what, about, _headline(doc, labs, results),
                                        how_run(sc, doc.get("quick"))), 160), fontsize=10)
    return _save(plt, fig, path)


def draw(doc, outdir):
    """The pictures of @doc in @outdir (made if needed); the files written."""
    plt = _plt()
    os.makedirs(outdir, exist_ok=True)
    files = []
    if doc["config"].get("kind") == "snapshot-file":
        import migplot_snapfile
        return migplot_snapfile.draw(plt, doc, os.path.join(outdir, doc["scenario"] +
                                                            "-summary.png"),
                                     _save, _wrap, ", ".join(label(doc, lab) for lab in order(doc)[1:]),
                                     SIZES["snapfile"], DPI)
    if doc["config"].get("kind") == "libvirt":
        import migplot_libvirt
        return migplot_libvirt.draw(plt, doc, os.path.join(outdir, doc["scenario"] +
                                                           "-summary.png"),
                                    _save, _wrap, label, SIZES["libvirt"])
    for name, what, sc, results in scenario_sets(doc):
        labs = present(doc, results)
        for i in range(max((len(results[lab]) for lab in labs), default=0)):
            runs = {lab: results[lab][i] for lab in labs
                    if i < len(results[lab]) and results[lab][i].get("series")}
            if not runs:
                continue
            base = os.path.join(outdir, "%s-run%d-" % (name, i + 1))
            for kind, fn in (("timeline", _timeline), ("guest", _guest),
                             ("latency", _latency)):
                files += fn(plt, doc, name, what, sc, runs, i, base + kind + ".png")
        files += _summary(plt, doc, name, what, sc, results,
                          os.path.join(outdir, name + "-summary.png"))
    return files


def main(argv):
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        sys.exit(__doc__.split("\n\n")[1])
    py = matplotlib_python()
    if py is None:
        sys.exit("migplot: matplotlib is missing (Debian: apt-get install python3-matplotlib)")
    if py != sys.executable:
        os.execv(py, [py, os.path.abspath(__file__)] + argv)
    for path in argv[:-1]:
        with open(path) as f:
            for name in draw(json.load(f), argv[-1]):
                print(name)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1:])
