"""Building a document reader (one per format family: :data:`ragspine.registries.DOCUMENT_READERS`)
and the one entry point, :func:`read_bytes`: sniff the format, build its reader, read."""

from __future__ import annotations

from ragspine.readers.base import DocumentReader, ReadDocument, ReaderLimits
from ragspine.readers.sniff import sniff_format
from ragspine.registries import DOCUMENT_READERS

__all__ = ["DOCUMENT_READERS", "make_document_reader", "read_bytes"]



def make_document_reader(fmt: str, limits: ReaderLimits | None = None) -> DocumentReader:
    """The reader of format ``fmt`` (a :data:`DOCUMENT_READERS` name), within ``limits``."""
    reader: DocumentReader = DOCUMENT_READERS.build(fmt, limits=limits)
    return reader


def read_bytes(data: bytes, where: str, limits: ReaderLimits | None = None) -> ReadDocument:
    """``data`` (a whole file, named ``where``) read by the reader its content calls for."""
    return make_document_reader(sniff_format(data, where), limits).read(data, where)
