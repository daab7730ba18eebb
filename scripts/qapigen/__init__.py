# SPDX-License-Identifier: GPL-2.0-or-later
"""The QAPI generator behind scripts/qapi-gen.py: parser, schema, C generators."""
