"""Real text for differential tests, built deterministically from what is already installed.

``stdlib_docstrings_corpus`` collects the docstrings of a fixed, sorted list of Python
standard-library modules (module, classes, functions and methods defined there), so tests
can compare rankings on real English prose without shipping or downloading a data set.
The result depends only on the Python version, which the project pins per environment.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import warnings
from pathlib import Path
from typing import Iterator

#: Pure-Python, side-effect-free stdlib modules with plenty of documented API.
STDLIB_MODULES: tuple[str, ...] = tuple(
    sorted(
        [
            "abc", "argparse", "ast", "asyncio.events", "asyncio.queues", "asyncio.tasks", "base64",
            "bisect", "calendar", "cmd", "codecs", "collections", "concurrent.futures._base",
            "configparser", "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal",
            "difflib", "dis", "email.message", "email.utils", "enum", "fileinput", "fnmatch",
            "fractions", "ftplib", "functools", "getopt", "gettext", "glob", "gzip", "heapq",
            "hmac", "html", "html.parser", "http.client", "http.cookiejar", "http.server",
            "imaplib", "inspect", "ipaddress", "json", "json.decoder", "json.encoder",
            "locale", "logging", "logging.handlers", "mailbox", "mimetypes", "ntpath",
            "numbers", "operator", "optparse", "os", "pathlib", "pdb", "pickle", "pickletools",
            "pkgutil", "platform", "plistlib", "poplib", "posixpath", "pprint", "pydoc",
            "queue", "quopri", "random", "re", "reprlib", "sched", "secrets", "selectors",
            "shlex", "shutil", "smtplib", "socket", "socketserver", "statistics", "string",
            "subprocess", "tarfile", "tempfile", "textwrap", "threading", "timeit", "tokenize",
            "trace", "traceback", "types", "typing", "unittest.case", "unittest.mock",
            "urllib.parse", "urllib.request", "uuid", "warnings", "wave", "weakref",
            "xml.dom.minidom", "xml.etree.ElementTree", "zipfile", "zipimport",
            "asyncio.base_events", "asyncio.locks", "asyncio.protocols", "asyncio.streams",
            "asyncio.transports", "bz2", "collections.abc", "concurrent.futures.process",
            "concurrent.futures.thread", "doctest", "email._header_value_parser",
            "email.feedparser", "email.headerregistry", "filecmp", "importlib.metadata",
            "linecache", "lzma", "multiprocessing.managers", "multiprocessing.pool", "netrc",
            "runpy", "ssl", "sysconfig", "tracemalloc", "unittest.loader", "unittest.result",
            "xml.sax.handler", "xml.sax.saxutils", "xmlrpc.client", "zoneinfo._zoneinfo",
        ]
    )
)

MIN_WORDS = 8
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")


def _documented(module_name: str) -> Iterator[tuple[str, object]]:
    """``(qualified name, object)`` for the module and what it defines, in sorted order."""
    module = importlib.import_module(module_name)
    yield module_name, module
    for name, obj in sorted(vars(module).items()):
        if getattr(obj, "__module__", None) != module_name:
            continue
        if inspect.isclass(obj):
            yield f"{module_name}.{name}", obj
            for attr, member in sorted(vars(obj).items()):
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member):
                    yield f"{module_name}.{name}.{attr}", member
        elif inspect.isfunction(obj):
            yield f"{module_name}.{name}", obj


def stdlib_docstrings_corpus(limit: int = 3000) -> list[tuple[str, str]]:
    """Up to ``limit`` ``(doc_id, text)`` pairs of distinct stdlib docstrings (>= 8 words)."""
    out: list[tuple[str, str]] = []
    seen_ids: set[str] = set()
    seen_texts: set[str] = set()
    for module_name in STDLIB_MODULES:
        with warnings.catch_warnings():  # e.g. typing.io warns when its __doc__ is read
            warnings.simplefilter("ignore")
            try:
                items = [(doc_id, getattr(obj, "__doc__", None)) for doc_id, obj in _documented(module_name)]
            except ImportError:  # pragma: no cover - a stripped-down Python build
                continue
        for doc_id, raw in items:
            raw = raw if isinstance(raw, str) else None
            if not raw:
                continue
            text = inspect.cleandoc(raw)
            if len(_WORD.findall(text)) < MIN_WORDS or text in seen_texts or doc_id in seen_ids:
                continue
            seen_ids.add(doc_id)
            seen_texts.add(text)
            out.append((doc_id, text))
            if len(out) >= limit:
                return out
    return out


def sample_queries(corpus: list[tuple[str, str]], n: int) -> list[str]:
    """``n`` deterministic queries: opening words of some docstrings, and word mixes of two."""
    if not corpus:
        return []
    words = [_WORD.findall(text) for _, text in corpus]
    queries: list[str] = []
    step = max(1, len(corpus) // max(1, n))
    i = 0
    while len(queries) < n:
        first = words[(i * step) % len(corpus)]
        if i % 3 == 2:  # a multi-word query mixing two documents' vocabulary
            second = words[(i * step * 7 + 13) % len(corpus)]
            query = " ".join(first[1:3] + second[2:5])
        elif i % 3 == 1:  # a short keyword query
            query = " ".join(first[2:4])
        else:  # the opening words of a docstring
            query = " ".join(first[: 3 + i % 4])
        if query.strip():
            queries.append(query)
        i += 1
    return queries


def load_beir_corpus(directory: str | Path) -> list[tuple[str, str]]:
    """``(_id, title + " " + text)`` from a BEIR ``corpus.jsonl`` (read in place, never copied)."""
    out = []
    with open(Path(directory) / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                out.append((str(row["_id"]), f"{row.get('title', '')} {row.get('text', '')}".strip()))
    return out


def load_beir_queries(directory: str | Path, limit: int | None = None) -> list[tuple[str, str]]:
    """``(_id, text)`` from a BEIR ``queries.jsonl``; the test split's ids first when qrels exist."""
    path = Path(directory)
    rows: dict[str, str] = {}
    with open(path / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                rows[str(row["_id"])] = row["text"]
    ids = list(rows)
    qrels = path / "qrels" / "test.tsv"
    if qrels.exists():
        test_ids = []
        for line in qrels.read_text(encoding="utf-8").splitlines()[1:]:
            qid = line.split("\t")[0]
            if qid in rows and qid not in test_ids:
                test_ids.append(qid)
        ids = test_ids + [q for q in ids if q not in set(test_ids)]
    pairs = [(q, rows[q]) for q in ids]
    return pairs[:limit] if limit is not None else pairs


def load_beir_qrels(directory: str | Path) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: relevance}}`` from ``qrels/test.tsv``."""
    out: dict[str, dict[str, int]] = {}
    lines = (Path(directory) / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:
        qid, did, rel = line.split("\t")[:3]
        out.setdefault(qid, {})[did] = int(rel)
    return out
