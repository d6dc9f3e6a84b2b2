"""The OCR role: an image of a page in, its text lines with boxes and confidence out.

A page without a text layer (a scan, an image-only PDF page, an image file) has no text a
reader can take; with ``RAGSPINE_OCR`` set to an engine (off by default) the PDF and image
readers hand its picture to an :class:`OcrEngine` and keep what it reads, each line with its
box, and mark the document ``ocr: true``. ``RAGSPINE_OCR_LANGS`` names the languages
(Tesseract's codes joined by ``+``: ``eng+chi_sim+jpn``).

Engines, measured by ``scripts/_bench_ocr.py`` (character error rate on rendered English,
Chinese and Japanese pages, and pages per second: ``docs/capabilities/documents.md``):

- ``rapidocr`` (:class:`RapidOcrEngine`, the choice): RapidOCR (Apache-2.0) on onnxruntime with
  the PP-OCRv6 models (Apache-2.0) inside its PyPI wheel — nothing is downloaded at run time;
  the ``[ocr]`` extra. One model reads Chinese (simplified and traditional), Japanese and
  Latin-script text whatever ``RAGSPINE_OCR_LANGS`` says; no Cyrillic, no Korean.
- ``tesseract`` (:class:`TesseractOcrEngine`): the Tesseract 5 binary (Apache-2.0) run as a
  subprocess, from the system's packages (``apt-get install tesseract-ocr
  tesseract-ocr-chi-sim tesseract-ocr-jpn``), for the languages RapidOCR's model lacks
  (``RAGSPINE_OCR_LANGS`` picks Tesseract's language data).

Both take a ``PIL.Image`` (Pillow: the ``[ocr]`` extra). Another engine is one class with
``recognize`` and one :data:`~ragspine.registries.OCR_ENGINES` line.
"""

from __future__ import annotations

import functools
import io
import shutil
import subprocess
import unicodedata
from dataclasses import dataclass
from typing import Any, Protocol

from ragspine.errors import BackendError, ConfigError, MissingDependencyError
from ragspine.registries import OCR_ENGINES

DEFAULT_LANGS = "eng"
#: the scale a PDF page is rendered at for OCR (PDF points are 1/72 in: 300 dpi)
RENDER_DPI = 300


@dataclass(frozen=True)
class OcrLine:
    """One line an engine read: its text, its box in the image's pixels
    ``(left, top, right, bottom)`` from the top-left corner, and a confidence in [0, 1]."""

    text: str
    box: tuple[float, float, float, float]
    confidence: float


class OcrEngine(Protocol):
    """Reads the text lines of one page image (a ``PIL.Image.Image``), in reading order."""

    def recognize(self, image: Any) -> list[OcrLine]:
        """The lines of ``image``; ``BackendError`` when the engine fails."""
        ...




def make_ocr_engine(name: str, langs: str = DEFAULT_LANGS) -> OcrEngine | None:
    """The engine ``name`` (an :data:`OCR_ENGINES` name) for ``langs``; ``None`` for ``none``."""
    factory = OCR_ENGINES.load(name)
    engine: OcrEngine | None = None if factory is None else factory(langs=langs)
    return engine


@functools.lru_cache(maxsize=4)
def shared_ocr_engine(name: str, langs: str) -> OcrEngine | None:
    """:func:`make_ocr_engine`, built once per (name, langs) in a process: an engine holds only its
    models (nothing of one document), and loading them is the slow part of a short file."""
    return make_ocr_engine(name, langs)


def read_page_image(engine: OcrEngine, image: Any, *, scale: float, left: float = 0.0, top: float = 0.0
                    ) -> list[tuple[str, tuple[float, float, float, float], float]]:
    """The lines ``engine`` reads on a page's ``image``, each ``(text, box, confidence)`` with its
    box in points from the page's bottom-left corner ``(left, bottom, right, top)``: the image
    shows the page at ``scale`` pixels per point, its top-left corner at ``(left, top)`` points."""
    out = []
    for line in engine.recognize(image):
        text = " ".join(line.text.split())
        if text:
            x0, y0, x1, y1 = line.box
            out.append((text, (left + x0 / scale, top - y1 / scale, left + x1 / scale, top - y0 / scale), line.confidence))
    return out


def check_langs(value: Any) -> str:
    """``RAGSPINE_OCR_LANGS`` in canonical form: language codes joined by ``+``."""
    codes = [code.strip() for code in str(value or "").replace(",", "+").split("+") if code.strip()]
    if not codes or not all(code.replace("_", "").isalnum() for code in codes):
        raise ConfigError(f"RAGSPINE_OCR_LANGS={value!r}: language codes joined by '+' (eng+chi_sim+jpn)")
    return "+".join(codes)


class TesseractOcrEngine:
    """OCR by the ``tesseract`` binary (one subprocess per page, TSV output grouped into lines)."""

    def __init__(self, *, langs: str = DEFAULT_LANGS, binary: str = "tesseract", timeout: float = 300.0) -> None:
        self.langs = check_langs(langs)
        self.timeout = timeout
        path = shutil.which(binary)
        if path is None:
            raise ConfigError(f"RAGSPINE_OCR=tesseract: no {binary!r} binary on PATH; {_apt(self.langs)}")
        self.binary = path
        listed = subprocess.run([path, "--list-langs"], capture_output=True, timeout=30, check=False)
        have = set(listed.stdout.decode("utf-8", "replace").splitlines()[1:])  # after the "List of ..." line
        missing = [code for code in self.langs.split("+") if code not in have]
        if missing:
            raise ConfigError(f"RAGSPINE_OCR_LANGS={self.langs}: tesseract has no data for {'+'.join(missing)};"
                              f" {_apt('+'.join(missing))}")

    def recognize(self, image: Any) -> list[OcrLine]:
        buffer = io.BytesIO()
        dpi = image.info.get("dpi", (RENDER_DPI, RENDER_DPI))
        image.save(buffer, format="PNG", dpi=dpi)
        try:
            done = subprocess.run([self.binary, "stdin", "stdout", "-l", self.langs, "--psm", "3", "tsv"],
                                  input=buffer.getvalue(), capture_output=True, timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired:
            raise BackendError(f"tesseract: no answer in {self.timeout:.0f} s for one page") from None
        if done.returncode != 0:
            raise BackendError(f"tesseract failed: {_last_line(done.stderr)}")
        return tesseract_lines(done.stdout.decode("utf-8", "replace"))


def tesseract_lines(tsv: str) -> list[OcrLine]:
    """Tesseract's TSV (one row per word) as lines: words of one (block, paragraph, line) joined
    by a space, except between two CJK characters; the box is their union, the confidence their mean."""
    groups: dict[tuple[str, str, str], list[tuple[str, float, tuple[int, int, int, int]]]] = {}
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        left, top, width, height = (int(c) for c in cells[6:10])
        groups.setdefault((cells[2], cells[3], cells[4]), []).append(
            (cells[11].strip(), float(cells[10]), (left, top, left + width, top + height)))
    lines = []
    for words in groups.values():
        text = words[0][0]
        for word, _, _ in words[1:]:
            text += word if _cjk(text[-1]) and _cjk(word[0]) else " " + word
        boxes = [box for _, _, box in words]
        box = (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
        confidence = sum(max(conf, 0.0) for _, conf, _ in words) / len(words) / 100
        lines.append(OcrLine(text, tuple(float(v) for v in box), round(confidence, 4)))  # type: ignore[arg-type]
    return lines


class RapidOcrEngine:
    """OCR by RapidOCR: PP-OCRv6 text detection and recognition on onnxruntime, one call per page.

    The text-direction classifier is off: on upright pages it turned whole English lines upside
    down (9% CER on a 300-dpi page, 0% without it, and faster); a scan is upright."""

    def __init__(self, *, langs: str = DEFAULT_LANGS) -> None:
        try:
            from rapidocr import RapidOCR  # type: ignore[import-not-found, unused-ignore]
        except ModuleNotFoundError:
            raise MissingDependencyError("rapidocr", "ocr", "the OCR engine 'rapidocr'") from None
        self.langs = check_langs(langs)  # one model reads what it reads (see the module docstring)
        self._engine = RapidOCR(params={"Global.log_level": "error", "Global.use_cls": False})

    def recognize(self, image: Any) -> list[OcrLine]:
        import numpy as np

        try:
            out: Any = self._engine(np.asarray(image.convert("RGB")))  # the whole pipeline's output (boxes, txts, scores)
        except Exception as exc:  # the engine's own errors, whatever their type  # noqa: BLE001
            raise BackendError(f"rapidocr failed: {' '.join(str(exc).split())[:200]}") from None
        lines = []
        for quad, text, score in zip(out.boxes if out.boxes is not None else (), out.txts or (), out.scores or (), strict=False):
            xs, ys = [float(p[0]) for p in quad], [float(p[1]) for p in quad]
            if str(text).strip():
                lines.append(OcrLine(str(text).strip(), (min(xs), min(ys), max(xs), max(ys)), round(float(score), 4)))
        return lines


def _apt(langs: str) -> str:
    packages = " ".join(f"tesseract-ocr-{code.lower().replace('_', '-')}" for code in langs.split("+"))
    return f"apt-get install tesseract-ocr {packages}"


def _cjk(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def _last_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return " ".join(lines[-1].split())[:200] if lines else "no message"
