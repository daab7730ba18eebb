# SPDX-License-Identifier: GPL-2.0-or-later
"""The sum of migbench slo-mixed (issue 41): over every run of every member,
how often the downtime went above its limit, how often the prediction the
switchover was decided on was within 20% of the downtime achieved, and
whether x-progress ever went back."""

ACCURACY = 0.20


def slo_summary(results, configs):
    """@results: {member: {label: [run, ...]}}; @configs: {member: scenario}.
    Returns the lines to print."""
    runs = over = within = back = 0
    worst = []
    failed_members = []
    for name, by_label in results.items():
        limit = configs[name]["params"]["downtime-limit"]
        rs = by_label.get("ours", [])
        if not rs:
            failed_members.append(name)
        for r in rs:
            runs += 1
            dt = r.get("downtime-ms", 0)
            if dt > limit:
                over += 1
                worst.append("%s: downtime %d ms > %d" % (name, dt, limit))
            # x-downtime's total over the prediction, both in us: query-migrate's
            # whole ms cannot tell 1.9 ms from 1.0, which most small downtimes are.
            ratio = r.get("downtime/predicted")
            if ratio is not None and abs(ratio - 1) <= ACCURACY:
                within += 1
            back += 1 if r.get("progress-went-back") else 0
    lines = ["== slo-mixed: %d runs" % runs,
             "downtime above its limit          %d" % over,
             "predicted within %d%% of achieved  %d (%.0f%%)" % (
                 ACCURACY * 100, within, within * 100 / max(runs, 1)),
             "runs whose x-progress went back   %d" % back]
    lines += ["  " + w for w in worst]
    if failed_members:
        lines.append("members without a completed run: " + ", ".join(failed_members))
    return lines
