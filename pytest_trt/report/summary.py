"""The terminal summary: engines built and reused, and one row per accuracy test."""

from __future__ import annotations


def engine_counts(results):
    built = reused = 0
    seconds = 0.0
    for res in results:
        for rec in res["records"]:
            if rec.get("kind") == "engine":
                if rec["cache_hit"]:
                    reused += 1
                else:
                    built += 1
                    seconds += rec["build_seconds"]
    return built, reused, seconds


def accuracy_rows(results):
    rows = []
    for res in results:
        engine = next((r for r in res["records"] if r.get("kind") == "engine"), None)
        for rec in res["records"]:
            if rec.get("kind") != "accuracy":
                continue
            for name, out in rec["result"].get("outputs", {}).items():
                atol, rtol = out.get("atol"), out.get("rtol")
                worst = max((out.get("max_abs") or 0.0) / atol if atol else 0.0,
                            (out.get("max_rel") or 0.0) / rtol if rtol else 0.0)
                rows.append({
                    "test": res["nodeid"], "model": rec["model"], "backend": rec["backend"], "policy": rec["policy"],
                    "output": name, "max_abs": out.get("max_abs"), "max_rel": out.get("max_rel"),
                    "atol": atol, "rtol": rtol, "passed": out.get("passed"), "ratio": worst,
                    "engine": ("hit" if engine and engine["cache_hit"] else
                               f"built {engine['build_seconds']:.2f}s" if engine else "-"),
                })
    rows.sort(key=lambda r: (r["passed"], -r["ratio"]))
    return rows


def _fmt(x):
    return "-" if x is None else f"{x:.3g}"


def write_terminal_summary(tr, session, results) -> None:
    if not results:
        return
    tr.section("pytest-trt", sep="=")
    built, reused, seconds = engine_counts(results)
    tr.write_line(f"backend {session.backend.name}; engines built {built} ({seconds:.2f}s), reused {reused}")
    rows = accuracy_rows(results)
    if not rows:
        return
    header = f"{'test':<48} {'output':<14} {'max abs':>9} {'atol':>8} {'max rel':>9} {'rtol':>8}  {'ok':<4} engine"
    tr.write_line(header)
    for r in rows[:50]:
        test = r["test"] if len(r["test"]) <= 48 else "..." + r["test"][-45:]
        tr.write_line(
            f"{test:<48} {r['output'][:14]:<14} {_fmt(r['max_abs']):>9} {_fmt(r['atol']):>8} "
            f"{_fmt(r['max_rel']):>9} {_fmt(r['rtol']):>8}  {'yes' if r['passed'] else 'NO':<4} {r['engine']}"
        )
    if len(rows) > 50:
        tr.write_line(f"... {len(rows) - 50} more rows in --trt-report")
