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
from typing import Any

from ragspine.deadline import DeadlineExceeded
from ragspine.errors import IngestError, MissingDependencyError
from ragspine.readers.base import ReadBudget, ReadDocument, ReaderLimits, TextBuilder, decode_text
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
                builder, budget = TextBuilder(), ReadBudget(where, self.limits)
                for sheet in book.worksheets:
                    budget.check()
                    builder.start_page()
                    builder.heading(sheet.title, 1)
                    builder.table(_rows(sheet, budget))
                props = book.properties
            finally:
                book.close()
        except (IngestError, DeadlineExceeded):  # the read budget's, not the library's
            raise
        except Exception as exc:  # openpyxl and its XML parser raise many kinds on a broken part  # noqa: BLE001
            raise ooxml_error(where, "Excel", exc) from None
        return builder.build(where, title=" ".join((props.title or "").split()), metadata=core_metadata(props),
                             title_from_heading=False, format="xlsx")


def _rows(sheet: Any, budget: ReadBudget, every: int = 1000) -> list[tuple[Any, ...]]:
    """A sheet's rows (cached values), the read budget checked every ``every`` rows and told
    their characters."""
    rows: list[tuple[Any, ...]] = []
    chars = 0
    for row in sheet.iter_rows(values_only=True):
        rows.append(row)
        chars += sum(len(str(v)) for v in row if v is not None)
        if len(rows) % every == 0:
            budget.check(chars)
            chars = 0
    budget.check(chars)
    return rows


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
