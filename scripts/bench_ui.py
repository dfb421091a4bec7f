#!/usr/bin/env python
"""UI benchmark: control change -> repainted heatmap, and first render, in Debian Chromium.

What it measures (issue 5, "Done when"; targets: change p95 <= 150 ms, first render <= 2 s):

1. Builds a catalog of ``--models`` models (default 500): the shipped catalog plus synthetic variants of
   its rows (new ids under ``synthetic/``, KV-head counts varied among the divisors of the query heads,
   so the grid has a realistic mix of valid / replicated / invalid cells), written to a temp parquet.
2. Serves it with ``panel serve dashboard`` on a free 127.0.0.1 port through the app's catalog override
   (the ``TP_PLANNER_CATALOG`` environment variable).
3. **First render**: for ``--loads`` fresh browser contexts, the time from navigation start
   (``performance.timeOrigin``) to the frame in which every validity heatmap is painted. The first load
   of a fresh server process also pays for loading the catalog and computing the validity grid (process
   cache); it is reported apart ("cold") from the later ones ("warm").
4. **Change -> repaint**: ``--changes`` control changes in one page (alternately toggling a framework
   checkbox and a TP-size checkbox, each on then off). For each change the clock starts in the page
   just before the checkbox's ``click()`` and stops at the first animation frame after the heatmaps
   have been *replaced or updated* (the set of heatmap figures, their factors or their data changed in
   the Bokeh document) *and* every heatmap view reports ``has_finished()`` (BokehJS: painted). No sleep
   is used as a measurement; polling runs inside the page at ~1 ms granularity. The time to the first
   document change after the click (the server's first patch, applied) is reported as well, to split
   server time from browser time, and the time until the new heatmap models are in the page's document
   (the rest is BokehJS building and painting their views). Changes that widen the heatmap (more columns
   than its width holds: the figure grows and the page is laid out again) are counted and listed too.

The "repainted" condition reads the Bokeh document (figures whose ``css_classes`` contain
``tp-heatmap``) and BokehJS views (``Bokeh.index``). Prints both figures as a table; ``--json`` also
writes them. Loopback only; every wait is bounded; the server is stopped at the end.

Usage::

    python scripts/bench_ui.py                 # 500 models, 40 changes, 6 page loads
    python scripts/bench_ui.py --models 130    # the shipped catalog only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.panelserver import CHROMIUM_FLAGS, free_port, serve_command, stop_group  # noqa: E402

CATALOG_ENV = "TP_PLANNER_CATALOG"

# In-page probe: the state of the validity heatmaps (installed before any page script runs).
PROBE_JS = r"""
(() => {
  const tp = window.__tp = {firstPaint: null, error: null};
  // Heatmap figures currently laid out: the children (at any depth) of the live "tp-heatmaps" row.
  // (doc.all_models may still list figures that were just removed from the layout.)
  const figures = () => {
    const B = window.Bokeh;
    if (!B || !B.documents || !B.documents.length) return null;
    const out = [];
    for (const doc of B.documents)
      for (const m of doc.all_models) {
        if (!(m.css_classes || []).includes("tp-heatmaps") || !viewOf(m)) continue;
        const stack = [...(m.children || [])];
        while (stack.length) {
          let c = stack.pop();
          if (Array.isArray(c)) c = c[0];  // GridBox-style [child, row, col]
          if (!c) continue;
          if ((c.css_classes || []).includes("tp-heatmap") && c.x_range !== undefined) out.push(c);
          else if (c.children) stack.push(...c.children);
        }
      }
    return out;
  };
  const viewOf = (m) => {
    const idx = window.Bokeh.index;
    if (idx && typeof idx.find_one === "function") return idx.find_one(m);
    // older BokehJS: a plain {id: view} map of roots
    const walk = (v) => { if (!v) return null; if (v.model === m) return v;
      for (const c of (v.child_views || [])) { const r = walk(c); if (r) return r; } return null; };
    for (const r of Object.values(idx || {})) { const f = walk(r); if (f) return f; }
    return null;
  };
  const sigOf = (m) => {
    const parts = [m.id, JSON.stringify(m.x_range.factors || []), (m.y_range.factors || []).length];
    for (const r of m.renderers || []) {
      const src = r.data_source;
      if (src && typeof src.get_length === "function") parts.push(src.id + ":" + src.get_length());
    }
    return parts.join("/");
  };
  // The figure list is re-read only after the document changed (walking every model on each ~1 ms poll
  // would itself load the page's main thread and slow down what is measured).
  let cached = null, dirty = true, hooked = false;
  const figuresCached = () => {
    const B = window.Bokeh;
    if (!hooked && B && B.documents && B.documents.length) {
      for (const doc of B.documents) doc.on_change(() => { dirty = true; }, true);
      hooked = true;
    }
    if (!hooked) return figures();
    if (dirty || cached === null) { dirty = false; cached = figures(); }
    return cached;
  };
  tp.state = () => {
    const figs = figuresCached();
    if (!figs || !figs.length) return {ready: false, sig: "", n: 0};
    let ready = true;
    for (const m of figs) {
      const v = viewOf(m);
      if (!v || v.is_destroyed || !v.has_finished()) { ready = false; break; }
    }
    return {ready, sig: figs.map(sigOf).sort().join("|"), n: figs.length, width: figs.map((m) => m.width).join(",")};
  };
  const nextFrame = () => new Promise((res) => requestAnimationFrame(() => res()));
  // Resolve at the first frame where `pred(state)` holds (polled every ~1 ms), or reject at the deadline.
  tp.waitFor = (pred, timeoutMs) => new Promise((resolve, reject) => {
    const t0 = performance.now();
    const check = async () => {
      let s;
      try { s = tp.state(); } catch (e) { s = {ready: false, sig: ""}; }
      if (pred(s)) { await nextFrame(); resolve(performance.now()); return; }  // the frame that shows it
      if (performance.now() - t0 > timeoutMs) { reject(new Error("timeout; last state " + JSON.stringify(s))); return; }
      setTimeout(check, 1);
    };
    check();
  });
  // Time of the first document change after a mark (server patches; set tp.firstMsg = null to re-arm).
  tp.firstMsg = null;
  const hook = () => {
    for (const doc of window.Bokeh.documents) {
      if (doc.__tpHooked) continue;
      doc.__tpHooked = true;
      doc.on_change(() => { if (tp.firstMsg === null) tp.firstMsg = performance.now(); }, true);
    }
  };
  tp.waitFor((s) => s.ready, 600000).then((t) => { tp.firstPaint = t; hook(); }, (e) => { tp.error = String(e); });
})();
"""

# Click `el` and time until the heatmaps differ from before and are all painted again.
CHANGE_JS = r"""
async (el) => {
  const tp = window.__tp;
  const before = tp.state();
  const t0 = performance.now();
  el.click();          // the widget's own change is applied synchronously here...
  tp.firstMsg = null;  // ...so the next document change is the server's first patch
  let tModels = null;  // when the new heatmap models (figures / factors / data) are in the document
  const t1 = await tp.waitFor((s) => {
    if (tModels === null && s.sig !== before.sig) tModels = performance.now();
    return s.ready && s.sig !== before.sig;
  }, 60000);
  const first = tp.firstMsg === null ? null : tp.firstMsg - t0;
  const after = tp.state();
  return {ms: t1 - t0, first_patch_ms: first, models_ms: tModels - t0, before: before.n, after: after.n,
          resized: after.width !== before.width};
}
"""


# ---------------------------------------------------------------------------------------------------
# catalog
# ---------------------------------------------------------------------------------------------------


def synthetic_catalog(n_models: int, seed: int = 0) -> pd.DataFrame:
    """The shipped catalog plus synthetic variants of its rows, ``n_models`` rows in all.

    Variant ``k`` of a row keeps every column but gets the id ``synthetic/<name>-v<k>`` and a KV-head
    count drawn from the divisors of its query-head count (so GQA, MQA and MHA variants appear).
    """
    from dashboard.catalog import conform, load_catalog

    base = load_catalog()
    if n_models <= len(base):
        return base.iloc[:n_models].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    n_extra = n_models - len(base)
    ext = base.iloc[np.arange(n_extra) % len(base)].reset_index(drop=True).copy()
    names = [f"{n}-v{k + 1}" for k, n in enumerate(ext["name"].astype(str))]
    ext["name"] = pd.array(names, dtype="string")
    ext["org"] = pd.array(["synthetic"] * n_extra, dtype="string")
    ext["model_id"] = pd.array([f"synthetic/{n}" for n in names], dtype="string")
    kv = ext["num_key_value_heads"].astype("Int64").copy()
    for i, (heads, mla) in enumerate(zip(ext["num_attention_heads"], ext["is_mla"].fillna(False))):
        if pd.isna(heads) or bool(mla):
            continue
        divisors = [d for d in range(1, int(heads) + 1) if int(heads) % d == 0]
        kv.iloc[i] = int(rng.choice(divisors))
    ext["num_key_value_heads"] = kv
    return conform(pd.concat([base, ext], ignore_index=True))


# ---------------------------------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------------------------------


class Server:
    """``panel serve dashboard`` on 127.0.0.1 with ``TP_PLANNER_CATALOG`` set; log in a temp file."""

    def __init__(self, catalog_path: Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile("w+", prefix="bench-ui-", suffix=".log", delete=False)
        cmd = serve_command(self.port, "--liveness", "--check-unused-sessions", "1000",
                            "--unused-session-lifetime", "2000")
        env = {**os.environ, CATALOG_ENV: str(catalog_path), "PYTHONMALLOC": "malloc"}  # (as the README serves it)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"panel serve exited ({self.proc.returncode}):\n{self.text()}")
            try:
                with urllib.request.urlopen(f"{self.base}/liveness", timeout=2):  # noqa: S310 -- loopback
                    return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"server not ready after {timeout} s")

    def text(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")

    def stop(self) -> None:
        stop_group(self.proc)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------------
# browser
# ---------------------------------------------------------------------------------------------------


def first_render(browser, url: str, console: list[str]) -> float:
    """Milliseconds from navigation start to the frame with every heatmap painted (fresh context)."""
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        page = ctx.new_page()
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.add_init_script(PROBE_JS)
        page.goto(url, timeout=600_000)
        page.wait_for_function("() => window.__tp && (window.__tp.firstPaint !== null || window.__tp.error)",
                               timeout=600_000, polling=50)
        res = page.evaluate("() => ({t: window.__tp.firstPaint, e: window.__tp.error})")
        if res["e"]:
            raise RuntimeError(f"first render failed: {res['e']}")
        return float(res["t"])
    finally:
        ctx.close()


def _checkbox(page, group_class: str, label: str):
    """The <input> of the checkbox labelled exactly ``label`` inside the widget with ``group_class``."""
    loc = page.locator(f".{group_class} label").filter(has_text=label)
    for i in range(loc.count()):
        lab = loc.nth(i)
        if lab.inner_text().strip() == label:
            return lab.locator("input").element_handle()
    raise LookupError(f"no checkbox {label!r} in .{group_class}")


def change_latencies(browser, url: str, n_changes: int, console: list[str]) -> list[dict]:
    """Time ``n_changes`` control changes (framework / TP-size toggles) to the repainted heatmaps."""
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
    out: list[dict] = []
    try:
        page = ctx.new_page()
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.add_init_script(PROBE_JS)
        page.goto(url, timeout=600_000)
        page.wait_for_function("() => window.__tp && window.__tp.firstPaint !== null", timeout=600_000, polling=50)
        controls = [
            ("framework", "tp-frameworks", "TensorRT-LLM"),
            ("tp size", "tp-tp-sizes", "24"),
            ("framework", "tp-frameworks", "transformers (native TP)"),
            ("tp size", "tp-tp-sizes", "48"),
        ]
        for i in range(n_changes):
            kind, group, label = controls[i % len(controls)]
            on = (i // len(controls)) % 2 == 0
            el = _checkbox(page, group, label)
            res = page.evaluate(CHANGE_JS, el)
            out.append({"kind": kind, "control": label, "on": on, "ms": float(res["ms"]),
                        "first_patch_ms": None if res["first_patch_ms"] is None else float(res["first_patch_ms"]),
                        "models_ms": float(res["models_ms"]),
                        "heatmaps": res["after"], "resized": bool(res.get("resized"))})
            page.wait_for_timeout(250)  # let the server finish the round trip before the next change
    finally:
        ctx.close()
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=500, help="catalog size (shipped + synthetic variants)")
    ap.add_argument("--changes", type=int, default=40, help="control changes to time (>= 30)")
    ap.add_argument("--loads", type=int, default=6, help="fresh page loads to time (the first is cold)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)

    chromium = shutil.which("chromium")
    if not chromium:
        print("Debian chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    from dashboard.catalog import write_catalog

    with tempfile.TemporaryDirectory(prefix="bench-ui-") as tmp:
        cat = synthetic_catalog(args.models)
        cat_path = write_catalog(cat, Path(tmp) / "catalog.parquet")
        server = Server(Path(cat_path))
        console: list[str] = []
        try:
            server.wait_ready()
            url = f"{server.base}/dashboard"
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
                try:
                    loads = [first_render(browser, url, console) for _ in range(max(1, args.loads))]
                    # Let the server discard the sessions of those page loads first (unused-session
                    # lifetime 2 s, checked every 1 s, then Panel's garbage collection), so their
                    # clean-up does not land inside the timed changes of the next page.
                    time.sleep(6)
                    changes = change_latencies(browser, url, args.changes, console)
                finally:
                    browser.close()
        finally:
            server.stop()

    ms = [c["ms"] for c in changes]
    warm = loads[1:] or loads
    result = {
        "models": len(cat),
        "first_render_cold_ms": round(loads[0], 1),
        "first_render_warm_ms": [round(x, 1) for x in warm],
        "first_render_warm_p50_ms": round(statistics.median(warm), 1),
        "first_render_warm_max_ms": round(max(warm), 1),
        "changes": len(ms),
        "change_p50_ms": round(pct(ms, 50), 1),
        "change_p95_ms": round(pct(ms, 95), 1),
        "change_max_ms": round(max(ms), 1),
        "by_kind": {k: {"n": len(v), "p50_ms": round(pct(v, 50), 1), "p95_ms": round(pct(v, 95), 1)}
                    for k in sorted({c["kind"] for c in changes})
                    for v in [[c["ms"] for c in changes if c["kind"] == k]]},
        "resized_changes": [round(c["ms"], 1) for c in changes if c["resized"]],
        "in_place_p95_ms": round(pct([c["ms"] for c in changes if not c["resized"]] or [float("nan")], 95), 1),
        "first_patch_p50_ms": round(pct([c["first_patch_ms"] for c in changes if c["first_patch_ms"] is not None]
                                        or [float("nan")], 50), 1),
        "heatmap_models_p50_ms": round(pct([c["models_ms"] for c in changes], 50), 1),
        "browser_build_paint_p50_ms": round(pct([c["ms"] - c["models_ms"] for c in changes], 50), 1),
        "console_errors": console[:20],
        "cpu_count": os.cpu_count(),
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }
    print(f"UI benchmark on a {result['models']}-model catalog (Chromium, loopback; "
          f"{result['cpu_count']} cores, load average {result['load_avg_1min']})")
    print(f"  first render, cold server process : {result['first_render_cold_ms']:8.1f} ms   (target <= 2000 ms)")
    print(f"  first render, warm (p50 / max)     : {result['first_render_warm_p50_ms']:8.1f} / "
          f"{result['first_render_warm_max_ms']:.1f} ms over {len(warm)} loads")
    print(f"  control change -> repainted heatmap: p50 {result['change_p50_ms']:.1f} ms, "
          f"p95 {result['change_p95_ms']:.1f} ms, max {result['change_max_ms']:.1f} ms over {len(ms)} changes "
          f"(target p95 <= 150 ms)")
    print(f"    split (p50): click -> first server patch {result['first_patch_p50_ms']:.1f} ms; -> new heatmap models "
          f"in the page {result['heatmap_models_p50_ms']:.1f} ms (server work + transfer); then BokehJS builds and "
          f"paints them in {result['browser_build_paint_p50_ms']:.1f} ms")
    if result["resized_changes"]:
        print(f"    {len(result['resized_changes'])} of the changes widened the heatmap (more columns than fit: the "
              f"page is laid out again): {result['resized_changes']} ms; the other {len(ms) - len(result['resized_changes'])}"
              f" changes: p95 {result['in_place_p95_ms']:.1f} ms")
    for k, v in result["by_kind"].items():
        print(f"    {k:10s}: n={v['n']:3d}  p50 {v['p50_ms']:.1f} ms  p95 {v['p95_ms']:.1f} ms")
    if console:
        print(f"  console errors during the run: {len(console)} (first: {console[0][:160]})")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
