# SPDX-License-Identifier: GPL-2.0-or-later
"""What analyze-migration.py prints and writes: JSON documents, the
warnings and errors of an analysis on stderr, -m's pages and -x's files."""

import json
import os
import sys

from migstream.format import DEFAULT_PAGE_SIZE, MAX_ERRORS_SHOWN
from migstream.reader import PROG, oneline


def emit(doc, out=None):
    (out or sys.stdout).write(json.dumps(doc, indent=2) + '\n')
    (out or sys.stdout).flush()


def ram_pages(blocks):
    """-m: each block's size and non-zero pages, read back from the files
    the dump wrote (so XBZRLE, compressed and mapped-ram pages are in
    their final content, as the guest would see them)."""
    ram = {}
    for blk in blocks:
        pages = {}
        psize = blk.page_size or DEFAULT_PAGE_SIZE
        try:
            with open(blk.dump_path or os.devnull, 'rb') as f:
                off = 0
                while True:
                    page = f.read(psize)
                    if not page:
                        break
                    if page.count(0) != len(page):
                        pages['0x%x' % off] = page.hex()
                    off += len(page)
        except FileNotFoundError:
            pass
        ram[blk.name] = {'size': blk.length, 'pages': pages}
    return ram


def report(an):
    """Warnings and errors on stderr; the exit status."""
    for w in an.warnings:
        print(oneline('%s: warning: %s' % (PROG, w)), file=sys.stderr)
    if an.eof_offset is None and an.fatal is None:
        print('%s: warning: stream ends without EOF at offset 0x%x'
              % (PROG, an.stream_end), file=sys.stderr)
    if an.trailing and an.fatal is None:
        print('%s: warning: %d trailing bytes after the stream at offset 0x%x'
              % (PROG, an.trailing, an.stream_end), file=sys.stderr)
    for e in an.errors[:MAX_ERRORS_SHOWN]:
        print(e.line(), file=sys.stderr)
    if len(an.errors) > MAX_ERRORS_SHOWN:
        print('%s: error: ... and %d more'
              % (PROG, len(an.errors) - MAX_ERRORS_SHOWN), file=sys.stderr)
    if an.fatal is not None:
        print(an.fatal.line(), file=sys.stderr)
    return 1 if an.fatal is not None or an.errors else 0


def make_dir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        print('%s: error: cannot create %s: %s' % (PROG, path, e.strerror),
              file=sys.stderr)
        return False
    return True


def write_json(path, doc):
    try:
        with open(path, 'w') as out:
            emit(doc, out)
    except OSError as e:
        print('%s: error: cannot write %s: %s' % (PROG, path, e.strerror),
              file=sys.stderr)
        return False
    return True
