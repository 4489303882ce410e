#!/usr/bin/env python3
"""Compilation databases for the real-code suite (scripts/real-code/prepare.sh).

  compdb.py complete DB_IN DB_OUT ROOT DIR...
      DB_OUT = DB_IN plus an entry for every C/C++ source below ROOT/DIR that DB_IN lacks
      (programs the project's build system does not build on Linux or by default), made
      from the entry of the nearest sibling DB_IN has: same language, same directory or the
      closest directory above it. Prints one line per added file and where its flags came from.

  compdb.py like DB_IN DB_OUT SIBLING FILE...
      DB_OUT = entries for FILEs (absolute paths), each with SIBLING's flags.
"""
import json
import os
import shlex
import sys

C_EXT = (".c",)
CXX_EXT = (".cc", ".cpp", ".cxx")


def lang(path):
    return "c" if path.endswith(C_EXT) else "c++" if path.endswith(CXX_EXT) else None


def entry_file(e):
    f = e["file"]
    return os.path.realpath(f if os.path.isabs(f) else os.path.join(e["directory"], f))


def args_of(e):
    return list(e["arguments"]) if "arguments" in e else shlex.split(e["command"])


def retarget(e, new_file):
    """SIBLING's entry, compiling NEW_FILE instead (its object file renamed alike)."""
    old = entry_file(e)
    stem_old = os.path.basename(old)
    stem_new = os.path.basename(new_file)
    out = []
    for a in args_of(e):
        if a == e["file"] or (os.path.isabs(a) and os.path.realpath(a) == old):
            out.append(new_file)
        elif a.endswith(".o") and stem_old in a:
            out.append(a.replace(stem_old, stem_new))
        else:
            out.append(a)
    return {"directory": e["directory"], "file": new_file, "arguments": out}


def load(path):
    with open(path) as f:
        return json.load(f)


def save(entries, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(entries, f, indent=1)
        f.write("\n")


def complete(db_in, db_out, root, dirs):
    entries = load(db_in)
    known = {entry_file(e): e for e in entries}
    added = []
    root = os.path.realpath(root)
    for d in dirs:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, d)):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.realpath(os.path.join(dirpath, name))
                lg = lang(path)
                if lg is None or path in known:
                    continue
                sibling, probe = None, os.path.dirname(path)
                while sibling is None and probe.startswith(root):
                    for f, e in known.items():
                        if os.path.dirname(f) == probe and lang(f) == lg:
                            sibling = e
                            break
                    probe = os.path.dirname(probe)
                if sibling is None:
                    print(f"compdb: no sibling for {os.path.relpath(path, root)}", file=sys.stderr)
                    continue
                e = retarget(sibling, path)
                added.append(e)
                print(f"  {os.path.relpath(path, root)}: flags of "
                      f"{os.path.relpath(entry_file(sibling), root)}")
    save(entries + added, db_out)


def like(db_in, db_out, sibling, files):
    entries = load(db_in)
    sib = os.path.realpath(sibling)
    base = next((e for e in entries if entry_file(e) == sib), None)
    if base is None:
        sys.exit(f"compdb: {sibling} is not in {db_in}")
    save([retarget(base, os.path.realpath(f)) for f in files], db_out)


def main(argv):
    if len(argv) >= 5 and argv[1] == "complete":
        complete(argv[2], argv[3], argv[4], argv[5:])
    elif len(argv) >= 5 and argv[1] == "like":
        like(argv[2], argv[3], argv[4], argv[5:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
