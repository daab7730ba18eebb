# SPDX-License-Identifier: GPL-2.0-or-later
"""Which binaries a migbench --json document holds, their names in legends
and their colours, for migplot.py and its migplot_*.py parts.

A document names its binaries under "binaries" (label -> path, version),
ours first: "ours" and one label per --peer ("qemu-7.2", "qemu-10.0");
documents of a single --peer written before several were possible call it
"peer". Every function here takes either."""

import os
import re

OURS = "ours"
# Ours, then each peer in the order the document lists them (the old
# single "peer" was orange, and stays so).
PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def order(doc):
    """Every binary label of @doc, ours first."""
    labs = list(doc.get("binaries") or {})
    if not labs:
        labs = [OURS, "peer"]
    return [OURS] + [lab for lab in labs if lab != OURS]


def present(doc, results):
    """The labels of @doc's binaries with runs in @results, in order(), then
    any other key of @results (results keyed by a binary not listed)."""
    labs = [lab for lab in order(doc) if results.get(lab)]
    return labs + [lab for lab in results if lab not in labs and results.get(lab)
                   and isinstance(results[lab], list)]


def peers(doc, results):
    """present() without ours: what ours is put against."""
    return [lab for lab in present(doc, results) if lab != OURS]


def color(doc, lab):
    """@lab's colour: by the position of the binary it names (a variant such
    as "qemu-10.0-mr-1w" takes its binary's; "mr-2w" and "ours-lazy" ours)."""
    labs = order(doc)
    owner = max((b for b in labs if lab == b or lab.startswith(b + "-")), key=len, default=None)
    if owner is None:
        owner = OURS if lab.startswith(("mr-", "ours")) else None
    if owner is None:
        return PALETTE[1]       # a variant of an old single peer ("qemu-7.2" beside "peer")
    return PALETTE[labs.index(owner) % len(PALETTE)]


def label(doc, lab):
    """A binary's name in legends: "ours", or a peer's version ("QEMU 7.2.22")."""
    if lab == OURS:
        return OURS
    b = (doc.get("binaries") or {}).get(lab, {})
    m = re.match(r"QEMU emulator version (\S+)", b.get("version") or "")
    if m:
        return "QEMU " + m.group(1)
    return os.path.basename(b.get("path", lab))
