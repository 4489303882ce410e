#!/usr/bin/env python3
"""Expected-findings lists of the real-code suite (docs/real-code/expected/PROJECT.txt).

One line per finding, `RULE FILE LINE`, FILE relative to the project's root (the directory
kdc-lint ran in), plus one line `incomplete FILE` per translation unit kdc-lint analysed only
partially (compile errors). Lines are sorted (rule, file, line as a number). Text after `#` is
a comment: the triage verdict (`# true`, `# false: CAUSE`, see docs/real-code.md); blank lines
and comment-only lines are ignored. A finding reported twice on one line (two columns) is
listed twice.

  findings.py summary REPORT.json
      units, incomplete, findings and prefilter-skipped counts, tab-separated
  findings.py compare EXPECTED REPORT.json
      prints what appeared (+) and disappeared (-) against EXPECTED; exit 1 when anything did
  findings.py update EXPECTED REPORT.json
      rewrites EXPECTED from the report, keeping the comments of the lines that remain;
      new lines get `# untriaged`
  findings.py units ROOT DB|- PATH...
      the translation units below ROOT/PATH (those of DB/compile_commands.json, or with `-`
      the C/C++ files), relative to ROOT, one a line: check.sh's per-unit runs
  findings.py merge OUT REPORT...
      one report of several runs (findings, incomplete units and counts added up)
"""
import collections
import json
import os
import sys


def key(line):
    f = line.split()
    if f[0] == "incomplete":
        return (1, "", f[1], 0)
    return (0, f[0], f[1], int(f[2]))


def actual_lines(report_path):
    with open(report_path) as fh:
        r = json.load(fh)
    out = [f"{x['rule']} {x['file']} {x['line']}" for x in r["findings"]]
    out += [f"incomplete {x['file']}" for x in r.get("incomplete", [])]
    return sorted(out, key=key), r


def expected_lines(path):
    lines, comments = [], collections.defaultdict(list)
    if os.path.exists(path):
        with open(path) as fh:
            for raw in fh:
                body, _, comment = raw.partition("#")
                body = " ".join(body.split())
                if body:
                    lines.append(body)
                    comments[body].append(comment.strip())
    return lines, comments


def compare(expected_path, report_path, name):
    exp, comments = expected_lines(expected_path)
    act, _ = actual_lines(report_path)
    ce, ca = collections.Counter(exp), collections.Counter(act)
    gone = sorted((ce - ca).elements(), key=key)
    new = sorted((ca - ce).elements(), key=key)
    for line in gone:
        note = next((c for c in comments[line] if c), "")
        print(f"  - {line}" + (f"   # was: {note}" if note else ""))
    for line in new:
        print(f"  + {line}")
    if gone or new:
        print(f"  {name}: {len(new)} new, {len(gone)} gone against "
              f"{os.path.relpath(expected_path)}")
        return 1
    return 0


def update(expected_path, report_path):
    _, comments = expected_lines(expected_path)
    act, _ = actual_lines(report_path)
    header = []
    if os.path.exists(expected_path):
        with open(expected_path) as fh:
            for raw in fh:
                if raw.startswith("#"):
                    header.append(raw.rstrip("\n"))
                else:
                    break
    used = collections.defaultdict(int)
    body = []
    for line in act:
        cs = comments.get(line, [])
        i = used[line]
        used[line] += 1
        c = cs[i] if i < len(cs) else "untriaged"
        body.append(f"{line}  # {c}" if c else line)
    os.makedirs(os.path.dirname(os.path.abspath(expected_path)), exist_ok=True)
    with open(expected_path, "w") as fh:
        for h in header:
            fh.write(h + "\n")
        for b in body:
            fh.write(b + "\n")


def summary(report_path):
    with open(report_path) as fh:
        r = json.load(fh)
    s = r.get("stats", {})
    print(f"{s.get('translation_units', 0)}\t{len(r.get('incomplete', []))}\t"
          f"{len(r['findings'])}\t{s.get('skipped_by_prefilter', 0)}")


SOURCE_EXT = (".c", ".cc", ".cpp", ".cxx")


def units(root, db, paths):
    root = os.path.realpath(root)
    under = [os.path.realpath(os.path.join(root, p)) for p in paths]
    if db != "-":
        with open(os.path.join(db, "compile_commands.json")) as fh:
            entries = json.load(fh)
        files = set()
        for e in entries:
            f = e["file"] if os.path.isabs(e["file"]) else os.path.join(e["directory"], e["file"])
            files.add(os.path.realpath(f))
    else:
        files = set()
        for u in under:
            if os.path.isfile(u):
                files.add(u)
            for d, _, names in os.walk(u):
                files.update(os.path.join(d, n) for n in names)
    for f in sorted(files):
        if f.endswith(SOURCE_EXT) and any(f == u or f.startswith(u + os.sep) for u in under):
            print(os.path.relpath(f, root))


def merge(out, reports):
    merged = {"tool": None, "findings": [], "errors": [], "incomplete": [],
              "stats": {"translation_units": 0, "incomplete": 0, "skipped_by_prefilter": 0,
                        "seconds": 0.0}}
    for path in reports:
        with open(path) as fh:
            r = json.load(fh)
        merged["tool"] = r.get("tool")
        for k in ("findings", "errors", "incomplete"):
            merged[k] += r.get(k, [])
        for k in merged["stats"]:
            merged["stats"][k] += r.get("stats", {}).get(k, 0)
    with open(out, "w") as fh:
        json.dump(merged, fh, indent=1)
        fh.write("\n")


def main(argv):
    if len(argv) == 3 and argv[1] == "summary":
        summary(argv[2])
    elif len(argv) >= 4 and argv[1] == "compare":
        sys.exit(compare(argv[2], argv[3], argv[4] if len(argv) > 4 else argv[2]))
    elif len(argv) == 4 and argv[1] == "update":
        update(argv[2], argv[3])
    elif len(argv) >= 5 and argv[1] == "units":
        units(argv[2], argv[3], argv[4:])
    elif len(argv) >= 4 and argv[1] == "merge":
        merge(argv[2], argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
