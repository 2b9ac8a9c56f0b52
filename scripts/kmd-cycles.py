#!/usr/bin/env python3
"""Import circles between the modules of driver/kmd (docs/architecture.md, "Layers").

Reads every `use crate::...` line and every `crate::a::b` path in driver/kmd/src, outside
`#[cfg(test)]` modules, and builds the graph module -> module it names. A module is a file
(`fence/table.rs` is `fence::table`, `fence/mod.rs` is `fence`); a path names the deepest module
that exists. A module's own children and its parent (the `mod.rs` that declares it) are edges
like any other. Prints the strongly connected components with more than one module, largest
first, and the count of two-way pairs.

Usage: scripts/kmd-cycles.py [--top-level]   (--top-level: fold submodules into `fence`, `ddi`)
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "driver", "kmd", "src")
TOP = "--top-level" in sys.argv


def modules():
    out = {}
    for d, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), ROOT)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel == ["lib"]:
                continue
            out["::".join(rel)] = os.path.join(d, f)
    return out


def strip_tests(text):
    # Drop `#[cfg(test)] mod tests { ... }` blocks (brace-matched).
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def paths(text):
    text = re.sub(r"//[^\n]*", "", text)
    found = set()
    # use crate::{a, b::{c, d}} and plain crate::a::b paths
    for m in re.finditer(r"crate::((?:\w+::)*\w+|(?:\w+::)*\{[^;]*?\})", text):
        expand(m.group(1), [], found)
    for m in re.finditer(r"\buse\s+(super|self)::([^;]+);", text):
        found.add((m.group(1), m.group(2)))
    return found


def expand(p, prefix, found):
    p = p.strip()
    if "{" in p:
        head, _, rest = p.partition("{")
        head = [s for s in head.split("::") if s]
        body = rest.rsplit("}", 1)[0]
        depth, cur, parts = 0, "", []
        for ch in body:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += {"{": 1, "}": -1}.get(ch, 0)
            cur += ch
        parts.append(cur)
        for part in parts:
            if part.strip():
                expand(part, prefix + head, found)
    else:
        segs = prefix + [s for s in p.split(" as ")[0].split("::") if s and s != "self"]
        found.add(("crate", "::".join(segs)))


def resolve(mods, base, kind, p):
    if kind == "crate":
        segs = p.split("::")
    else:
        cur = base.split("::")
        segs = (cur[:-1] if kind == "super" else cur) + [s.strip() for s in re.split(r"::|\{", p)[0:1]]
    best = None
    for n in range(len(segs), 0, -1):
        name = "::".join(segs[:n])
        if name in mods:
            best = name
            break
    return best


def main():
    mods = modules()
    graph = {m: set() for m in mods}
    for m, f in mods.items():
        text = strip_tests(open(f, encoding="utf-8").read())
        for kind, p in paths(text):
            t = resolve(mods, m, kind, p)
            if t and t != m:
                graph[m].add(t)
    if TOP:
        fold = lambda m: m.split("::")[0]
        g2 = {}
        for m, ts in graph.items():
            g2.setdefault(fold(m), set()).update(fold(t) for t in ts if fold(t) != fold(m))
        graph = g2
    # Tarjan
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    big = sorted((c for c in sccs if len(c) > 1), key=len, reverse=True)
    pairs = sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if a in graph.get(b, ())})
    print(f"modules: {len(graph)}; in a circle: {sum(len(c) for c in big)}; "
          f"circles: {len(big)}; two-way pairs: {len(pairs)}")
    for c in big:
        print(f"  circle of {len(c)}: {' '.join(c)}")
    if "--pairs" in sys.argv:
        for a, b in pairs:
            print(f"  pair: {a} <-> {b}")


main()
