"""Documents read once: the check pass's extractions, kept on disk for the write pass.

``ragspine ingest`` reads and checks every file before its first write (one bad file refuses
the run, nothing written), then writes them streamed, one document in memory at a time. A
text file is cheap to read again; a PDF's extraction — and above all its OCR — is not. A
:class:`ReadSpool` keeps each extracted document the check pass read (its text, fields and
structure map, pickled into a private temporary directory), and the write pass takes it back
instead of reading the file a second time. So an extraction is paid once, memory stays one
document, and what is written is exactly what was checked (a file changed between the two
passes does not slip in unchecked).

Text and Markdown files are not spooled: reading them again costs what reading the spool
would, and the temporary directory stays the size of the extracted text of the other formats.
The directory is removed when the spool closes, whatever happens.
"""

from __future__ import annotations

import pickle
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragspine.documents import SourceDocument

__all__ = ["ReadSpool"]

#: Formats read again rather than spooled (their read is the file's bytes, decoded).
REREAD_FORMATS = frozenset({"text"})


class ReadSpool:
    """Extracted documents by key (the file's path as the run names it), one file each."""

    def __init__(self) -> None:
        self._dir: Path | None = None
        self._files: dict[str, Path] = {}

    def __enter__(self) -> ReadSpool:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._files)

    def put(self, key: str, doc: SourceDocument) -> bool:
        """Keep ``doc`` for :meth:`take` unless it is cheaper to read again; whether it was kept."""
        if doc.structure is None or doc.structure.format in REREAD_FORMATS:
            return False
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="ragspine-read-"))  # mode 0700: this user's only
        path = self._dir / f"{len(self._files)}.pickle"
        with path.open("wb") as out:
            pickle.dump(doc, out, protocol=pickle.HIGHEST_PROTOCOL)
        self._files[key] = path
        return True

    def take(self, key: str) -> SourceDocument | None:
        """The document kept under ``key`` (its file removed), or ``None``: read the file."""
        path = self._files.pop(key, None)
        if path is None:
            return None
        with path.open("rb") as src:
            doc: SourceDocument = pickle.load(src)  # noqa: S301 — written by this process, in its own 0700 directory
        path.unlink()
        return doc

    def close(self) -> None:
        """Remove the temporary directory and everything still in it."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self._files.clear()
