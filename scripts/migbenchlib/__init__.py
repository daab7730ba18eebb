# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/migbench's parts, by concern (scripts/ must be on sys.path: they
import qmp, migscenarios, netclient, rfbviewer and syncprobe from there).

  binaries  ours and every --peer, labelled from --version; Refused (a
            feature a binary lacks, asked over QMP) and set_migration
  launch    the VMs' command lines, free ports, --pin (ARCHITECTURE s. 10)
  measure   CPU per process and thread, steal time, guest STAT figures,
            latency histograms, display figures
  series    one run's time series for --json and --plot
  precopy   one precopy or postcopy run and its figures
  snapshot  one snapshot run (background or precopy into a file)
  liveupdate  the live-update scenario: cpr-transfer, cpr-exec and precopy
            of each guest size, its runs, figures and tables
  report    progress lines, the tables, --json and --plot

scripts/migbench itself keeps the command line and the order of runs.
Imports go one way, never in a loop: migbench -> binaries, precopy,
snapshot, liveupdate, report, launch; precopy, snapshot -> binaries,
launch, series, measure; liveupdate -> binaries, launch, report; launch ->
measure; report -> binaries, series. binaries, measure
and series import only qmp from scripts/ (snapbench.py imports binaries).
"""
