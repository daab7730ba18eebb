# SPDX-License-Identifier: GPL-2.0-or-later
"""migplot's picture of a libvirt run (libvirtbench.py): no time series, a
few timed virsh operations per round. One summary: virsh save, restore and
migrate --live in seconds, ours beside the peer, each bar the median with
the runs' range, and every run as a dot."""

import statistics

from migplot_labels import color, present
PANELS = (("save-s", "virsh save"), ("restore-s", "virsh restore\n(page cache dropped)"),
          ("migrate-s", "virsh migrate --live"))


def draw(plt, doc, path, save, wrap, label, size):
    results = doc["results"]
    labs = present(doc, results)
    fig, axes = plt.subplots(1, len(PANELS), figsize=size)
    for ax, (key, title) in zip(axes, PANELS):
        for x, lab in enumerate(labs):
            vals = [r[key] for r in results[lab]]
            med = statistics.median(vals)
            ax.bar(x, med, color=color(doc, lab), yerr=[[med - min(vals)], [max(vals) - med]],
                   capsize=4)
            ax.plot([x] * len(vals), vals, "k.", alpha=0.6)
            ax.annotate("%.2f s" % med, (x, med / 2), ha="center", va="center", fontsize=10,
                        color="white", weight="bold")
        if len(labs) == 2:
            ours = statistics.median(r[key] for r in results[labs[0]])
            peer = statistics.median(r[key] for r in results[labs[1]])
            title += "\nours / %s: %.2fx" % (label(doc, labs[1]), ours / peer)
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(len(labs)))
        ax.set_xticklabels([label(doc, lab) for lab in labs])
        ax.set_ylabel("seconds")
        ax.grid(axis="y", alpha=0.3)
    sc = doc["config"]
    fig.suptitle(wrap("libvirt drives the binary: %s domain, %s, %d runs each (bars: median, "
                      "whiskers: range, dots: runs)" % (sc["mem"], sc["append"],
                                                        len(results[labs[0]]))), fontsize=11)
    fig.tight_layout()
    save(plt, fig, path)
    return [path]
