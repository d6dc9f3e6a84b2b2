"""Document readers: one per format family, picked by the file's content (see ``base.py``)."""

from ragspine.readers.base import DocumentReader, LineBox, ReadDocument, ReaderLimits
from ragspine.readers.registry import DOCUMENT_READERS, make_document_reader, read_bytes
from ragspine.readers.sniff import EXTENSIONS, sniff_format

__all__ = [
    "DOCUMENT_READERS", "EXTENSIONS", "DocumentReader", "LineBox", "ReadDocument", "ReaderLimits", "make_document_reader",
    "read_bytes", "sniff_format",
]
