#!/usr/bin/env python3
"""kdc-lint benchmarks on real trees, ratios measured side by side in one run.

Run through bench/lint/run.sh, which prepares the trees and their compilation
databases; results and their reading are in docs/performance.md.

For each tree (a compilation database, one entry per file: the first, as
kdc-lint takes it) and each round, the compared commands run back to back, in
an order that rotates between rounds; a ratio is the median of the per-round
ratios. Wall time and CPU time (user + system of the whole process tree) are
both reported: on a shared machine the CPU time is the steadier of the two.

  kdc-lint -j1 --no-prefilter --no-cache   vs  clang -fsyntax-only, one process per unit
                                           vs  clang-tidy -checks=-*,CHECK, one process
  kdc-lint -j1 --no-cache (prefilter)      vs  the same with --no-prefilter (and the findings
                                               of the two compared); these four commands run
                                               in one rotation
  kdc-lint -j1, cache warm                 vs  the same with an empty cache; also warm with the
                                               stored analysis removed (cache/runs/): every
                                               model from the cache, the analysis run again,
                                               as after a change that leaves the models as
                                               they were
  kdc-lint -j2 --no-cache                  peak memory of the process tree (PSS and RSS,
                                           sampled every 10 ms from /proc)
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time

TIDY_CHECK = "misc-definitions-in-headers"


def load_db(path):
    """Entries of a compilation database, the first per file (as kdc-lint takes them)."""
    with open(path) as f:
        entries = json.load(f)
    seen, out = set(), []
    for e in entries:
        d = e["directory"]
        file = e["file"] if os.path.isabs(e["file"]) else os.path.join(d, e["file"])
        file = os.path.realpath(file)
        if not file.endswith((".c", ".cc", ".cpp", ".cxx")) or file in seen:
            continue
        seen.add(file)
        args = e.get("arguments") or shlex.split(e["command"])
        out.append({"directory": d, "file": file, "arguments": args})
    return out


def write_db(entries, directory):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "compile_commands.json"), "w") as f:
        json.dump(entries, f, indent=1)


def syntax_only_args(e):
    """The entry's command for clang -fsyntax-only: no output, no dependency files."""
    args, out, skip = e["arguments"][1:], [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD", "-MP") or a.startswith("-o"):
            continue
        out.append(a)
    return ["clang", "-fsyntax-only", "-Wno-error", "-Qunused-arguments"] + out


def tree_pids(root):
    """root and its descendants, from /proc."""
    children = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(p))
        except (OSError, ValueError):
            pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def memory_of(pids):
    pss = rss = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1])
        except OSError:
            pass
    return pss, rss


LOAD_SEEN = []  # the 1-minute load average when each command started


def run(cmd, cwd, sample=False, stdout=subprocess.DEVNULL):
    """Runs cmd; wall and CPU seconds of its process tree, exit code, peak memory (KiB)."""
    LOAD_SEEN.append(os.getloadavg()[0])
    peak = {"pss": 0, "rss": 0}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE)
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            pss, rss = memory_of(tree_pids(proc.pid))
            peak["pss"] = max(peak["pss"], pss)
            peak["rss"] = max(peak["rss"], rss)
            time.sleep(0.01)

    th = threading.Thread(target=sampler, daemon=True) if sample else None
    if th:
        th.start()
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    if th:
        th.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rc": proc.returncode,
            "maxrss_kib": ru.ru_maxrss, "pss_kib": peak["pss"], "rss_kib": peak["rss"],
            "stderr": err.decode(errors="replace")}


def clang_script(entries, path):
    """One shell script running clang -fsyntax-only on every unit, one after another."""
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
        for e in entries:
            f.write(f"cd {shlex.quote(e['directory'])} && "
                    f"{shlex.join(syntax_only_args(e))} >/dev/null 2>&1\n")
    os.chmod(path, 0o755)


def median(xs):
    return statistics.median(xs) if xs else float("nan")


class Tree:
    def __init__(self, name, db, work, lint):
        self.name, self.lint = name, lint
        self.entries = load_db(db)
        self.dbdir = os.path.join(work, name + "-db")
        write_db(self.entries, self.dbdir)
        self.work = os.path.join(work, name + "-work")
        os.makedirs(self.work, exist_ok=True)
        self.script = os.path.join(self.work, "clang-syntax-only.sh")
        clang_script(self.entries, self.script)

    def kdc(self, *opts, out="report.json", sample=False):
        cmd = [self.lint, "-p", self.dbdir, "--format=json", "-o", os.path.join(self.work, out),
               *opts]
        r = run(cmd, self.work, sample=sample)
        if r["rc"] not in (0, 1):
            sys.exit(f"kdc-lint failed on {self.name} ({r['rc']}): {' '.join(cmd)}\n{r['stderr']}")
        return r

    def clang(self):
        return run(["sh", self.script], self.work)

    def tidy(self):
        return run(["clang-tidy", "-p", self.dbdir, "--quiet", f"-checks=-*,{TIDY_CHECK}",
                    *[e["file"] for e in self.entries]], self.work)

    def tidy_j2(self):
        # run-clang-tidy: one clang-tidy process per unit, two at a time
        return run(["run-clang-tidy", "-j2", "-p", self.dbdir, "-quiet",
                    f"-checks=-*,{TIDY_CHECK}",
                    *["^" + re.escape(e["file"]) + "$" for e in self.entries]], self.work)

    def findings(self, out):
        with open(os.path.join(self.work, out)) as f:
            doc = json.load(f)
        return doc["findings"], doc["stats"]


def rotate(fns, k):
    k %= len(fns)
    return fns[k:] + fns[:k]


def bench_tree(t, rounds, log):
    res = {"units": len(t.entries)}
    runs = {"kdc": [], "pre": [], "clang": [], "tidy": [], "nopreamble": []}
    cmds = [("kdc", lambda: t.kdc("-j1", "--no-prefilter", "--no-cache", "--stats",
                                  out="nopre.json")),
            ("nopreamble", lambda: t.kdc("-j1", "--no-prefilter", "--no-cache", "--no-preambles",
                                         out="nopreamble.json")),
            ("pre", lambda: t.kdc("-j1", "--no-cache", "--stats", out="pre.json")),
            ("clang", t.clang), ("tidy", t.tidy)]
    for r in range(rounds):
        for name, fn in rotate(cmds, r):
            m = fn()
            runs[name].append(m)
            log(f"  {t.name} round {r + 1}: {name:10s} {m['wall']:7.2f} s wall {m['cpu']:7.2f} s cpu")
    kdc, pre, clang, tidy = runs["kdc"], runs["pre"], runs["clang"], runs["tidy"]
    nopreamble = runs["nopreamble"]
    res["kdc_j1"] = kdc
    res["clang"] = clang
    res["tidy"] = tidy

    def ratio(a, b, key):
        return median([x[key] / y[key] for x, y in zip(a, b)])

    res["vs_clang_wall"] = ratio(kdc, clang, "wall")
    res["vs_clang_cpu"] = ratio(kdc, clang, "cpu")
    res["vs_tidy_wall"] = ratio(kdc, tidy, "wall")
    res["vs_tidy_cpu"] = ratio(kdc, tidy, "cpu")
    res["pre_vs_clang_wall"] = ratio(pre, clang, "wall")
    res["pre_vs_tidy_wall"] = ratio(pre, tidy, "wall")

    # shared preambles (issue 18): the same run without them, the same findings
    res["preambles"] = {
        "off": nopreamble, "on": kdc,
        "off_vs_tidy_wall": ratio(nopreamble, tidy, "wall"),
        "off_vs_tidy_cpu": ratio(nopreamble, tidy, "cpu"),
        "on_over_off_wall": ratio(kdc, nopreamble, "wall"),
        "same_findings": t.findings("nopre.json")[0] == t.findings("nopreamble.json")[0],
        "stats": next((l for l in kdc[-1]["stderr"].splitlines() if "stats:" in l), ""),
    }

    # -j2 against run-clang-tidy -j2, side by side, rotating
    j2, tj2 = [], []
    for r in range(rounds):
        for name, fn in rotate([("kdc", lambda: t.kdc("-j2", "--no-prefilter", "--no-cache",
                                                      out="j2.json")),
                                ("tidy", t.tidy_j2)], r):
            m = fn()
            (j2 if name == "kdc" else tj2).append(m)
            log(f"  {t.name} round {r + 1}: -j2 {name:5s} {m['wall']:7.2f} s wall "
                f"{m['cpu']:7.2f} s cpu")
    res["j2_vs_tidy"] = {"kdc": j2, "tidy": tj2, "wall": ratio(j2, tj2, "wall"),
                         "cpu": ratio(j2, tj2, "cpu")}

    # the prefilter: the same findings, and how much faster
    f_on, s_on = t.findings("pre.json")
    f_off, _ = t.findings("nopre.json")
    res["prefilter"] = {"on": pre, "off": kdc, "same_findings": f_on == f_off,
                        "findings": len(f_off), "skipped": s_on.get("skipped_by_prefilter", 0),
                        "parsed": s_on["translation_units"],
                        "speedup_wall": ratio(kdc, pre, "wall"),
                        "speedup_cpu": ratio(kdc, pre, "cpu")}

    # the cache: cold (empty directory), then warm, with the defaults otherwise (-j1); then
    # warm again without the stored analysis (its entries deleted), so the analysis runs
    cold, warm, again = [], [], []
    cache = os.path.join(t.work, "cache")
    same = True
    for r in range(rounds):
        shutil.rmtree(cache, ignore_errors=True)
        c = t.kdc("-j1", f"--cache-dir={cache}", "--stats", out="cold.json")
        w = t.kdc("-j1", f"--cache-dir={cache}", "--stats", out="warm.json")
        if " 0 parsed," not in w["stderr"] or "the analysis from the cache" not in w["stderr"]:
            sys.exit(f"{t.name}: the warm run parsed or analysed:\n{w['stderr']}")
        shutil.rmtree(os.path.join(cache, "runs"))
        a = t.kdc("-j1", f"--cache-dir={cache}", "--stats", out="again.json")
        if " 0 parsed," not in a["stderr"] or "the analysis run" not in a["stderr"]:
            sys.exit(f"{t.name}: the run without a stored analysis:\n{a['stderr']}")
        same &= t.findings("cold.json")[0] == t.findings("warm.json")[0] == \
            t.findings("again.json")[0]
        cold.append(c)
        warm.append(w)
        again.append(a)
        log(f"  {t.name} round {r + 1}: cache cold {c['wall']:7.2f} s, warm {w['wall']:7.2f} s, "
            f"analysis again {a['wall']:7.2f} s")
    res["cache"] = {"cold": cold, "warm": warm, "again": again, "same_findings": same,
                    "warm_over_cold_wall": median([w["wall"] / c["wall"] for c, w in zip(cold, warm)]),
                    "warm_over_cold_cpu": median([w["cpu"] / c["cpu"] for c, w in zip(cold, warm)]),
                    "again_over_cold_wall": median([a["wall"] / c["wall"]
                                                    for c, a in zip(cold, again)])}

    # -j2: memory of the process tree, and whether the report is the -j1 one
    mem = {}
    for label, opts in (("default", ["-j2", "--no-cache"]),
                        ("no-prefilter", ["-j2", "--no-cache", "--no-prefilter"])):
        m = t.kdc(*opts, "--stats", out=f"j2-{label}.json", sample=True)
        mem[label] = m
        log(f"  {t.name}: -j2 {label}: {m['wall']:.2f} s, peak PSS {m['pss_kib'] / 1024:.1f} MiB, "
            f"peak RSS {m['rss_kib'] / 1024:.1f} MiB")
    res["j2"] = mem
    res["j2_same_report"] = t.findings("j2-no-prefilter.json")[0] == t.findings("nopre.json")[0]
    return res


def table(results, machine):
    out = []
    w = out.append
    w(f"Machine: {machine}\n")
    w("| tree | units | kdc-lint -j1 | clang -fsyntax-only | ratio (wall) | ratio (CPU) | "
      "clang-tidy, 1 check | ratio (wall) | ratio (CPU) | with the prefilter: vs clang, "
      "vs clang-tidy (wall) |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, r in results.items():
        w(f"| {name} | {r['units']} | {median([m['wall'] for m in r['kdc_j1']]):.2f} s | "
          f"{median([m['wall'] for m in r['clang']]):.2f} s | **{r['vs_clang_wall']:.2f}** | "
          f"{r['vs_clang_cpu']:.2f} | {median([m['wall'] for m in r['tidy']]):.2f} s | "
          f"**{r['vs_tidy_wall']:.2f}** | {r['vs_tidy_cpu']:.2f} | "
          f"{r['pre_vs_clang_wall']:.2f}, {r['pre_vs_tidy_wall']:.2f} |")
    w("")
    w("| tree | without preambles | vs clang-tidy (wall) | (CPU) | with them | with / without "
      "(wall) | same findings | -j2 vs `run-clang-tidy -j2` (wall) | (CPU) |")
    w("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for name, r in results.items():
        p, j = r["preambles"], r["j2_vs_tidy"]
        w(f"| {name} | {median([m['wall'] for m in p['off']]):.2f} s | {p['off_vs_tidy_wall']:.2f} | "
          f"{p['off_vs_tidy_cpu']:.2f} | {median([m['wall'] for m in p['on']]):.2f} s | "
          f"**{p['on_over_off_wall']:.2f}** | {'yes' if p['same_findings'] else 'NO'} | "
          f"**{j['wall']:.2f}** | {j['cpu']:.2f} |")
    w("")
    w("| tree | units parsed / skipped | prefilter on | off | faster (wall) | faster (CPU) | "
      "same findings |")
    w("|---|---:|---:|---:|---:|---:|---|")
    for name, r in results.items():
        p = r["prefilter"]
        w(f"| {name} | {p['parsed']} / {p['skipped']} | {median([m['wall'] for m in p['on']]):.2f} s | "
          f"{median([m['wall'] for m in p['off']]):.2f} s | **{p['speedup_wall']:.2f}×** | "
          f"{p['speedup_cpu']:.2f}× | {'yes' if p['same_findings'] else 'NO'} ({p['findings']}) |")
    w("")
    w("| tree | cold cache | warm cache | warm / cold (wall) | warm / cold (CPU) | "
      "models cached, analysis run | / cold (wall) | same findings |")
    w("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, r in results.items():
        c = r["cache"]
        w(f"| {name} | {median([m['wall'] for m in c['cold']]):.2f} s | "
          f"{median([m['wall'] for m in c['warm']]):.2f} s | **{100 * c['warm_over_cold_wall']:.1f} %** | "
          f"{100 * c['warm_over_cold_cpu']:.1f} % | {median([m['wall'] for m in c['again']]):.2f} s | "
          f"{100 * c['again_over_cold_wall']:.1f} % | {'yes' if c['same_findings'] else 'NO'} |")
    w("")
    w("| tree | -j2 | wall | peak PSS (tree) | peak RSS (tree, shared pages counted twice) | "
      "same report as -j1 |")
    w("|---|---|---:|---:|---:|---|")
    for name, r in results.items():
        for label, m in r["j2"].items():
            w(f"| {name} | {label} | {m['wall']:.2f} s | **{m['pss_kib'] / 1024:.0f} MiB** | "
              f"{m['rss_kib'] / 1024:.0f} MiB | {'yes' if r['j2_same_report'] else 'NO'} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lint", required=True, help="the kdc-lint executable")
    ap.add_argument("--work", required=True, help="a scratch directory")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("tree", nargs="+", help="NAME=DIR: DIR/compile_commands.json")
    a = ap.parse_args()
    a.lint = os.path.abspath(a.lint)  # the commands run in each tree's directory
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"],
                             capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        rev = "?"
    version = subprocess.run([a.lint, "--version"], capture_output=True, text=True).stdout.strip()
    machine = (f"{os.cpu_count()} CPUs ({cpu}); load average at start "
               f"{os.getloadavg()[0]:.2f}; {version} at {rev}; {shlex.join(sys.argv[1:])}")
    results = {}

    def log(s):
        print(s, file=sys.stderr, flush=True)

    for spec in a.tree:
        name, d = spec.split("=", 1)
        log(f"== {name}")
        t = Tree(name, os.path.join(d, "compile_commands.json"), a.work, a.lint)
        results[name] = bench_tree(t, a.rounds, log)
    machine += (f"; load average at the end {os.getloadavg()[0]:.2f} (when a command started: "
                f"median {median(LOAD_SEEN):.2f}, highest {max(LOAD_SEEN):.2f})")
    text = table(results, machine)
    print(text)
    with open(os.path.join(a.work, "results.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(a.work, "results.json"), "w") as f:
        json.dump({"machine": machine, "results": results}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
