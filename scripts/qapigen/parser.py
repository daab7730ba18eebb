# SPDX-License-Identifier: GPL-2.0-or-later
"""Reading QAPI schema files: locations, errors, doc blocks, expressions, includes."""

import os
import re


# ---------------------------------------------------------------------------
# Errors and source locations

class Loc:
    def __init__(self, fname, line, col=None):
        self.fname = fname
        self.line = line
        self.col = col

    def __str__(self):
        if self.col is None:
            return f'{self.fname}:{self.line}'
        return f'{self.fname}:{self.line}:{self.col}'


class SchemaError(Exception):
    def __init__(self, loc, msg):
        super().__init__(f'{loc}: {msg}')


# ---------------------------------------------------------------------------
# Reading schema files: a tokenizer, a value parser and doc blocks

class Doc:
    """A '##' doc block: the symbol it documents and its @member lines."""

    SECTION = re.compile(r'(Returns|Errors|Since|Notes?|Examples?|TODO|'
                         r'Features|Caution|Use):(\s|$)')

    def __init__(self, loc):
        self.loc = loc
        self.symbol = None
        self.members = {}        # name -> Loc
        self.features = {}

    def parse(self, lines):
        section = None
        for loc, text in lines:
            if self.symbol is None and not section:
                if not text:
                    continue
                m = re.fullmatch(r'@([A-Za-z0-9_.-]+):\s*', text)
                if m:
                    self.symbol = m.group(1)
                    section = 'args'
                    continue
                # Free-form block (module or section heading): keep nothing.
                section = 'free'
                continue
            if section == 'free':
                continue
            m = self.SECTION.match(text)
            if m:
                section = 'features' if m.group(1) == 'Features' else 'other'
                continue
            m = re.match(r'@([A-Za-z0-9_.-]+):', text)
            if m and section in ('args', 'features'):
                table = self.members if section == 'args' else self.features
                if m.group(1) in table:
                    raise SchemaError(loc, f"'@{m.group(1)}' documented twice")
                table[m.group(1)] = loc


class Expr:
    def __init__(self, value, loc, doc):
        self.value = value
        self.loc = loc
        self.doc = doc


class FileParser:
    """Splits one schema file into top-level expressions with their docs."""

    def __init__(self, fname, text):
        self.fname = fname
        self.text = text
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.doc_lines = None     # lines of the '##' block being read
        self.doc_loc = None
        self.pending_doc = None   # finished block waiting for its definition
        self.depth = 0

    def loc(self):
        return Loc(self.fname, self.line, self.pos - self.line_start + 1)

    def error(self, msg):
        raise SchemaError(self.loc(), msg)

    def _comment(self):
        end = self.text.find('\n', self.pos)
        if end < 0:
            end = len(self.text)
        body = self.text[self.pos:end].rstrip()
        at_line_start = self.text[self.line_start:self.pos].strip() == ''
        loc = self.loc()
        self.pos = end
        if body == '##' and at_line_start:
            if self.depth:
                raise SchemaError(loc, "doc comment inside a definition")
            if self.doc_lines is None:
                if self.pending_doc is not None:
                    self._reject_orphan(self.pending_doc)
                self.doc_lines = []
                self.doc_loc = loc
            else:
                doc = Doc(self.doc_loc)
                doc.parse(self.doc_lines)
                self.pending_doc = doc
                self.doc_lines = None
            return
        if self.doc_lines is not None:
            if body != '#' and not body.startswith('# '):
                raise SchemaError(loc, "doc comment lines must start with '# '")
            self.doc_lines.append((loc, body[2:]))

    def _reject_orphan(self, doc):
        if doc.symbol:
            raise SchemaError(doc.loc, f"documentation for '{doc.symbol}' "
                              "is not followed by its definition")

    def _skip_space(self):
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == '\n':
                self.pos += 1
                self.line += 1
                self.line_start = self.pos
            elif ch in ' \t\r':
                self.pos += 1
            elif ch == '#':
                self._comment()
            else:
                if self.doc_lines is not None:
                    self.error("unterminated doc comment (missing '##')")
                return
        if self.doc_lines is not None:
            raise SchemaError(self.doc_loc, "unterminated doc comment")

    def _string(self):
        start = self.loc()
        self.pos += 1
        out = []
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == '\n':
                raise SchemaError(start, "unterminated string")
            ch = self.text[self.pos]
            self.pos += 1
            if ch == "'":
                return ''.join(out)
            if ch == '\\':
                nxt = self.text[self.pos:self.pos + 1]
                if nxt not in ("'", '\\'):
                    self.error(f"unsupported escape '\\{nxt}' in string")
                out.append(nxt)
                self.pos += 1
            else:
                out.append(ch)

    def _value(self):
        self._skip_space()
        if self.pos >= len(self.text):
            self.error("unexpected end of file, expected a value")
        ch = self.text[self.pos]
        if ch == '{':
            return self._dict()
        if ch == '[':
            return self._list()
        if ch == "'":
            return self._string()
        m = re.compile(r'[A-Za-z0-9_-]+').match(self.text, self.pos)
        if m and m.group(0) in ('true', 'false'):
            self.pos = m.end()
            return m.group(0) == 'true'
        if ch == '"':
            self.error("strings use single quotes")
        self.error("expected a string, dict, list, true or false, got "
                   f"'{m.group(0) if m else ch}'")

    def _expect(self, chars, what):
        self._skip_space()
        ch = self.text[self.pos:self.pos + 1]
        if not ch or ch not in chars:
            self.error(f"expected {what}, got "
                       f"{repr(ch) if ch else 'end of file'}")
        self.pos += 1
        return ch

    def _dict(self):
        self.pos += 1
        self.depth += 1
        out = {}
        self._skip_space()
        if self.text[self.pos:self.pos + 1] == '}':
            self.pos += 1
            self.depth -= 1
            return out
        while True:
            self._skip_space()
            if self.text[self.pos:self.pos + 1] == '"':
                self.error("strings use single quotes")
            if self.text[self.pos:self.pos + 1] != "'":
                self.error("expected a string key")
            kloc = self.loc()
            key = self._string()
            if key in out:
                raise SchemaError(kloc, f"duplicate key '{key}'")
            self._expect(':', "':'")
            out[key] = self._value()
            if self._expect(',}', "',' or '}'") == '}':
                self.depth -= 1
                return out

    def _list(self):
        self.pos += 1
        self.depth += 1
        out = []
        self._skip_space()
        if self.text[self.pos:self.pos + 1] == ']':
            self.pos += 1
            self.depth -= 1
            return out
        while True:
            out.append(self._value())
            if self._expect(',]', "',' or ']'") == ']':
                self.depth -= 1
                return out

    def exprs(self):
        while True:
            self._skip_space()
            if self.pos >= len(self.text):
                if self.pending_doc is not None:
                    self._reject_orphan(self.pending_doc)
                return
            loc = Loc(self.fname, self.line)
            if self.text[self.pos] != '{':
                self.error("expected '{' starting a top-level definition")
            doc, self.pending_doc = self.pending_doc, None
            value = self._dict()
            yield Expr(value, loc, doc)


def read_schema(path, seen, deps, out, pragma, included_at=None):
    """Appends the expressions of path (and its includes) to out."""
    real = os.path.realpath(path)
    if real in seen:
        return
    seen.add(real)
    deps.append(path)
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, 'strerror', None) or str(e)
        raise SchemaError(included_at or Loc(path, 1),
                          f"can't read {path}: {why}")
    for expr in FileParser(path, text).exprs():
        v = expr.value
        if 'include' in v:
            check_keys(expr, 'include', ['include'])
            inc = v['include']
            if not isinstance(inc, str):
                raise SchemaError(expr.loc, "'include' needs a file name")
            read_schema(os.path.join(os.path.dirname(path), inc),
                        seen, deps, out, pragma, expr.loc)
        elif 'pragma' in v:
            check_keys(expr, 'pragma', ['pragma'])
            p = v['pragma']
            if not isinstance(p, dict):
                raise SchemaError(expr.loc, "'pragma' needs a dict")
            for key, val in p.items():
                if key != 'doc-required':
                    raise SchemaError(expr.loc, f"unknown pragma '{key}'")
                if not isinstance(val, bool):
                    raise SchemaError(expr.loc, "'doc-required' needs a bool")
                pragma[key] = val
        else:
            out.append(expr)


def check_keys(expr, meta, allowed, required=()):
    for key in expr.value:
        if key not in allowed:
            raise SchemaError(expr.loc, f"{meta} has unknown key '{key}'")
    for key in required:
        if key not in expr.value:
            raise SchemaError(expr.loc, f"{meta} lacks key '{key}'")
