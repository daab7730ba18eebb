# SPDX-License-Identifier: GPL-2.0-or-later
"""The binaries one migbench invocation compares: ours and every --peer,
each with its label ("ours", "qemu-7.2", "qemu-10.0", from --version), and
what a binary does when a scenario asks it for a migration feature it does
not have (Refused, with the feature named, so that its column can say
"n/a (no mapped-ram)" instead of the whole run failing).

A runner is a tuple (label, path, is_peer): the rest of migbench takes
them in this order, ours first, and alternates runs in it."""
import os
import re
import subprocess

from qmp import MonitorGone, QMPError

OURS = "ours"


class Refused(Exception):
    """A binary refused the scenario's parameters or capabilities. @feature
    names the capability or parameter it does not have at all (then the
    scenario is not applicable to it, not failed), or is None."""

    def __init__(self, text, feature=None):
        super().__init__(text)
        self.feature = feature


def binary_version(path):
    """The first line of @path --version, or None."""
    try:
        out = subprocess.run([path, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=30).stdout.decode()
        return out.splitlines()[0].strip() if out.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def peer_label(version, path):
    """"qemu-10.0" of "QEMU emulator version 10.0.2 (Debian ...)"; without a
    QEMU version line, the file's name."""
    m = re.match(r"QEMU emulator version (\d+)\.(\d+)", version or "")
    return "qemu-%s.%s" % m.groups() if m else os.path.basename(path)


def make_runners(binary, peers):
    """Ours then each of @peers, labelled; a label seen before gets -2, -3..."""
    runners = [(OURS, binary, False)]
    seen = {OURS: 1}
    for path in peers or ():
        lab = peer_label(binary_version(path), path)
        seen[lab] = seen.get(lab, 0) + 1
        if seen[lab] > 1:
            lab = "%s-%d" % (lab, seen[lab])
        runners.append((lab, path, True))
    return runners


def ratio_labels(labels):
    """The labels ours is put against in the tables: every other one."""
    return [lab for lab in labels[1:]] if labels and labels[0] == OURS else []


def na_text(e):
    """A table cell for a binary that cannot run a scenario."""
    return "n/a (no %s)" % e.feature if e.feature else "n/a (refused)"


def _missing(vm, caps, params):
    """The first of @caps or @params (names) that @vm's QMP does not list, or None."""
    try:
        have_caps = {c["capability"] for c in vm.qmp.cmd("query-migrate-capabilities")}
        have_params = set(vm.qmp.cmd("query-migrate-parameters"))
    except (QMPError, MonitorGone):
        return None
    for c in caps:
        if c not in have_caps:
            return c
    for p in params:
        if p not in have_params:
            return p
    return None


def set_migration(vm, what, params, caps):
    """migrate-set-parameters and -capabilities on @vm; Refused if it says no,
    with the feature named when @vm does not list it at all (asked of the
    binary itself, not guessed from its version)."""
    try:
        if params:
            vm.qmp.cmd("migrate-set-parameters", **params)
        if caps:
            vm.qmp.cmd("migrate-set-capabilities",
                       capabilities=[{"capability": c, "state": True} for c in caps])
    except (QMPError, MonitorGone) as e:   # said no, or died of it
        feature = _missing(vm, caps or (), params or {}) if isinstance(e, QMPError) else None
        raise Refused("%s: %s" % (what, e), feature)
