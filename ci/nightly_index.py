#!/usr/bin/env python3
"""Writes DIR/index.html: one row per harness run found under DIR.

    python3 ci/nightly_index.py DIR

Reads every summary.json under DIR (symlinks are not followed, so the
harness's "latest" links do not list a run twice) and every runs.tsv that
ci/nightly.sh wrote (experiment file, name, seed, mode, exit code, seconds,
report folder). The runs.tsv rows add the exit code and the runs that left no
summary (bad input, a build that broke, a timeout before the report). Runs are
grouped by the folder holding their runs.tsv (one group per night), newest
first; runs from outside nightly.sh come last. Links are relative to DIR, so
the folder can be moved or published as it is. Standard library only.
"""

import html
import json
import os
import sys
from pathlib import Path

EXIT_MEANING = {
    0: "passed",
    1: "expectation failed",
    2: "bad input or setup error",
    124: "timed out",
    130: "interrupted",
    137: "killed",
    143: "terminated",
}


def read_runs_tsv(path):
    rows = []
    for line in path.read_text().splitlines():
        cols = line.split("\t")
        if len(cols) < 7:
            continue
        file, name, seed, mode, rc, secs, report = cols[:7]
        rows.append({
            "file": file, "name": name, "seed": seed, "quick": mode == "quick",
            "exit": int(rc), "seconds": int(secs),
            "report": None if report == "-" else path.parent / report,
            "log": path.parent / "logs" / f"{name}-seed{seed}.log",
        })
    return rows


def collect(top):
    """Returns [(group folder or None, [run])] and every run has a 'summary' (or None)."""
    summaries, tsvs = {}, []
    for dirpath, _dirs, files in os.walk(top):  # does not follow symlinks
        d = Path(dirpath)
        if "summary.json" in files:
            try:
                summaries[d.resolve()] = json.loads((d / "summary.json").read_text())
            except (OSError, ValueError) as e:
                print(f"nightly_index: skipping {d / 'summary.json'}: {e}", file=sys.stderr)
        if "runs.tsv" in files:
            tsvs.append(d / "runs.tsv")
    groups, seen = [], set()
    for tsv in tsvs:
        runs = read_runs_tsv(tsv)
        for r in runs:
            key = r["report"].resolve() if r["report"] else None
            r["summary"] = summaries.get(key)
            seen.add(key)
        groups.append((tsv.parent, runs))
    groups.sort(key=lambda g: g[0].name, reverse=True)  # UTC stamps: newest first
    others = []
    for folder, s in summaries.items():
        if folder not in seen:
            others.append({
                "file": None, "name": s.get("experiment", folder.parent.name),
                "seed": str(s.get("seed", "?")), "quick": bool(s.get("quick")),
                "exit": None, "seconds": None, "report": folder, "log": None, "summary": s,
            })
    if others:
        others.sort(key=lambda r: r["summary"].get("started_at", ""), reverse=True)
        groups.append((None, others))
    return groups


def passed(run):
    if run["exit"] is not None:
        return run["exit"] == 0
    s = run["summary"]
    return bool(s and s.get("all_passed") and not any(v.get("interrupted") for v in s["variants"]))


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}"


def variant_cell(v):
    verdict = (v.get("verdict") or {}).get("verdict", "?")
    after = (v.get("verdict") or {}).get("after_s")
    waves = (v.get("metrics") or {}).get("waves")
    waves = len(v.get("waves") or []) if waves is None else int(waves)
    peak = (v.get("metrics") or {}).get("peak_failure_ratio")
    text = f"<b>{html.escape(v['name'])}</b>: {html.escape(verdict)}"
    if after is not None:
        text += f" after {after:.0f} s"
    text += f", {waves} wave{'s' if waves != 1 else ''}, peak failure {fmt_ratio(peak)}"
    problems = []
    if v.get("interrupted"):
        problems.append("interrupted: " + str(v.get("interrupted_reason") or ""))
    if not (v.get("integrity") or {}).get("ok", True):
        problems.append("integrity: " + "; ".join(v["integrity"].get("problems") or []))
    for p in problems:
        text += f'<br><span class="bad">{html.escape(p)}</span>'
    return text


def link(top, path, label):
    rel = os.path.relpath(path, top)
    return f'<a href="{html.escape(Path(rel).as_posix())}">{html.escape(label)}</a>'


def row(top, run):
    s = run["summary"]
    ok = passed(run)
    cells = [html.escape(run["name"]), html.escape(run["seed"]),
             "quick" if run["quick"] else "full"]
    if s:
        cells.append("<br>".join(variant_cell(v) for v in s["variants"]))
        exps = s.get("expectations") or []
        bad = [e for e in exps if not e.get("passed")]
        text = f"{len(exps) - len(bad)} passed, {len(bad)} failed"
        for e in bad:
            m = e.get("measured")
            measured = "n/a" if m is None else f"{m:.3g}"
            text += (f'<br><span class="bad">{html.escape(str(e["variant"]))}: '
                     f'{html.escape(str(e["metric"]))} {html.escape(str(e["expected"]))}, '
                     f'measured {measured}</span>')
        cells.append(text)
    else:
        cells += ['<span class="bad">no report</span>', "&ndash;"]
    if run["exit"] is None:
        cells.append("&ndash;")
    else:
        cells.append(f'{run["exit"]} ({EXIT_MEANING.get(run["exit"], "error")})'
                     + (f'<br>{run["seconds"]} s' if run["seconds"] is not None else ""))
    links = []
    if run["report"] and (run["report"] / "index.html").exists():
        links.append(link(top, run["report"] / "index.html", "report"))
    if run["report"] and (run["report"] / "junit.xml").exists():
        links.append(link(top, run["report"] / "junit.xml", "junit"))
    if run["log"] and run["log"].exists():
        links.append(link(top, run["log"], "log"))
    cells.append(" ".join(links) or "&ndash;")
    cls = "ok" if ok else "fail"
    return f'<tr class="{cls}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def environment_line(runs):
    adapters = set()
    fallback = False
    for r in runs:
        env = (r["summary"] or {}).get("environment") or {}
        if env.get("gpu_adapter"):
            adapters.add(env["gpu_adapter"])
        fallback |= bool(env.get("gpu_fallback"))
    text = "GPU: " + (", ".join(sorted(adapters)) or "unknown")
    if fallback:
        text += ' <span class="bad">(some runs fell back to the CPU reference executor)</span>'
    return text


HEAD = ["experiment", "seed", "mode", "variants: verdict, waves, peak failure ratio",
        "expectations", "exit", "links"]

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 2em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
tr.ok td:first-child { border-left: 6px solid #2a2; }
tr.fail td:first-child { border-left: 6px solid #c22; }
.bad { color: #c22; }
.status { padding: .5em 1em; color: white; font-weight: bold; display: inline-block; }
.green { background: #2a2; } .red { background: #c22; } .grey { background: #888; }
h2 .status { font-size: .6em; vertical-align: middle; padding: .2em .6em; }
"""


def night_expectations(folder, runs):
    """{(experiment, variant, expectation): (held, of)} for one night: each
    per-run expectation over the night's runs, and each expectation over
    runs of its campaigns (campaign.json under the night's folder)."""
    out = {}
    for r in runs:
        s = r["summary"]
        for e in (s or {}).get("expectations") or []:
            key = (s["experiment"], e["variant"], f'{e["metric"]} {e["expected"]}')
            held, of = out.get(key, (0, 0))
            out[key] = (held + bool(e.get("passed")), of + 1)
    for c in sorted(folder.rglob("campaign.json")) if folder else []:
        try:
            camp = json.loads(c.read_text())
        except (OSError, ValueError):
            continue
        for e in camp.get("expectations") or []:
            key = (camp["plan"]["experiment"], e["spec"]["variant"], "over runs: " + e["spec"]["source"])
            held, of = out.get(key, (0, 0))
            out[key] = (held + bool(e.get("passed")), of + 1)
    return out


def recent_nights(groups, read):
    """[(night folder, read(folder, runs))] of the 14 newest nights."""
    return [(f, read(f, runs)) for f, runs in groups if f is not None][:14]


def rates_table(groups):
    """Each expectation's record night by night (newest first), and the share
    of nights in which it held every time."""
    nights = recent_nights(groups, night_expectations)
    if not nights:
        return ""
    keys = sorted({k for _, e in nights for k in e})
    head = "".join(f"<th>{html.escape(f.name)}</th>" for f, _ in nights)
    rows = []
    for k in keys:
        cells, good, seen = [], 0, 0
        for _, e in nights:
            if k not in e:
                cells.append("<td>&ndash;</td>")
                continue
            held, of = e[k]
            seen += 1
            good += held == of
            cls = "" if held == of else ' class="bad"'
            cells.append(f"<td{cls}>{held}/{of}</td>")
        rate = f"{good}/{seen} nights"
        rows.append("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in k)
                    + f"<td>{rate}</td>" + "".join(cells) + "</tr>")
    return ("<h2>Expectations over the nights</h2><p>Per night: runs (or campaigns) in which "
            "the expectation held, of those that judged it.</p><table><tr><th>experiment</th>"
            "<th>variant</th><th>expectation</th><th>held every time</th>" + head + "</tr>"
            + "".join(rows) + "</table>")


def night_proofs(folder):
    """{experiment: time to proof} of one night's sequential campaigns."""
    out = {}
    for c in sorted(folder.rglob("campaign.json")):
        try:
            camp = json.loads(c.read_text())
        except (OSError, ValueError):
            continue
        seq = camp.get("sequential")
        if not seq:
            continue
        name = camp["plan"]["experiment"] + (" (quick)" if camp["plan"].get("quick") else "")
        out[name] = dict(seq["time_to_proof"], settled=seq.get("settled", False))
    return out


def proof_table(groups):
    """Each experiment's time to proof night by night (newest first): wall
    time, runs used against a fixed-size campaign's, and whether it settled."""
    nights = [(f, p) for f, p in recent_nights(groups, lambda f, _: night_proofs(f)) if p]
    if not nights:
        return ""
    names = sorted({n for _, p in nights for n in p})
    head = "".join(f"<th>{html.escape(f.name)}</th>" for f, _ in nights)
    rows = []
    for name in names:
        cells = []
        for _, p in nights:
            t = p.get(name)
            if t is None:
                cells.append("<td>&ndash;</td>")
                continue
            text = (f"{t['wall_s'] / 60:.1f} min, {t['runs_used']} runs "
                    f"(fixed: {t['fixed_runs']})")
            cls = "" if t["settled"] else ' class="bad"'
            cells.append(f"<td{cls}>{html.escape(text)}"
                         + ("" if t["settled"] else "<br>not settled") + "</td>")
        rows.append(f"<tr><td>{html.escape(name)}</td>" + "".join(cells) + "</tr>")
    return ("<h2>Time to proof over the nights</h2><p>Per night: the sequential campaign's "
            "wall time and runs, against the runs a fixed-size campaign of the file's seeds "
            "would have made.</p><table><tr><th>experiment</th>" + head + "</tr>"
            + "".join(rows) + "</table>")


def render(top, groups):
    all_runs = [r for _, runs in groups for r in runs]
    n_ok = sum(passed(r) for r in all_runs)
    n_err = sum(1 for r in all_runs if r["summary"] is None or (r["exit"] or 0) not in (0, 1))
    exps = [e for r in all_runs if r["summary"] for e in r["summary"].get("expectations") or []]
    n_exp_ok = sum(1 for e in exps if e.get("passed"))
    green = bool(all_runs) and n_ok == len(all_runs)
    summary = (f"{len(all_runs)} run{'s' if len(all_runs) != 1 else ''}: {n_ok} passed, "
               f"{len(all_runs) - n_ok - n_err} failed an expectation, {n_err} errored, "
               f"timed out or were interrupted; expectations {n_exp_ok} passed, "
               f"{len(exps) - n_exp_ok} failed.")
    # Nothing recorded at all (a fresh clone) is not a failure; a nightly
    # folder without any finished run is (its build or setup failed).
    empty = not groups
    if empty:
        summary = "No runs yet: run an experiment, or ci/nightly.sh, and this index lists them."
    elif not all_runs:
        summary = "No run finished: the build or setup failed first (see nightly.log)."
    status = ("grey", "no runs yet") if empty else (
        ("green", "ALL PASSED") if green else ("red", "NO RUNS" if not all_runs else "FAILED"))
    parts = [
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">",
        "<title>Nightly chaos runs</title>", f"<style>{STYLE}</style></head><body>",
        "<h1>Nightly chaos runs</h1>",
        f'<p><span class="status {status[0]}">{status[1]}</span></p>',
        f"<p>{html.escape(summary)}</p>",
        f"<p>{environment_line(all_runs)}</p>",
        proof_table(groups),
        rates_table(groups),
    ]
    for folder, runs in groups:
        if len(groups) > 1 or folder is None:
            title = ("Runs outside nightly.sh" if folder is None
                     else os.path.relpath(folder, top))
            ok = bool(runs) and all(passed(r) for r in runs)
            parts.append(f'<h2>{html.escape(title)} <span class="status {"green" if ok else "red"}">'
                         f'{"passed" if ok else "failed"}</span></h2>')
        if folder is not None and (folder / "nightly.log").exists():
            parts.append(f"<p>{link(top, folder / 'nightly.log', 'nightly.log')}</p>")
        parts.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in HEAD) + "</tr>")
        parts += [row(top, r) for r in runs]
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "\n".join(parts), green, empty


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    top = Path(argv[1])
    top.mkdir(parents=True, exist_ok=True)
    groups = collect(top)
    page, green, empty = render(top, groups)
    tmp = top / "index.html.tmp"
    tmp.write_text(page)
    tmp.replace(top / "index.html")  # never leave a half-written index
    n = sum(len(runs) for _, runs in groups)
    verdict = "no runs yet" if empty else ("all passed" if green else "FAILED")
    print(f"nightly_index: {top / 'index.html'}: {n} runs, {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
