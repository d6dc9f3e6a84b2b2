"""A tiny PDF writer for tests and benches: no font files, no dependency.

Latin text uses the standard Helvetica font (WinAnsi); CJK text uses a Type0 font whose
glyphs are absent but whose ``ToUnicode`` map gives every code its character, which is all a
text extractor reads. Each line is placed at ``(x, y)`` (points, origin bottom left), in the
order given, so a test can write a page's lines out of visual order.
"""

from __future__ import annotations

from typing import Sequence

Line = tuple[float, float, str]  # x, y, text


def _is_cjk(text: str) -> bool:
    return any(ord(ch) > 0xFF for ch in text)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    pages: Sequence[Sequence[Line]], *, title: str = "", author: str = "", encrypted: bool = False,
    size: tuple[float, float] = (612, 792), font_size: float = 11, outline: Sequence[tuple[str, int]] = (),
) -> bytes:
    """A PDF of ``pages`` (each a list of lines). ``outline``: bookmarks ``(title, page index)``,
    one level. ``encrypted``: a standard security handler
    whose user password is not empty (readers must refuse it, not read garbage)."""
    cjk = sorted({ch for page in pages for _, _, text in page if _is_cjk(text) for ch in text})
    cid = {ch: i + 1 for i, ch in enumerate(cjk)}
    objects: list[bytes] = []

    def add(body: str | bytes) -> int:
        objects.append(body.encode("latin-1") if isinstance(body, str) else body)
        return len(objects)

    catalog = add("")  # filled below
    pages_obj = add("")
    helv = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    fonts = f"/F1 {helv} 0 R"
    if cjk:
        cmap = "\n".join(f"<{cid[ch]:04X}> <{ord(ch):04X}>" for ch in cjk)
        to_unicode = (
            "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T def /CMapType 2 def\n"
            "1 begincodespacerange <0000> <FFFF> endcodespacerange\n"
            f"{len(cjk)} beginbfchar\n{cmap}\nendbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end"
        ).encode("ascii")
        tu = add(b"<< /Length %d >>\nstream\n" % len(to_unicode) + to_unicode + b"\nendstream")
        desc = add("<< /Type /FontDescriptor /FontName /NoGlyphs /Flags 4 /FontBBox [0 -200 1000 900] /ItalicAngle 0"
                   " /Ascent 880 /Descent -120 /CapHeight 700 /StemV 80 >>")
        cidfont = add(f"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /NoGlyphs /CIDSystemInfo << /Registry (Adobe)"
                      f" /Ordering (Identity) /Supplement 0 >> /FontDescriptor {desc} 0 R /DW 1000 /CIDToGIDMap /Identity >>")
        type0 = add(f"<< /Type /Font /Subtype /Type0 /BaseFont /NoGlyphs /Encoding /Identity-H"
                    f" /DescendantFonts [{cidfont} 0 R] /ToUnicode {tu} 0 R >>")
        fonts += f" /F2 {type0} 0 R"
    kids = []
    for page in pages:
        ops = []
        for x, y, text in page:
            if _is_cjk(text):
                hexed = "".join(f"{cid[ch]:04X}" if ch in cid else f"{0:04X}" for ch in text)
                ops.append(f"BT /F2 {font_size} Tf {x} {y} Td <{hexed}> Tj ET")
            else:
                ops.append(f"BT /F1 {font_size} Tf {x} {y} Td ({_escape(text)}) Tj ET")
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(add(f"<< /Type /Page /Parent {pages_obj} 0 R /MediaBox [0 0 {size[0]} {size[1]}]"
                        f" /Resources << /Font << {fonts} >> >> /Contents {content} 0 R >>"))
    outlines = ""
    if outline:
        root = add("")
        items = [add("") for _ in outline]
        for i, (text, page) in enumerate(outline):
            links = (f" /Prev {items[i - 1]} 0 R" if i else "") + (f" /Next {items[i + 1]} 0 R" if i + 1 < len(items) else "")
            objects[items[i] - 1] = (f"<< /Title ({_escape(text)}) /Parent {root} 0 R /Dest [{kids[page]} 0 R /XYZ 0 {size[1]} 0]"
                                     f"{links} >>").encode("latin-1")
        objects[root - 1] = f"<< /Type /Outlines /First {items[0]} 0 R /Last {items[-1]} 0 R /Count {len(items)} >>".encode()
        outlines = f" /Outlines {root} 0 R"
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {pages_obj} 0 R{outlines} >>".encode()
    objects[pages_obj - 1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    info = add(f"<< /Title ({_escape(title)}) /Author ({_escape(author)}) >>")
    trailer_extra = ""
    if encrypted:
        enc = add("<< /Filter /Standard /V 1 /R 2 /Length 40 /P -4 /O <" + "11" * 32 + "> /U <" + "22" * 32 + "> >>")
        trailer_extra = f" /Encrypt {enc} 0 R /ID [<{'33' * 16}> <{'33' * 16}>]"
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root {catalog} 0 R /Info {info} 0 R{trailer_extra} >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)
