"""Marked spans in a Markdown file: where a written figure sits, and putting a new text there.

An inline figure is `<!-- figure: NAME -->TEXT<!-- /figure -->`; a block is
`<!-- figures:begin NAME -->`, its lines, `<!-- figures:end -->`, each marker on its own line.
HTML comments do not render, so the reader sees only TEXT."""

from __future__ import annotations

import re

_INLINE = re.compile(r"<!-- figure: (?P<name>[\w.:-]+) -->(?P<text>.*?)<!-- /figure -->", re.S)
_BLOCK = re.compile(r"<!-- figures:begin (?P<name>[\w.:-]+) -->\n(?P<text>.*?)<!-- figures:end -->", re.S)


def spans(text: str) -> list[tuple[str, str]]:
    """Every (name, text now written) in `text`, blocks and inline figures alike."""
    return [(m["name"], m["text"]) for pattern in (_BLOCK, _INLINE) for m in pattern.finditer(text)]


def block(name: str, body: str) -> str:
    """A block span named `name` holding the lines `body`, ending in a newline."""
    return f"<!-- figures:begin {name} -->\n{body}{'' if body.endswith(chr(10)) else chr(10)}<!-- figures:end -->\n"


def substitute(text: str, values: dict[str, str]) -> str:
    """`text` with each marked span named in `values` holding that value (a block's value is
    whole lines, ending in a newline); spans of other names are left as they are."""

    def replace_block(m: re.Match) -> str:
        if m["name"] not in values:
            return m[0]
        return block(m["name"], values[m["name"]]).removesuffix("\n")

    def inline(m: re.Match) -> str:
        if m["name"] not in values:
            return m[0]
        return f"<!-- figure: {m['name']} -->{values[m['name']]}<!-- /figure -->"

    return _INLINE.sub(inline, _BLOCK.sub(replace_block, text))
