"""scripts/bench.py --llm and --llm-calibrate run end to end on tiny dev sets (scripted model)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import needs
from tests.unit.test_bench_script import REPO_ROOT, write_beir

needs("bm25s")


def test_llm_figures_and_the_grade_calibration_on_tiny_sets(tmp_path):
    for name in ("xquad-en", "nq-open"):
        write_beir(tmp_path / name)
    out = tmp_path / "llm.json"
    cmd = [sys.executable, str(REPO_ROOT / "scripts" / "bench.py"), "--data-root", str(tmp_path), "--llm", "--llm-calibrate",
           "--llm-sets", "xquad-en", "--llm-queries", "5", "--llm-provider", "scripted", "--out", str(out)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(out.read_text())
    rows = results["llm"]
    assert set(rows) == {f"xquad-en (economy) {c}" for c in (
        "none (plain exit)", "hyde [scripted]", "rag_fusion [scripted]", "step_back [scripted]", "decompose [scripted]",
        "adaptive [scripted]", "corrective [scripted]")}
    assert rows["xquad-en (economy) none (plain exit)"]["ndcg@10"] > 0.5
    assert rows["xquad-en (economy) hyde [scripted]"]["llm_calls_per_query"] == 1.0
    assert rows["xquad-en (economy) none (plain exit)"]["llm_calls_per_query"] == 0.0
    cal = results["llm_calibrate"]["xquad-en (economy)"]
    assert cal["queries"] == 5 and cal["foreign"] == 5 and set(cal["weak_share"]) == {"0.3", "0.4", "0.5", "0.6", "0.7"}
    assert "| xquad-en (economy) hyde [scripted] |" in proc.stdout
