#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/call_walk.py: how far a reader walks to follow one function.

Reads the C files given, finds each function's body, and walks the calls
from ENTRY depth first, in the order they appear, each function once (a
reader who has read a function does not read it again). It prints:

  files     the files the walk enters (ENTRY's own included);
  returns   the calls that leave a function's file for another: each one
            brings the reader back to a file already left;
  functions the functions read;
  run-taking files  the files, among those read, with a function that takes
            a `struct run *` (or the TYPE of --type).

A call is a name followed by "(" that names a function of the files given
(a static one is looked up in the caller's file first); calls through
pointers and into other libraries are not followed.

usage: bench/call_walk.py [--type NAME] [--tree] ENTRY FILE.c...
  e.g. bench/call_walk.py elastic__watch launcher/*.c
"""
import argparse
import re
import sys

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else",
            "case", "goto", "defined", "__attribute__", "typeof", "_Static_assert"}


def strip(src):
    """The source with comments, strings and character literals blanked
    (newlines kept, so that line numbers stay)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", src[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


DEF = re.compile(r"^[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(([^;{}]*?)\)\s*\{", re.M | re.S)


def functions(path):
    """[(name, static, params, body)] of the functions defined in PATH."""
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    found = []
    for m in DEF.finditer(text):
        head = text[m.start():m.end()]
        if head.split("(")[0].split()[0] in ("struct", "enum", "union", "typedef") and \
                "=" in head.split("(")[0]:
            continue
        name = m.group(1)
        if name in KEYWORDS:
            continue
        depth, j = 0, m.end() - 1
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        found.append((name, head.lstrip().startswith("static"), m.group(2), text[m.end():j]))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--type", default="run", help="the struct whose takers are counted (run)")
    ap.add_argument("--tree", action="store_true", help="print the walk")
    ap.add_argument("entry")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    defs = {}      # (file, name) -> (params, body)
    public = {}    # name -> file, for functions that are not static
    for f in a.files:
        for name, static, params, body in functions(f):
            defs[(f, name)] = (params, body)
            if not static:
                public.setdefault(name, f)
    start = [k for k in defs if k[1] == a.entry]
    if not start:
        sys.exit(f"call_walk: no function {a.entry} in the files given")
    call = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
    seen, files, order = set(), [], []
    returns = 0
    takes = re.compile(r"\bstruct\s+" + re.escape(a.type) + r"\s*\*")

    def walk(key, depth):
        nonlocal returns
        seen.add(key)
        order.append(key)
        if key[0] not in files:
            files.append(key[0])
        if a.tree:
            print(f"{'  ' * depth}{key[1]} ({key[0]})")
        for m in call.finditer(defs[key][1]):
            name = m.group(1)
            if name in KEYWORDS:
                continue
            to = (key[0], name) if (key[0], name) in defs else \
                (public[name], name) if name in public else None
            if to is None:
                continue
            if to[0] != key[0]:
                returns += 1
            if to not in seen:
                walk(to, depth + 1)

    sys.setrecursionlimit(10000)
    walk(start[0], 0)
    run_files = sorted({f for f, n in order if takes.search(defs[(f, n)][0])})
    print(f"entry     {a.entry} ({start[0][0]})")
    print(f"files     {len(files)}: {' '.join(files)}")
    print(f"returns   {returns}")
    print(f"functions {len(order)}")
    print(f"{a.type}-taking files {len(run_files)}: {' '.join(run_files)}")


if __name__ == "__main__":
    main()
