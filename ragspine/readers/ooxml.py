"""Opening a DOCX/PPTX/XLSX (a ZIP archive) only within limits, before any XML is parsed.

A ZIP bomb is refused from its central directory: too many entries, too many uncompressed
bytes, or too high a compression ratio (``RAGSPINE_MAX_ZIP_ENTRIES``,
``RAGSPINE_MAX_UNZIPPED_BYTES``, ``RAGSPINE_MAX_ZIP_RATIO``). The declared sizes bound the real
ones: Python's ``zipfile`` never returns more bytes of an entry than its declared size (and
checks its CRC), so a header that lies makes the archive corrupt, not bigger.
"""

from __future__ import annotations

import io
import zipfile

from ragspine.errors import IngestError
from ragspine.readers.base import ReaderLimits


def check_archive(data: bytes, where: str, limits: ReaderLimits) -> io.BytesIO:
    """``data`` as a file object for the format's library, once its ZIP directory is within ``limits``."""
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise IngestError(f"{where}: a corrupt ZIP archive ({exc})") from None
    if len(infos) > limits.max_zip_entries:
        raise IngestError(f"{where}: {len(infos):,} ZIP entries is over the {limits.max_zip_entries:,}-entry limit"
                          " (RAGSPINE_MAX_ZIP_ENTRIES)")
    unzipped = sum(info.file_size for info in infos)
    if unzipped > limits.max_unzipped_bytes:
        raise IngestError(f"{where}: {unzipped:,} bytes uncompressed is over the {limits.max_unzipped_bytes:,}-byte limit"
                          " (RAGSPINE_MAX_UNZIPPED_BYTES)")
    packed = sum(info.compress_size for info in infos)
    ratio = unzipped / max(packed, 1)
    if ratio > limits.max_zip_ratio:
        raise IngestError(f"{where}: compression ratio {ratio:,.0f} is over the {limits.max_zip_ratio:g} limit"
                          " (RAGSPINE_MAX_ZIP_RATIO): a ZIP bomb?")
    return io.BytesIO(data)


def ooxml_error(where: str, what: str, exc: BaseException) -> IngestError:
    """A library's failure to read a checked archive, as one line naming the file."""
    from ragspine.readers.base import one_line

    return IngestError(f"{where}: not a readable {what} file ({one_line(exc)})")
