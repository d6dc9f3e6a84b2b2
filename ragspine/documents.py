"""Reading documents from disk: text, Markdown, PDF, Word, PowerPoint, Excel, CSV, HTML; YAML
front matter; validation.

A file's reader is picked by its content (:mod:`ragspine.readers`): ``.txt``/``.md`` are read
as they always were; the other formats' text is what the reader extracts, the store keeps it
and chunk offsets index into it. A paged document's chunks carry ``page`` (the first page
they touch) and ``page_end`` (the last) in their metadata (:func:`chunk_source`).

Every file is read and checked before anything is written, so one bad file stops the
whole ingest with the previous version of every document still active.

Front matter (optional, first line ``---``) — or, for a file without it (a PDF, a Word file), a
*sidecar* beside it, ``report.pdf.meta.yaml``, holding the same ``key: value`` lines — sets ``doc_id``, ``title``, ``sensitivity``,
``valid_as_of`` (in any case: ``Sensitivity:`` is the sensitivity); every other key is
metadata (dates become ISO strings; lists and objects are rejected). A sensitivity that is not
one string label (``[RESTRICTED]``, ``null``) is an error, a key written twice is an error, and a
label that looks like RESTRICTED is RESTRICTED: it fails closed (``retrieval/sensitivity.py``).
Defaults: ``doc_id`` = the path relative to the directory given (or the file name),
``title`` = front matter, else the format's own (PDF info, core properties, ``<title>``), else
the first heading, else the file stem. A text file's chunk offsets are offsets into the file
itself, so ``source_locator`` points into the real file; another format's are offsets into its
extracted text. A file without front matter (every non-text format) gets the
``--sensitivity`` given, else the default, as a ``.txt`` without front matter does.

Front matter or a sidecar may also set the document's ACL — ``acl: {allow: [group:hr], deny:
[user:bob]}``, top-level ``allow:`` / ``deny:``, or ``acl: open`` — which is never metadata
(:func:`ragspine.front_matter.split_acl`): :attr:`SourceDocument.acl`, written with the
document's chunks. Fields without it leave the stored ACL as it is (``ragspine acl set`` changes
it without a re-ingest).

A sidecar is read by the same code as front matter (:mod:`ragspine.front_matter`, then the same field
split, sensitivity and metadata checks), so every rule applies unchanged; a file with both
front matter and a sidecar is an error (no precedence to guess), a directory walk never reads a
sidecar as a document, and a sidecar no document reads (its file missing, or a misspelt
name such as ``.meta.yml``) is an error: the file it meant would be read without its sensitivity.

A default ``doc_id`` replaces only the document read from the same file: when the library's
document of that id was read from another path (two folders' ``copyright.txt``),
:func:`other_sources` finds it and ``ragspine ingest`` refuses the file (a ``doc_id`` in
front matter, or ``--replace-source``, says which document it is).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ragspine.errors import IngestError, MissingDependencyError
from ragspine.front_matter import is_sidecar, orphan_sidecars, plain_value, read_sidecar, sidecar_of, split_acl
from ragspine.readers.base import ReadDocument, ReaderLimits
from ragspine.readers.sniff import EXTENSIONS, IMAGE_EXTENSIONS
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.sensitivity import (
    DEFAULT_SENSITIVITY,
    DOCUMENT_FIELDS,
    RESTRICTED_SENSITIVITY,
    parse_sensitivity,
    split_document_fields,
)
from ragspine.retrieval.storable import check_document, unstorable

if TYPE_CHECKING:
    from ragspine.retrieval.chunking.base import Chunker
    from ragspine.retrieval.chunking.chunk_store import ChunkStore
    from ragspine.retrieval.chunking.chunking import Chunk
    from ragspine.security.principals import ACL

SUFFIXES = tuple(EXTENSIONS)  # .txt .md .markdown .pdf .docx .pptx .xlsx .csv .tsv .html .htm
MAX_FILE_BYTES = 20 * 1024 * 1024
RESERVED_KEYS = DOCUMENT_FIELDS


@dataclass(frozen=True)
class SourceDocument:
    doc_id: str
    text: str  # the body (after front matter)
    title: str
    source: str  # path as given, used in locators
    body_offset: int  # where ``text`` starts in the file
    sensitivity: str = DEFAULT_SENSITIVITY
    valid_as_of: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    chunker: str | None = None  # front matter ``chunker:`` (a RAGSPINE_CHUNKER name): this file's own
    id_from_path: bool = False  # ``doc_id`` is the default (the path), not the front matter's
    acl: ACL | None = None  # front matter / sidecar ``acl:`` (``allow:``/``deny:``); ``None``: it keeps its stored one
    #: what the reader found: format, pages, headings, tables, PDF line boxes (offsets into ``text``)
    structure: ReadDocument | None = field(default=None, repr=False, compare=False)

    def pages_of(self, char_start: int, char_end: int) -> list[int]:
        """The 1-based pages a chunk's ``[char_start, char_end)`` (its locator's offsets) touches;
        ``[]`` for a document without pages (text, Markdown, CSV, HTML)."""
        if self.structure is None:
            return []
        return self.structure.pages_of(char_start - self.body_offset, char_end - self.body_offset)


def collect_files(
    paths: Iterable[str | os.PathLike[str]], problems: list[str] | None = None, *, images: bool = False,
    passed_over: list[str] | None = None,
) -> list[tuple[Path, Path]]:
    """``(file, root)`` pairs: files as given, directories walked for the files of
    :data:`SUFFIXES` (and, with ``images`` — OCR on — PNG, JPEG and TIFF files). A file named
    explicitly must have one of them too. Each bad path raises :class:`IngestError` — or, with
    ``problems``, is appended to it and left out (to report every one at once). ``passed_over``:
    gets ``"path: why"`` for each file a directory walk does not read (another format; an image
    without OCR); hidden files and sidecars are not listed."""
    suffixes = SUFFIXES + (IMAGE_EXTENSIONS if images else ())
    out: list[tuple[Path, Path]] = []
    for raw in paths:
        try:
            out.extend(_collect(Path(raw), str(raw), suffixes, passed_over))
            for orphan in orphan_sidecars(Path(raw)) if Path(raw).is_dir() else []:
                if problems is None:
                    raise IngestError(orphan)
                problems.append(orphan)
        except IngestError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
    return out


def _collect(
    path: Path, raw: str, suffixes: tuple[str, ...] = SUFFIXES, passed_over: list[str] | None = None,
) -> list[tuple[Path, Path]]:
    if not path.exists():
        raise IngestError(f"{raw}: no such file or directory")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        found = [p for p in files if p.suffix.lower() in suffixes]
        if passed_over is not None:
            passed_over.extend(f"{p}: {_why_not_read(p)}" for p in files if p.suffix.lower() not in suffixes
                               and not is_sidecar(p) and not any(part.startswith(".") for part in p.relative_to(path).parts))
        if not found:
            raise IngestError(f"{raw}: directory has no {'/'.join(suffixes)} files")
        return [(p, path) for p in found]
    if not path.is_file():
        raise IngestError(f"{raw}: not a regular file")
    if is_sidecar(path):
        raise IngestError(f"{raw}: a sidecar (the fields of the file beside it), not a document; name that file")
    if path.suffix.lower() not in suffixes:  # the rule a directory walk applies, for a named file too
        images = "" if suffixes != SUFFIXES else "; images with RAGSPINE_OCR set"
        raise IngestError(f"{raw}: not a {'/'.join(suffixes)} file; ingest reads text, Markdown, PDF, Word, PowerPoint,"
                          f" Excel, CSV and HTML{images} (convert it first)")
    return [(path, path.parent)]


def _why_not_read(path: Path) -> str:
    if path.suffix.lower() in IMAGE_EXTENSIONS:
        return "an image: ingest reads images through OCR (set RAGSPINE_OCR)"
    return f"{path.suffix or 'no extension'}: not a format ingest reads"


def read_document(
    path: Path,
    root: Path | None = None,
    *,
    defaults: Mapping[str, Any] | None = None,
    sensitivity: str | None = None,
    max_bytes: int = MAX_FILE_BYTES,
    limits: ReaderLimits | None = None,
) -> SourceDocument:
    """Read and validate one file (raises :class:`IngestError` with the file named); a file
    over ``max_bytes`` (``RAGSPINE_MAX_FILE_BYTES``, default 20 MiB) is refused, and so is one
    over the reader ``limits`` (PDF pages, ZIP entries/size/ratio: :class:`ReaderLimits`)."""
    from ragspine.readers.registry import read_bytes

    where = str(path)
    if unstorable(where):  # a name in another encoding (Python keeps its bytes as lone surrogates)
        shown = where.encode("utf-8", "backslashreplace").decode("utf-8")  # printable: the message is one line on any terminal
        raise IngestError(f"{shown}: the path is not valid UTF-8, so no store can keep it (chunk locators cite it); rename the file")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise IngestError(f"{where}: cannot read ({exc.strerror})") from None
    if size > max_bytes:
        raise IngestError(f"{where}: {size:,} bytes is over the {max_bytes:,}-byte limit (RAGSPINE_MAX_FILE_BYTES);"
                          " split the file or raise the limit")
    try:
        raw = path.read_bytes()
    except OSError as exc:  # e.g. permission denied
        raise IngestError(f"{where}: cannot read ({exc.strerror})") from None
    try:
        read = read_bytes(raw, where, limits)
    except MissingDependencyError as exc:  # the reader's extra is not installed: say which file needed it
        raise exc.naming(where) from None
    body, offset = read.text, read.body_offset
    fields, named = dict(read.fields), where  # front matter; else the sidecar's fields, named by the sidecar
    side = read_sidecar(path)
    if side is not None:
        if read.fields or read.body_offset:
            raise IngestError(f"{where}: has front matter and a sidecar ({sidecar_of(path).name}); keep one of them")
        fields, named = side, str(sidecar_of(path))
    fields, acl = split_acl(fields, named)  # who may read it: never metadata, never in the fingerprint
    front, extra = split_document_fields(fields, named)
    meta: dict[str, Any] = {k: plain_value(v) for k, v in {**read.metadata, **(defaults or {}), **extra}.items()}
    rel = path.relative_to(root) if root is not None and path.is_relative_to(root) else Path(path.name)
    doc_id = str(front.get("doc_id") or rel.as_posix())
    title = str(front.get("title") or read.title or path.stem)
    valid_as_of = str(plain_value(front.get("valid_as_of")) or "")
    try:  # what no store can keep (NUL, lone surrogates from YAML escapes or a file name), named here
        check_document(doc_id, title=title, text=body, sensitivity=front.get("sensitivity"), valid_as_of=valid_as_of,
                       source=where, metadata=meta)
        metadata = validate_metadata(meta)
    except IngestError as exc:
        raise IngestError(f"{named}: {exc}") from None
    return SourceDocument(
        doc_id=doc_id,
        text=body,
        title=title,
        source=where,
        body_offset=offset,
        sensitivity=front_sensitivity(front, named, sensitivity),
        valid_as_of=valid_as_of,
        metadata=metadata,
        chunker=_chunker_name(front.get("chunker"), named),
        id_from_path=not front.get("doc_id"),
        acl=acl,
        structure=read,
    )


def chunk_source(doc: SourceDocument, chunker: Chunker) -> list[Chunk]:
    """``doc`` cut by ``chunker``; a table longer than the budget is cut at its rows
    (:func:`~ragspine.retrieval.chunking.tables.table_row_chunks`), and a paged document's chunks
    get ``page`` and ``page_end`` (the first and last page their text touches) in their
    metadata. A document without tables or pages gets exactly ``chunker.chunk``'s chunks."""
    chunks = chunker.chunk(doc.text, doc.doc_id, title=doc.title, metadata=doc.metadata, sensitivity=doc.sensitivity,
                           source=doc.source, source_offset=doc.body_offset)
    return chunks if doc.structure is None else with_structure(chunks, doc.structure, chunker, doc.body_offset)


def with_structure(chunks: list[Chunk], structure: ReadDocument, chunker: Chunker, body_offset: int = 0) -> list[Chunk]:
    """``chunker``'s ``chunks`` of ``structure.text`` with its long tables cut at their rows,
    their pages recorded and (a PDF's, an OCR'd image's) their lines' boxes kept (see
    :func:`chunk_source`; the service's upload jobs call it too)."""
    if structure.tables:  # a long table: chunks of whole rows, its header for the index
        from ragspine.retrieval.chunking.tables import table_row_chunks

        chunks = table_row_chunks(chunks, structure, chunker, body_offset)
    if structure.paged:
        chunks = with_pages(chunks, structure, body_offset)
    return with_boxes(chunks, structure, body_offset) if structure.line_boxes else chunks


def with_boxes(chunks: Sequence[Chunk], structure: ReadDocument, body_offset: int = 0) -> list[Chunk]:
    """``chunks`` with ``boxes``: where the lines each one touches are on the pages
    (:func:`ragspine.retrieval.boxes.encode_boxes`)."""
    from dataclasses import replace

    from ragspine.retrieval.boxes import encode_boxes, span_lines

    ends = [line.end for line in structure.line_boxes]
    return [replace(c, boxes=encode_boxes(span_lines(structure, c.char_start - body_offset, c.char_end - body_offset, ends)))
            for c in chunks]


def with_pages(chunks: Sequence[Chunk], structure: ReadDocument, body_offset: int = 0) -> list[Chunk]:
    """``chunks`` (of ``structure``'s text, whose offset in its file is ``body_offset``) with
    ``page`` and ``page_end`` in their metadata; unchanged for an unpaged document."""
    if not structure.paged:
        return list(chunks)
    from dataclasses import replace

    out = []
    for chunk in chunks:
        pages = structure.pages_of(chunk.char_start - body_offset, chunk.char_end - body_offset)
        out.append(replace(chunk, metadata={**chunk.metadata, "page": pages[0], "page_end": pages[-1]}))
    return out


def front_sensitivity(front: Mapping[str, Any], where: str, given: str | None = None, *, given_wins: bool = False) -> str:
    """The label of a document's fields (front matter, a sidecar's): theirs when set, else
    ``given`` (``--sensitivity``, an upload's form field), else the default — ``given_wins``
    (an upload's form): ``given`` when set. Either way RESTRICTED from either side wins: a label
    given beside the file never opens what the file marks RESTRICTED, nor the reverse.
    ``sensitivity: null`` (or an empty ``sensitivity:``) is an error, never the default — it
    fails closed."""
    own = parse_sensitivity(front["sensitivity"], where, default=None) if "sensitivity" in front else None
    other = parse_sensitivity(given, where) if given else None
    if RESTRICTED_SENSITIVITY in (own, other):
        return RESTRICTED_SENSITIVITY
    if given_wins and other is not None:
        return other
    return own if own is not None else parse_sensitivity(given, where)


def source_of(locator: str) -> str:
    """The file (or name) a chunk was read from: its ``source_locator`` without ``#char=a,b``."""
    return locator.rsplit("#char=", 1)[0]


def same_file(recorded: str, path: str) -> bool:
    """Whether ``path`` is the file a document was read from (``recorded``: the path as that
    ingest was given it): the same text, or both naming one existing file from here (``./a``
    and ``/abs/a``, a link). A recorded path that names no file from here is another file."""
    if recorded == path:
        return True
    try:
        return Path(recorded).exists() and os.path.samefile(recorded, path)
    except (OSError, ValueError):
        return False


def other_sources(store: ChunkStore, by_path: Mapping[str, str], batch: int = 1000) -> dict[str, str]:
    """``{doc_id: the file its active version was read from}`` for each document of
    ``by_path`` (``doc_id -> the file this ingest reads it from``) whose stored version came
    from another file (what its first chunk's locator cites). A default ``doc_id`` is the
    path below the directory given, so two folders' ``copyright.txt`` share one: this is how
    ``ragspine ingest`` sees that the second would silently replace the first."""
    from ragspine.retrieval.chunking.chunking import chunk_id_for

    ids = list(by_path)
    out: dict[str, str] = {}
    for start in range(0, len(ids), batch):
        for chunk in store.get_chunks([chunk_id_for(d, 0) for d in ids[start : start + batch]]):
            recorded = source_of(chunk.source_locator)
            if chunk.doc_id in by_path and not same_file(recorded, by_path[chunk.doc_id]):
                out[chunk.doc_id] = recorded
    return out


def _chunker_name(value: Any, where: str) -> str | None:
    """Front matter ``chunker:`` as a registry name (``None``: not given)."""
    if value is None:
        return None
    from ragspine.errors import ConfigError
    from ragspine.registries import CHUNKERS

    try:
        return CHUNKERS.canonical(str(value))
    except ConfigError as exc:
        raise IngestError(f"{where}: front matter chunker: {exc}") from None


