"""The conformance sweep on Ray (``python -m conformance run``, :mod:`conformance.cluster`), with a fake worker
(``tests/conformance_fake_worker.py``: the worker protocol, no framework installed).

One local Ray per module (2 CPUs, no dashboard, no network: :func:`conformance.cluster.start_local`); the
driver uses the Ray already initialised. The work folder is a temporary one (``driver.DATA`` patched)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import ray

from conformance import __main__ as cli
from conformance import cluster, driver, executor, worker_common

FAKE = Path(__file__).resolve().parent / "conformance_fake_worker.py"
VERSION = "0.0.0-fake"
TPS = list(driver.TP_SIZES)


@pytest.fixture(scope="module")
def local_ray():
    cluster.start_local(2)
    yield
    ray.shutdown()


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    """``(configs folder, run(**kw) -> (work folder, log lines))`` with the fake worker as vLLM's."""
    monkeypatch.setattr(driver, "DATA", tmp_path / "data")
    monkeypatch.setitem(driver.WORKER, "vllm", FAKE)
    configs = tmp_path / "configs"
    configs.mkdir()

    def run(**kw):
        lines: list[str] = []
        kw.setdefault("depth", "tp")
        wd = driver.run(sys.executable, "vllm", VERSION, configs, log=lines.append, **kw)
        return wd, lines

    return configs, run


def write_config(configs: Path, name: str, heads: int = 32, **extra) -> str:
    (configs / f"fake--{name}.json").write_text(json.dumps({"model_type": "llama", "num_attention_heads": heads,
                                                            **extra}))
    return f"fake/{name}"


def records(wd: Path, model_id: str) -> list[dict]:
    doc = json.loads((wd / f"{model_id.replace('/', '--')}.json").read_text())
    assert doc["model_id"] == model_id
    return doc["records"]


def test_fake_worker_speaks_the_workers_protocol():
    spec = importlib.util.spec_from_file_location("conformance_fake_worker", FAKE)
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    assert (fake.CELL_PREFIX, fake.MODEL_START, fake.MODEL_DONE) == (
        worker_common.CELL_PREFIX, worker_common.MODEL_START, worker_common.MODEL_DONE)


def test_sweep_on_ray_writes_checkpoints_and_resumes(local_ray, sweep):
    configs, run = sweep
    ids = [write_config(configs, f"m{i}", heads=h) for i, h in enumerate((32, 12, 40, 64, 6))]
    wd, log = run(workers=2, batch=2)
    assert any("3 Ray tasks" in line for line in log), log
    for mid, heads in zip(ids, (32, 12, 40, 64, 6)):
        recs = records(wd, mid)
        assert [r["tp"] for r in recs] == TPS
        assert {r["framework"] for r in recs} == {"vllm"} and {r["version"] for r in recs} == {VERSION}
        assert {r["platform"] for r in recs} == {"cuda-sm90"}
        assert [r["outcome"] for r in recs] == ["built" if heads % tp == 0 else "refused_engine" for tp in TPS]
        # run by a Ray worker process, not by this one
        assert {r["worker_ppid"] for r in recs} != {os.getpid()}
    assert not list(wd.glob("*.tmp*"))  # atomic writes leave no temporary files
    # resume: only the model whose checkpoint is gone runs again
    (wd / "fake--m2.json").unlink()
    before = {p.name: p.stat().st_mtime_ns for p in wd.glob("*.json")}
    wd2, log2 = run(workers=2, batch=2)
    assert wd2 == wd
    assert ": 1 models to run (5 configs)" in log2[0], log2
    assert {p.name: p.stat().st_mtime_ns for p in wd.glob("*.json") if p.name in before} == before
    assert [r["outcome"] for r in records(wd, ids[2])] == ["built" if 40 % tp == 0 else "refused_engine" for tp in TPS]
    _, log3 = run(workers=2, batch=2)
    assert ": 0 models to run (5 configs)" in log3[0], log3


def test_worker_crash_mid_model_marks_the_rest_of_its_cells(local_ray, sweep):
    configs, run = sweep
    ok = write_config(configs, "a-ok")
    bad = write_config(configs, "b-crash", fake_crash_after=3)
    after = write_config(configs, "c-after")
    wd, _ = run(workers=2, batch=3)  # one task: the crash is mid-batch
    recs = records(wd, bad)
    assert [r["outcome"] for r in recs[:3]] == ["built", "built", "refused_engine"]  # tp 1 2 3 of 32 heads
    rest = recs[3:]
    assert len(rest) == len(TPS) - 3 and {r["outcome"] for r in rest} == {"harness_error"}
    for r in rest:
        assert r["reason"].startswith("worker exited with status 3; stderr: ")
        assert "fake worker: crashing on fake/b-crash after 3 cells" in r["reason"]
    # the models before and after it in the same batch are whole (the rest went to a new worker)
    for mid in (ok, after):
        assert "harness_error" not in {r["outcome"] for r in records(wd, mid)}


def test_stalled_worker_is_killed_after_the_model_timeout(local_ray, sweep):
    configs, run = sweep
    write_config(configs, "a-ok")
    hang = write_config(configs, "b-hang", fake_hang=True)
    wd, _ = run(workers=2, batch=2, model_timeout=2)
    recs = records(wd, hang)
    assert len(recs) == len(TPS) and {r["outcome"] for r in recs} == {"harness_error"}
    assert recs[0]["reason"].startswith("worker killed after 2 s on this model")


def test_a_failed_task_leaves_its_models_for_the_next_run(local_ray, sweep, tmp_path):
    configs, _ = sweep
    write_config(configs, "m0")
    missing = str(tmp_path / "no-venv" / "bin" / "python")
    with pytest.raises(SystemExit, match=r"1 Ray tasks failed; .*no interpreter at .*no-venv/bin/python on node"):
        driver.run(missing, "vllm", VERSION, configs, depth="tp", workers=2, log=lambda s: None)
    assert not list(driver.DATA.rglob("*.json"))


def test_driver_connects_to_a_running_cluster(local_ray, sweep, tmp_path):
    """``--ray HOST:PORT``: a second driver process joins the module's Ray (the address ``ray start --head``
    would print) and its tasks run there."""
    configs, _ = sweep
    mid = write_config(configs, "m0", heads=6)
    address = ray.get_runtime_context().gcs_address
    code = (
        "import os, sys; from pathlib import Path; from conformance import driver; print('@@PID', os.getpid());"
        f"driver.DATA = Path({str(driver.DATA)!r}); driver.WORKER['vllm'] = Path({str(FAKE)!r});"
        f"wd = driver.run(sys.executable, 'vllm', {VERSION!r}, Path({str(configs)!r}), depth='tp', ray={address!r});"
        "print('@@WORK', wd)"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=dict(os.environ, PYTHONPATH=str(root)),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"connected to the Ray cluster at {address}" in out.stdout
    wd = Path(next(line.split(maxsplit=1)[1] for line in out.stdout.splitlines() if line.startswith("@@WORK")))
    recs = records(wd, mid)
    assert [r["outcome"] for r in recs] == ["built" if 6 % tp == 0 else "refused_engine" for tp in TPS]
    # the worker's parent is a worker process of the module's Ray, neither driver
    pid = int(next(line.split()[1] for line in out.stdout.splitlines() if line.startswith("@@PID")))
    assert {r["worker_ppid"] for r in recs}.isdisjoint({os.getpid(), pid})


def test_serial_path_without_ray(sweep):
    """``--workers 1`` without ``--ray``: the batches run in this process, through the same executor."""
    configs, run = sweep
    mid = write_config(configs, "m0", heads=12)
    wd, log = run(workers=1, batch=12)
    assert not any("Ray" in line for line in log)
    recs = records(wd, mid)
    assert {r["worker_ppid"] for r in recs} == {os.getpid()}
    assert [r["outcome"] for r in recs] == ["built" if 12 % tp == 0 else "refused_engine" for tp in TPS]


def test_a_task_on_a_node_without_the_repository(tmp_path):
    """A cluster node has neither the checkout nor the configs: the task writes the shipped worker script,
    its sibling modules and the configs to a temporary folder, runs there and removes it."""
    bundle = executor.script_bundle(FAKE)
    assert set(bundle["files"]) == {FAKE.name}
    assert set(executor.script_bundle(driver.WORKER["vllm"])["files"]) >= {"vllm_worker.py", "worker_common.py"}
    cfg = tmp_path / "fake--m0.json"
    cfg.write_text(json.dumps({"num_attention_heads": 8}))
    job = {"platform": "cpu", "models": [{"config_path": "/nowhere/fake--m0.json", "model_id": "fake/m0",
                                          "cells": [{"tp": 1}, {"tp": 3}], "sidecars": {}}]}
    files = {"/nowhere/fake--m0.json": cfg.read_text()}
    bundle["path"] = "/nowhere/tests/conformance_fake_worker.py"
    before = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("conformance-task-*"))
    out = list(executor.run_task(sys.executable, bundle, job, files, 60))
    assert [(mid, [r["outcome"] for r in recs]) for mid, recs in out] == [("fake/m0", ["built", "refused_engine"])]
    assert {r["platform"] for r in out[0][1]} == {"cpu"}
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("conformance-task-*")) == before


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address, expect", [
    ("127.0.0.1:{port}", "error: --ray 127.0.0.1:{port}: no Ray cluster at 127.0.0.1:{port} (connection refused)"),
    ("head-node", "error: --ray 'head-node': give 'auto' (start a local Ray) or a cluster's HOST:PORT"),
    ("ray://127.0.0.1:10001", "error: --ray ray://127.0.0.1:10001: Ray Client addresses (ray://) are not supported"),
])
def test_bad_ray_address_is_one_clear_line(capsys, tmp_path, address, expect):
    port = _closed_port()
    rc = cli.main(["run", "--venv", str(tmp_path / "no-venv"), "--ray", address.format(port=port)])
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(expect.format(port=port)), err


def test_connect_gives_up_on_a_port_that_is_not_ray(monkeypatch):
    """An open port that does not speak Ray's protocol: ``ray.init`` would wait forever; :func:`cluster.connect`
    gives up after its timeout with one line."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]

        def hang(**kw):
            import time

            time.sleep(30)

        monkeypatch.setattr(ray, "init", hang)
        with pytest.raises(cluster.RayUnavailable, match=rf"--ray 127.0.0.1:{port}: the port answers but no Ray "
                           r"cluster accepted the connection within 1 s"):
            cluster.connect(f"127.0.0.1:{port}", timeout=1)
