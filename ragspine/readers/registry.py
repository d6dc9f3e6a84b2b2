"""The document reader registry (one reader per format family) and the one entry point,
:func:`read_bytes`: sniff the format, build its reader, read."""

from __future__ import annotations

from ragspine.readers.base import DocumentReader, ReadDocument, ReaderLimits
from ragspine.readers.sniff import sniff_format
from ragspine.registry import Entry, Registry

DOCUMENT_READERS = Registry("document reader", entries={
    "text": Entry("ragspine.readers.text:TextDocumentReader", "UTF-8 .txt/.md/.markdown with YAML front matter"),
    "pdf": Entry("ragspine.readers.pdf:PdfiumDocumentReader", "PDF through pypdfium2 (PDFium)", extra="documents"),
    "docx": Entry("ragspine.readers.docx:DocxDocumentReader", "Word .docx through python-docx", extra="documents"),
    "pptx": Entry("ragspine.readers.pptx:PptxDocumentReader", "PowerPoint .pptx through python-pptx", extra="documents"),
    "xlsx": Entry("ragspine.readers.spreadsheet:XlsxDocumentReader", "Excel .xlsx through openpyxl", extra="documents"),
    "csv": Entry("ragspine.readers.spreadsheet:CsvDocumentReader", "UTF-8 .csv/.tsv through the standard library"),
    "html": Entry("ragspine.readers.html:StdlibHtmlDocumentReader", ".html/.htm through the standard library's parser"),
    "image": Entry("ragspine.readers.image:OcrImageDocumentReader", "PNG/JPEG/TIFF through OCR (RAGSPINE_OCR)"),
})


def make_document_reader(fmt: str, limits: ReaderLimits | None = None) -> DocumentReader:
    """The reader of format ``fmt`` (a :data:`DOCUMENT_READERS` name), within ``limits``."""
    reader: DocumentReader = DOCUMENT_READERS.build(fmt, limits=limits)
    return reader


def read_bytes(data: bytes, where: str, limits: ReaderLimits | None = None) -> ReadDocument:
    """``data`` (a whole file, named ``where``) read by the reader its content calls for."""
    return make_document_reader(sniff_format(data, where), limits).read(data, where)
