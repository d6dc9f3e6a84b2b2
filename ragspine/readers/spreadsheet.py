"""Spreadsheets as Markdown tables: ``XlsxDocumentReader`` (openpyxl, MIT) and
``CsvDocumentReader`` (the standard library's ``csv``).

A workbook's sheets are its pages: each is a heading (the sheet's name) and its rows as a
Markdown table (the first row the header; empty rows and trailing empty cells left out),
with cached formula values, never formulas. A CSV (``.tsv``: tab-separated) is one table,
not paged. An XLSX is a ZIP archive, checked against the limits before it is opened.
"""

from __future__ import annotations

import csv
import io

from ragspine.errors import IngestError, MissingDependencyError
from ragspine.readers.base import ReadDocument, ReaderLimits, TextBuilder, decode_text
from ragspine.readers.docx import core_metadata
from ragspine.readers.ooxml import check_archive, ooxml_error


class XlsxDocumentReader:
    def __init__(self, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or ReaderLimits()

    def read(self, data: bytes, where: str) -> ReadDocument:
        try:
            import openpyxl  # type: ignore[import-untyped]
        except ModuleNotFoundError:
            raise MissingDependencyError("openpyxl", "documents", "reading Excel files") from None
        stream = check_archive(data, where, self.limits)
        try:
            book = openpyxl.load_workbook(stream, read_only=True, data_only=True)
            try:
                builder = TextBuilder()
                for sheet in book.worksheets:
                    builder.start_page()
                    builder.heading(sheet.title, 1)
                    builder.table(list(sheet.iter_rows(values_only=True)))
                props = book.properties
            finally:
                book.close()
        except Exception as exc:  # openpyxl and its XML parser raise many kinds on a broken part  # noqa: BLE001
            raise ooxml_error(where, "Excel", exc) from None
        return builder.build(where, title=" ".join((props.title or "").split()), metadata=core_metadata(props),
                             title_from_heading=False, format="xlsx")


class CsvDocumentReader:
    def __init__(self, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or ReaderLimits()

    def read(self, data: bytes, where: str) -> ReadDocument:
        text = decode_text(data, where, "not a CSV file")
        if where.lower().endswith(".tsv"):
            delimiter = "\t"
        else:
            try:
                delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
            except csv.Error:
                delimiter = ","
        try:
            rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
        except csv.Error as exc:
            raise IngestError(f"{where}: not a readable CSV file ({exc})") from None
        builder = TextBuilder()
        builder.table(rows)
        return builder.build(where, format="csv")  # a header row is no title: the file's stem is
