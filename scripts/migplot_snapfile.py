# SPDX-License-Identifier: GPL-2.0-or-later
"""migplot's picture of a snapshot-file run (snapbench.py): its results are
per variant, not per binary, and have no time series. One summary: the
background snapshot's wall time and write speed per writer variant
against the disk's, and the restore's time to a running guest and to all
of RAM resident, ours and every peer (its exec:cat and, where it has
mapped-ram, its mapped-ram variants) on the same axes; a variant that did
not run (n/a) is named under the pictures."""

import statistics

from migplot_labels import color


def _med(rs, key):
    vals = [r[key] for r in rs if r.get(key) is not None]
    return (statistics.median(vals), min(vals), max(vals)) if vals else (None, None, None)


def _bars(ax, doc, names, rs_by_name, key, factor, unit, log=False):
    meds, errs, colors = [], [[], []], []
    for n in names:
        m, lo, hi = _med(rs_by_name[n], key)
        m = (m or 0) * factor
        meds.append(m)
        errs[0].append(m - (lo or 0) * factor)
        errs[1].append((hi or 0) * factor - m)
        colors.append(color(doc, n))
    ax.bar(range(len(names)), meds, color=colors, yerr=errs, capsize=3)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20, ha="right")
    ax.set_ylabel(unit)
    if log:
        ax.set_yscale("log")
    for x, m in enumerate(meds):
        ax.annotate("%.3g" % m if m < 100 else "%.0f" % m, (x, m), ha="center",
                    va="bottom", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def draw(plt, doc, path, save, wrap, peer_label, size, dpi):
    res, sc = doc["results"], doc["config"]
    snaps, rests = res.get("snapshots", {}), res.get("restores", {})
    if not snaps and not rests:
        return []
    disk = res.get("disk-MBps", {})
    fig, axes = plt.subplots(1, 3, figsize=size, dpi=dpi, layout="constrained")
    names = list(snaps)
    _bars(axes[0], doc, names, snaps, "wall-ms", 1 / 1000, "seconds (the snapshot, start to done)")
    axes[0].set_title("background snapshot into a file: wall time")
    _bars(axes[1], doc, names, snaps, "write-MBps", 1, "MB/s written")
    if disk.get("write"):
        axes[1].axhline(disk["write"], color="0.3", ls="--", lw=1)
        axes[1].annotate("the disk, dd O_DIRECT: %.0f MB/s" % disk["write"],
                         (0, disk["write"]), xytext=(0, 3), textcoords="offset points",
                         fontsize=8, color="0.3")
    axes[1].set_title("write speed against the disk's")
    rnames = list(rests)
    x = range(len(rnames))
    run = [(_med(rests[n], "to-running-ms")[0] or 0) / 1000 for n in rnames]
    resident = [(_med(rests[n], "to-resident-ms")[0] or 0) / 1000 for n in rnames]
    w = 0.4
    axes[2].bar([i - w / 2 for i in x], run, w, label="until the guest runs",
                color=[color(doc, n) for n in rnames])
    axes[2].bar([i + w / 2 for i in x], resident, w, label="until all of RAM is resident",
                color=[color(doc, n) for n in rnames], alpha=0.45,
                hatch="//")
    for i, (a, b) in enumerate(zip(run, resident)):
        axes[2].annotate("%.3g s" % a, (i - w / 2, a), ha="center", va="bottom", fontsize=7)
        axes[2].annotate("%.3g s" % b, (i + w / 2, b), ha="center", va="bottom", fontsize=7)
    axes[2].set_yscale("log")
    axes[2].set_xticks(list(x))
    axes[2].set_xticklabels(rnames, rotation=20, ha="right")
    axes[2].set_ylabel("seconds (log scale)")
    axes[2].set_title("restore, page cache dropped")
    axes[2].legend(fontsize=8)
    axes[2].grid(axis="y", alpha=0.3)
    runs = max((len(v) for v in list(snaps.values()) + list(rests.values())), default=0)
    fig.suptitle(wrap("snapshot-file: a background snapshot of a %s guest (-append '%s') into a "
                      "file and its restore; blue: ours (mr = mapped-ram, Nw = N writers, "
                      "dio = O_DIRECT); the others: %s" % (sc.get("mem"), sc.get("append"),
                                                          peer_label), 150), fontsize=10)
    na = "; ".join("%s %s" % kv for kv in (res.get("n/a") or {}).items())
    fig.supxlabel("bars: median of %d run%s, whiskers: min to max%s" % (
        runs, "s" if runs > 1 else "", "\nnot run: " + na if na else ""),
                  fontsize=8, color="0.3")
    return save(plt, fig, path)
