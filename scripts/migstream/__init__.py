# SPDX-License-Identifier: GPL-2.0-or-later
"""What scripts/analyze-migration.py knows of QEMU's migration stream."""
