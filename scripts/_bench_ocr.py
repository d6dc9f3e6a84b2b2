"""OCR engines compared: character error rate per language and pages per second.

Pages are rendered here with Pillow from text whose every character is known (English in
DejaVu Sans, Chinese and Japanese in a CJK font found by ``fc-list``: Noto Sans CJK or
WenQuanYi Zen Hei), 12 pt at ``--dpi`` on a white A4 page, then read by every OCR engine
that is installed (``ragspine.registries.OCR_ENGINES``), the engines interleaved page by page
so a machine's load falls on both alike. CER = Levenshtein distance /
reference length after whitespace normalisation (runs of whitespace as one space; for
Chinese and Japanese, which put no spaces between words, all whitespace removed).

    python scripts/_bench_ocr.py [--dpi 300] [--pages 2] [--langs eng+chi_sim+jpn] [--engines tesseract,rapidocr]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from typing import Any

from ragspine.testing.ocr_text import character_error_rate

TEXTS = {
    "eng": (
        "The committee approved the annual budget on 14 March 2024 after a long debate about maintenance costs. "
        "Invoice number 58213 lists three items: a replacement pump, two filters and the labour for installation. "
        "Please return the signed form to the office before Friday; late submissions cannot be processed. "
        "Quarterly revenue rose by 7.5 percent, driven mainly by exports to Germany, Japan and Brazil. "
        "The warranty covers defects in materials and workmanship for a period of twenty-four months."
    ),
    "chi_sim": (
        "委员会在二零二四年三月十四日批准了年度预算，会议讨论了维护费用的问题。"
        "发票上列出了三个项目：一台更换的水泵、两个过滤器以及安装的人工费用。"
        "请在星期五之前将签好的表格交回办公室，逾期提交的材料将无法处理。"
        "本季度收入增长了百分之七点五，主要得益于对德国、日本和巴西的出口。"
        "保修范围包括材料和工艺方面的缺陷，保修期为二十四个月。"
    ),
    "jpn": (
        "委員会は二〇二四年三月十四日に年間予算を承認し、保守費用について長い議論が行われました。"
        "請求書には三つの項目が記載されています。交換用のポンプ、二つのフィルター、そして取り付けの作業費です。"
        "署名済みの書類は金曜日までに事務所へ返送してください。期限後の提出は受け付けられません。"
        "今四半期の売上はドイツ、日本、ブラジルへの輸出により七・五パーセント増加しました。"
        "保証は材料および製造上の欠陥を対象とし、期間は二十四か月です。"
    ),
}


def font_path(cjk: bool) -> str:
    """A font file for the script: DejaVu Sans, or the first CJK font ``fc-list`` finds."""
    if not cjk:
        query = ["fc-list", ":family=DejaVu Sans", "file"]
    else:
        query = ["fc-list", ":lang=ja", "file"]
    found = sorted(line.split(":")[0] for line in subprocess.run(query, capture_output=True, text=True).stdout.splitlines())
    if not found:
        raise SystemExit(f"no {'CJK ' if cjk else ''}font: apt-get install fonts-noto-cjk (or fonts-wqy-zenhei)")
    return found[0]


def render_page(text: str, *, cjk: bool, dpi: int = 300, points: float = 12.0) -> Any:
    """``text`` wrapped on an A4 page, ``points`` pt at ``dpi``, black on white (a clean scan)."""
    from PIL import Image, ImageDraw, ImageFont

    width, height = round(8.27 * dpi), round(11.69 * dpi)
    margin = dpi  # one inch
    font = ImageFont.truetype(font_path(cjk), round(points * dpi / 72))
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    lines, line = [], ""
    for token in (list(text) if cjk else text.split(" ")):
        candidate = line + token if cjk or not line else f"{line} {token}"
        if line and font.getlength(candidate) > width - 2 * margin:
            lines.append(line)
            line = token
        else:
            line = candidate
    lines.append(line)
    step = round(points * dpi / 72 * 1.6)
    for index, line in enumerate(lines):
        draw.text((margin, margin + index * step), line, font=font, fill=0)
    image.info["dpi"] = (dpi, dpi)
    return image


def bench_ocr(engines: list[str] | None = None, *, dpi: int = 300, pages: int = 2, langs: str | None = None) -> list[dict[str, Any]]:
    """One row per (engine, language): CER of the language's page and pages/s over ``pages``
    reads of it, the engines taking turns read by read (each engine's first read of a page, its
    warm-up, is not timed). ``langs``: the ``RAGSPINE_OCR_LANGS`` every page is read with
    (default: the page's own language). An engine that is not installed is a row with ``error``."""
    from ragspine.errors import ConfigError, MissingDependencyError
    from ragspine.readers.ocr import OcrEngine, make_ocr_engine
    from ragspine.registries import OCR_ENGINES

    rows: list[dict[str, Any]] = []
    for lang, text in TEXTS.items():
        cjk = lang != "eng"
        text = ("" if cjk else " ").join([text] * 3)  # a full page: about 20 lines
        image = render_page(text, cjk=cjk, dpi=dpi)
        ready: dict[str, OcrEngine] = {}
        for name in engines or [n for n in OCR_ENGINES.names() if n != "none"]:
            try:
                engine = make_ocr_engine(name, langs=langs or lang)
            except (ConfigError, MissingDependencyError) as exc:
                rows.append({"engine": name, "lang": lang, "error": str(exc)})
                continue
            assert engine is not None
            engine.recognize(image)  # warm-up: model load
            ready[name] = engine
        seconds = dict.fromkeys(ready, 0.0)
        read = dict.fromkeys(ready, "")
        for _ in range(pages):
            for name, engine in ready.items():
                start = time.perf_counter()
                lines = engine.recognize(image)
                seconds[name] += time.perf_counter() - start
                read[name] = ("" if cjk else " ").join(line.text for line in lines)
        for name in ready:
            rows.append({"engine": name, "lang": lang, "cer": round(character_error_rate(text, read[name], cjk=cjk), 4),
                         "pages_per_s": round(pages / seconds[name], 3)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--pages", type=int, default=2)
    parser.add_argument("--langs", default=None, help="RAGSPINE_OCR_LANGS for every page (default: the page's language)")
    parser.add_argument("--engines", default="", help="comma-separated OCR_ENGINES names (default: all)")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()] or None
    print(f"{'engine':<10} {'lang':<8} {'CER':>7} {'pages/s':>8}  (dpi {args.dpi}, {args.pages} timed pages each,"
          f" langs {args.langs or 'each page in its own language'})")
    for row in bench_ocr(engines, dpi=args.dpi, pages=args.pages, langs=args.langs):
        if "error" in row:
            print(f"{row['engine']:<10} {row['lang']:<8} not available: {row['error']}")
        else:
            print(f"{row['engine']:<10} {row['lang']:<8} {row['cer']:>7.2%} {row['pages_per_s']:>8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
