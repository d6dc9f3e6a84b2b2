"""``ragspine serve`` on SIGTERM: it stops accepting, lets the request in flight finish, and
exits — bounded by the request deadline, never hanging."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.backends import free_port
from tests.unit.service.slow_backend import http_call as _call
from tests.unit.service.slow_backend import slow_env


def test_sigterm_drains_the_request_in_flight_then_exits(tmp_path: Path) -> None:
    port = free_port()
    env = slow_env(tmp_path, RAGSPINE_CHUNK_STORE=str(tmp_path / "s.db"), RAGSPINE_ADMIN_TOKEN="adm", RAGSPINE_JOB_QUEUE="inprocess")
    server = subprocess.Popen([sys.executable, "-m", "ragspine.cli", "serve", "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if _call(port, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
            time.sleep(0.1)
        status, created = _call(port, "POST", "/v1/admin/tenants", {"tenant_id": "acme"}, "adm")
        assert status == 201, created
        key = created["api_key"]["key"]
        assert _call(port, "POST", "/v1/libraries", {"name": "hb"}, key)[0] == 201
        status, job = _call(port, "POST", "/v1/libraries/hb/documents", {"doc_id": "d", "text": "gearbox warranty"}, key)
        while _call(port, "GET", f"/v1/jobs/{job['job_id']}", token=key)[1]["state"] not in ("succeeded", "failed"):
            time.sleep(0.1)
        answer: dict = {}
        flight = threading.Thread(target=lambda: answer.update(r=_call(port, "POST", "/v1/retrieve", {"query": "slowquery gearbox"}, key)))
        flight.start()
        time.sleep(0.5)  # the request is in flight (embedding its query)
        server.send_signal(signal.SIGTERM)
        flight.join(20)
        assert answer["r"][0] == 200 and answer["r"][1]["snippets"][0]["doc_id"] == "d"  # drained, not dropped
        # uvicorn shuts down gracefully, then re-raises the signal it caught (so a supervisor
        # sees "terminated by SIGTERM"): the exit status is -SIGTERM after a clean shutdown
        assert server.wait(20) in (0, -signal.SIGTERM)
        log = server.stdout.read() if server.stdout else ""
        assert "Waiting for application shutdown" in log and "Finished server process" in log, log[-2000:]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if server.stdout:
            server.stdout.close()
