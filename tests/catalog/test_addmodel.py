""""Add a model" (issue 13 item 2), without a browser: the pure layer (:mod:`dashboard.addmodel`), the
session-extended data (:meth:`dashboard.state.AppData.with_models`), the ``add=`` link parameter, the
interactive Hub fetch against the local Hub server (anonymous unless opted in; fast when the Hub is down)
and the app wiring in-process (:class:`dashboard.app.DashboardApp`).
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

from dashboard import addmodel as am
from dashboard import rules
from dashboard.catalog import normalize_config
from dashboard.state import TP_CHOICES, MAX_LINK_ADDS, ExtendedAppData, PlannerState, added_ids, load_app_data

from tests.hubserver import FakeHub, llama_like_config
from tests.conftest import SHARED

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "hostile"
HUB_CONFIGS = SHARED / "hub-configs"
EXPECTED = json.loads((HOSTILE / "expected.json").read_text())
PROVENANCE = ("source", "fetched_at", "sha", "last_modified", "downloads", "likes", "gated", "safetensors_params",
              "safetensors_params_by_dtype")


@pytest.fixture(scope="module")
def base():
    return load_app_data(None)


@pytest.fixture
def hub():
    with FakeHub() as h:
        yield h


# ------------------------------------------------------------------------------------------------
# the pure layer
# ------------------------------------------------------------------------------------------------


def test_a_real_config_gives_the_catalogs_own_row(base):
    """The added row is what the catalog build makes of the same config.json (same normalizer)."""
    path = HUB_CONFIGS / "Qwen--Qwen3-8B.json"
    if not path.exists():
        path = next(p for p in sorted(HUB_CONFIGS.glob("*.json")) if p.stem.replace("--", "/", 1) in base.model_ids)
    mid = path.stem.replace("--", "/", 1)
    out = am.record_from_config(path.read_bytes(), mid, source="upload")
    assert out.ok and out.kind == "added" and out.model_id == mid
    shipped = base.record(mid)
    mine = {k: (None if pd.isna(v) else v) if not isinstance(v, (list, dict)) else v for k, v in out.record.items()}
    diff = {k: (shipped[k], mine[k]) for k in shipped if k not in PROVENANCE and shipped[k] != mine[k]
            and not (isinstance(shipped[k], float) and isinstance(mine[k], float) and abs(shipped[k] - mine[k]) < 1e-6)}
    assert diff == {}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_hostile_file_gives_an_outcome_never_an_exception(name):
    raw = (HOSTILE / name).read_bytes()
    out = am.uploaded_record(name, raw, taken=())
    want = EXPECTED[name]["status"]
    assert out.model_id.startswith(am.UPLOAD_ORG + "/")
    assert out.message  # a notice for the page, whatever happened
    if want == "ok":
        assert out.ok and out.record is not None and out.record["status"] == "ok"
    else:
        assert not out.ok and out.record is None
        assert out.kind in ("invalid_json", "not_config")
        if out.kind == "not_config":
            assert "not a transformer config the planner can use" in out.message
    # the record is the normalizer's: same status as the hostile corpus says
    assert normalize_config(raw, out.model_id)["status"] == want


def test_oversized_and_empty_uploads_are_refused_with_the_cap():
    big = b'{"x": "' + b"a" * am.MAX_CONFIG_BYTES + b'"}'
    out = am.uploaded_record("big.json", big)
    assert not out.ok and out.kind == "too_large" and "1 MiB" in out.message and f"{len(big):,}" in out.message
    out = am.uploaded_record("empty.json", b"")
    assert not out.ok and out.kind == "invalid_json" and "empty" in out.message


def test_upload_ids_are_marked_sanitised_and_unique():
    cfg = json.dumps({**llama_like_config(), "_name_or_path": "/home/u/ckpt/My Model<script>"}).encode()
    assert am.upload_model_id("config.json", cfg) == "(upload)/My-Model-script"
    plain = json.dumps(llama_like_config()).encode()
    assert am.upload_model_id("my-finetune.json", plain) == "(upload)/my-finetune"
    assert am.upload_model_id("config.json", plain) == "(upload)/llama"
    assert am.upload_model_id("config.json", b"not json") == "(upload)/model"
    assert am.upload_model_id("config.json", plain, taken={"(upload)/llama", "(upload)/llama-2"}) == "(upload)/llama-3"
    assert am.upload_model_id("../../etc/passwd.json", b"{}") == "(upload)/passwd"
    assert not am.is_hub_id(am.upload_model_id("x.json", plain))  # never mistaken for a Hub id


def test_upload_ids_keep_the_org_and_commands_name_the_hub_id():
    """Issue 22 item 4: an upload's org (from _name_or_path, or an org--name file name) is kept, and the
    launch commands map it back to the Hub id; an upload with no org gets the marked placeholder."""
    from dashboard.launch import MODEL_PLACEHOLDER, command_model

    cfg = json.dumps({**llama_like_config(), "_name_or_path": "meta-llama/Llama-3.1-8B"}).encode()
    mid = am.upload_model_id("config.json", cfg)
    assert mid == "(upload)/meta-llama--Llama-3.1-8B" and not am.is_hub_id(mid)
    assert command_model(mid) == ("meta-llama/Llama-3.1-8B", "")
    plain = json.dumps(llama_like_config()).encode()
    assert am.upload_model_id("Qwen--Qwen3-8B.json", plain) == "(upload)/Qwen--Qwen3-8B"
    assert command_model("(upload)/Qwen--Qwen3-8B")[0] == "Qwen/Qwen3-8B"
    got, note = command_model(am.upload_model_id("my-finetune.json", plain))
    assert got == MODEL_PLACEHOLDER and MODEL_PLACEHOLDER in note and "Hub id" in note


@pytest.mark.parametrize("text,ok", [
    ("meta-llama/Llama-3.1-8B", True), ("Qwen/Qwen3-30B-A3B", True), ("a/b", True), ("org/name.v2_x", True),
    ("no-org", False), ("a/b/c", False), ("a--b/c", False), ("a/b..c", False), ("-a/b", False), ("a/b-", False),
    ("a/<script>", False), ("a/b c", False), ("(upload)/x", False), ("", False), ("a/" + "x" * 97, False),
])
def test_hub_ids(text, ok):
    assert am.is_hub_id(text) is ok


def test_rate_limiter_sliding_window():
    now = [100.0]
    lim = am.RateLimiter(limit=3, window=60, clock=lambda: now[0])
    assert [lim.try_acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert lim.remaining() == 0
    assert lim.try_acquire() == pytest.approx(60.0)
    now[0] += 20
    assert lim.try_acquire() == pytest.approx(40.0)  # refused fetches are not counted
    now[0] += 40  # the first three are 60 s old now
    assert lim.try_acquire() == 0.0 and lim.remaining() == 2
    out = am.rate_limited("a/b", 12.3)
    assert out.kind == "rate_limited" and "12 s" in out.message and f"at most {am.RATE_LIMIT_FETCHES}" in out.message
    with pytest.raises(ValueError):
        am.RateLimiter(limit=0)


def test_token_opt_in_setting():
    assert am.hub_token_opt_in({}) is False
    assert am.hub_token_opt_in({am.TOKEN_ENV: "0"}) is False
    assert am.hub_token_opt_in({am.TOKEN_ENV: "hf_abc"}) is False  # a token is not an opt-in
    assert all(am.hub_token_opt_in({am.TOKEN_ENV: v}) for v in ("1", "true", "YES", " on "))


# ------------------------------------------------------------------------------------------------
# the session's extended data
# ------------------------------------------------------------------------------------------------


def _rec(mid: str, **cfg) -> dict:
    out = am.record_from_config(json.dumps({**llama_like_config(), **cfg}).encode(), mid, source="upload")
    assert out.ok
    return out.record


def test_with_models_extends_a_copy_and_computes_only_the_new_rows(base, monkeypatch):
    n0, ids0 = len(base.catalog), base.model_ids
    ext = base.with_models([_rec("acme/m1", num_attention_heads=40, num_key_value_heads=8, hidden_size=5120)])
    assert isinstance(ext, ExtendedAppData) and ext.added_ids == ("acme/m1",)
    assert len(base.catalog) == n0 and base.model_ids == ids0  # the shared data is untouched
    assert ext.model_ids == (*ids0, "acme/m1") and len(ext.catalog) == n0 + 1
    base.grid(frameworks=("vllm",))  # the process-wide part is cached
    seen = []
    real = rules.grid
    monkeypatch.setattr(rules, "grid", lambda cat, **kw: seen.append(len(cat)) or real(cat, **kw))
    g = ext.grid(frameworks=("vllm",))
    assert seen == [1]  # only the added row went through the rules engine
    monkeypatch.setattr(rules, "grid", real)
    full = real(ext.catalog, tp_sizes=TP_CHOICES, frameworks=("vllm",)).reset_index(drop=True)
    cols = ["model_id", "tp", "status", "rule_id"]
    assert g[cols].astype(str).equals(full[cols].astype(str))
    row = g[g["model_id"] == "acme/m1"].set_index("tp")["status"].astype(str)
    assert row[8] == "valid" and row[3] == "invalid"  # 40 heads: TP 8 splits, 3 does not
    assert ext.record("acme/m1")["num_attention_heads"] == 40 and base.record("acme/m1") is None


def test_with_models_replaces_added_rows_and_skips_catalog_ids(base):
    ext = base.with_models([_rec("acme/m1")])
    ext2 = ext.with_models([_rec("acme/m1", num_hidden_layers=7), _rec("acme/m2")])
    assert ext2.base is base and ext2.added_ids == ("acme/m1", "acme/m2")
    assert ext2.record("acme/m1")["num_hidden_layers"] == 7 and ext.record("acme/m1")["num_hidden_layers"] == 32
    shipped = base.model_ids[0]
    assert base.with_models([_rec(shipped)]) is base  # already in the catalog: nothing to add


# ------------------------------------------------------------------------------------------------
# the link's add= parameter
# ------------------------------------------------------------------------------------------------


def test_add_param_round_trips_and_hostile_values_fall_back(base):
    s = PlannerState()
    s.add = ["acme/a", "acme/b"]
    assert s.query_string() == "?add=acme/a,acme/b"
    fresh = PlannerState()
    notes = fresh.apply_query("?add=acme/a,acme/b&model=acme/b", known_models=frozenset(base.model_ids))
    assert notes == [] and fresh.add == ["acme/a", "acme/b"] and fresh.model == "acme/b"
    fresh = PlannerState()
    notes = fresh.apply_query("?add=<script>x</script>,acme/ok,(upload)/mine,a/b/c&model=(upload)/mine",
                              known_models=frozenset(base.model_ids))
    assert fresh.add == ["acme/ok"] and fresh.model == ""
    text = " ".join(notes)
    assert "'<script>x</script>'" in text and "not a Hub model id" in text
    assert "uploaded config.json cannot travel in a link" in text and "'a/b/c'" in text
    many = ",".join(f"acme/m{i}" for i in range(MAX_LINK_ADDS + 3))
    notes = []
    assert len(added_ids(many, notes)) == MAX_LINK_ADDS and f"more than {MAX_LINK_ADDS}" in notes[0]


# ------------------------------------------------------------------------------------------------
# the Hub: anonymous unless opted in, fast when down
# ------------------------------------------------------------------------------------------------


def test_fetch_by_hub_id(hub, tmp_path):
    hub.add("acme/new-7b", llama_like_config(heads=28, kv_heads=4, hidden=3584))
    hub.add("acme/broken", b"{not json")
    hub.add("acme/not-a-transformer", {"model_type": "sklearn", "n_estimators": 100})
    get = partial(am.fetch_hub_model, endpoint=hub.url, cache_dir=str(tmp_path), environ={})
    out = get("acme/new-7b")
    assert out.ok and out.record["num_attention_heads"] == 28 and out.record["source"] == "hub" and out.record["sha"]
    out = get("acme/missing")
    assert out.kind == "not_found" and "was not found on the Hub" in out.message and "http" not in out.message
    out = get("acme/broken")
    assert out.kind == "invalid_json" and "not a JSON object" in out.message
    out = get("acme/not-a-transformer")
    assert out.kind == "not_config" and "not a transformer config" in out.message
    out = get("not an id")
    assert out.kind == "bad_id" and hub.count(repo_id="not an id") == 0


def test_gated_repo_is_read_with_the_servers_token_only_when_opted_in(hub, tmp_path, monkeypatch):
    secret = "hf_ServerTokenForGatedRepos0123"
    monkeypatch.setenv("HF_TOKEN", secret)
    hub.add("acme/gated", gated=True)
    hub.granted_tokens.add(secret)
    cache = str(tmp_path / "cache")
    out = am.fetch_hub_model("acme/gated", endpoint=hub.url, cache_dir=cache, environ={})
    assert not out.ok and out.kind == "gated" and f"{am.TOKEN_ENV}=1" in out.message and secret not in out.message
    assert hub.requests and all(auth is None for _m, _p, auth, _t in hub.requests)  # anonymous
    out = am.fetch_hub_model("acme/gated", endpoint=hub.url, cache_dir=cache, environ={am.TOKEN_ENV: "1"})
    assert out.ok and out.record["num_attention_heads"] == 32
    assert any(auth == f"Bearer {secret}" for _m, _p, auth, _t in hub.requests)
    # the config is in the cache now, read with the token: an anonymous request still cannot have it
    hub.reset_counts()
    out = am.fetch_hub_model("acme/gated", endpoint=hub.url, cache_dir=cache, environ={})
    assert out.kind == "gated" and all(auth is None for _m, _p, auth, _t in hub.requests)


def test_hub_down_answers_at_once_and_a_silent_hub_within_the_timeout(hub, tmp_path):
    t = time.monotonic()
    out = am.fetch_hub_model("acme/a", endpoint="http://127.0.0.1:9", cache_dir=str(tmp_path), environ={})
    assert out.kind == "unreachable" and "did not answer" in out.message and time.monotonic() - t < 3
    hub.add("acme/slow")
    hub.inject("acme/slow", "head", {"sleep": 5.0})
    t = time.monotonic()
    out = am.fetch_hub_model("acme/slow", endpoint=hub.url, cache_dir=str(tmp_path), environ={}, timeout=1.0)
    took = time.monotonic() - t
    assert out.kind == "unreachable" and took < 3.5, took
    assert hub.count("head", "acme/slow") == 1  # one attempt, no retries


def test_hub_offline_mode_refuses_without_reading_the_cache(hub, tmp_path, monkeypatch):
    hub.add("acme/a")
    cache = str(tmp_path)
    assert am.fetch_hub_model("acme/a", endpoint=hub.url, cache_dir=cache, environ={}).ok
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    out = am.fetch_hub_model("acme/a", endpoint=hub.url, cache_dir=cache, environ={})
    assert out.kind == "unreachable" and "HF_HUB_OFFLINE" in out.message


# ------------------------------------------------------------------------------------------------
# the app, in-process
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def app_factory(hub, tmp_path, monkeypatch, base):
    import holoviews as hv
    import panel as pn

    import dashboard.views.add_model as view

    if "bokeh" not in hv.Store.renderers:
        hv.extension("bokeh")
    pn.extension("tabulator")

    monkeypatch.setattr(view, "fetch_hub_model",
                        partial(am.fetch_hub_model, endpoint=hub.url, cache_dir=str(tmp_path), environ={}))
    from dashboard.app import DashboardApp

    return lambda query="": DashboardApp(data=base, query=query)


def test_app_link_adds_and_every_view_gets_the_row_but_not_other_sessions(hub, app_factory, base):
    hub.add("acme/new-7b", llama_like_config(heads=28, kv_heads=4, hidden=3584))
    app = app_factory("?add=acme/new-7b&model=acme/new-7b")
    assert app.notices == [] and app.data.added_ids == ("acme/new-7b",) and app.state.model == "acme/new-7b"
    assert "acme/new-7b" in app.validity.frames["vllm"]["model_id"].astype(str).tolist()
    for tab in ("layout", "memory", "plan", "catalog"):
        assert app.view(tab).data is app.data
    assert "acme/new-7b" in app.controls.model.options and "acme/new-7b" in app.catalog._ids
    assert app.state.query_string().startswith("?add=acme/new-7b")
    other = app_factory()
    assert "acme/new-7b" not in other.data.model_ids and other.data is base and "acme/new-7b" not in base.model_ids


def test_app_failed_link_add_is_dropped_with_a_notice_and_upload_stays_out_of_the_link(hub, app_factory):
    app = app_factory("?add=acme/missing&model=acme/missing")
    assert app.state.add == [] and app.state.model == ""
    assert "was not found on the Hub" in app.add_model.notice.object and "left out" in app.add_model.notice.object
    up = app.add_model.upload
    up.filename = "x.json"
    up.value = json.dumps({**llama_like_config(), "_name_or_path": "team/fine-tune"}).encode()
    # the org from the file is kept (as org--name under "(upload)"; commands map it back to team/fine-tune)
    assert app.data.added_ids == ("(upload)/team--fine-tune",) and app.state.model == "(upload)/team--fine-tune"
    assert app.state.add == [] and "add=" not in app.state.query_string()
    assert "cannot travel in a link" in app.add_model.notice.object
    up.value = (HOSTILE / "34-html-in-strings.json").read_bytes()  # escaped in the notice
    assert "<script>" not in app.add_model.notice.object
    up.value = (HOSTILE / "40-not-json-at-all.json").read_bytes()
    assert "tp-notice-error" in app.add_model.notice.object and len(app.data.added_ids) == 2


def test_app_rate_limit_per_session(hub, app_factory):
    for i in range(am.RATE_LIMIT_FETCHES + 1):
        hub.add(f"acme/m{i}")
    app = app_factory()
    for i in range(am.RATE_LIMIT_FETCHES + 1):
        app.add_model.hub_id.value = f"acme/m{i}"
        app.add_model._on_add_click()
    kinds = [o.kind for o in app.add_model.outcomes]
    assert kinds == ["added"] * am.RATE_LIMIT_FETCHES + ["rate_limited"]
    assert "Too many Hub fetches" in app.add_model.notice.object
    assert hub.count("head", f"acme/m{am.RATE_LIMIT_FETCHES}") == 0
    assert app_factory().add_model.limiter.remaining() == am.RATE_LIMIT_FETCHES  # another session's own limit


def test_a_malformed_id_says_so_even_when_the_rate_limit_is_spent(hub, app_factory):
    for i in range(am.RATE_LIMIT_FETCHES):
        hub.add(f"acme/n{i}")
    app = app_factory()
    for i in range(am.RATE_LIMIT_FETCHES):
        app.add_model.hub_id.value = f"acme/n{i}"
        app.add_model._on_add_click()
    before = app.add_model.limiter.remaining()
    app.add_model.hub_id.value = "not a repo id"
    app.add_model._on_add_click()
    assert app.add_model.outcomes[-1].kind == "bad_id"
    assert "is not a Hub model id" in app.add_model.notice.object
    assert app.add_model.limiter.remaining() == before == 0
