"""Publishing a file whole or not at all: write a temp file beside it, then `os.replace`.

A reader (another process, a compile) sees the old file or the new one, never half of one, and
a writer killed midway leaves only a dot-named temp file. The temp file is opened like any new
file (mode 0666 less the process umask), so the published file has the permissions the user's
umask gives, as a plain `open(path, "w")` would.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from pathlib import Path
from typing import Iterator


def temp_path_for(path: Path, suffix: str = "") -> Path:
    """A fresh hidden name beside `path` (same directory, so the rename stays on one filesystem),
    ending in `.tmp` and then `suffix` (for writers that choose a format by the extension)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}.tmp{suffix}")


@contextlib.contextmanager
def replacing(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temp path (`temp_path_for`) to write `path`'s new content to; on a clean exit it
    replaces `path` atomically, on an error it is removed and `path` is left as it was."""
    path = Path(path)
    tmp = temp_path_for(path, suffix)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically, in one write."""
    with replacing(path) as tmp, open(tmp, "x", encoding="utf-8") as f:
        f.write(text)
