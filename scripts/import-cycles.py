#!/usr/bin/env python3
"""Import circles between the modules of a crate (docs/architecture.md, "Layers").

Reads every `crate::…`, `super::…` and `self::…` path in a crate's src directory, outside
`#[cfg(test)]` modules and test-only files (`tests.rs`, `*_tests.rs`), and builds the graph
module -> module it names. A module is a file (`fence/table.rs` is `fence::table`,
`fence/mod.rs` is `fence`); a path names the deepest module that exists. Prints, per crate, the
strongly connected components with more than one module, largest first.

The layering rule, stated here only: no circle joins two top-level modules, and none inside one
top-level module has more than 3 files. A circle that breaks it is marked in the report;
`--check` also exits 1 (the test command reads the marks).

Usage: scripts/import-cycles.py [--check] [--pairs] [--top-level] [SRC_DIR ...]
       (default SRC_DIRs: the driver core, the simulated OS, the UMD, the harness)
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = ["driver/kmd/src", "simos/src", "umd/src", "whlk/src"]
MAX_INNER = 3


def modules(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs") or f == "tests.rs" or f.endswith("_tests.rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
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


def absolute(text, module):
    """Rewrites `super::` and `self::` as `crate::` paths seen from `module`."""
    segs = module.split("::")

    def sup(m):
        n = m.group(0).count("super::")
        base = segs[: max(len(segs) - n, 0)]
        return "crate::" + "".join(s + "::" for s in base)

    text = re.sub(r"\b(?:super::)+", sup, text)
    return re.sub(r"(?<![\w:])self::", "crate::" + "".join(s + "::" for s in segs), text)


def paths(text):
    text = re.sub(r"//[^\n]*", "", text)
    found = set()
    for m in re.finditer(r"crate::((?:\w+::)*\w+|(?:\w+::)*\{[^;]*?\})", text):
        expand(m.group(1), [], found)
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
        found.add("::".join(prefix + [s for s in p.split(" as ")[0].split("::") if s and s != "self"]))


def resolve(mods, p):
    segs = p.split("::")
    for n in range(len(segs), 0, -1):
        name = "::".join(segs[:n])
        if name in mods:
            return name
    return None


def graph_of(root):
    mods = modules(root)
    graph = {m: set() for m in mods}
    for m, f in mods.items():
        text = absolute(strip_tests(open(f, encoding="utf-8").read()), m)
        for p in paths(text):
            t = resolve(mods, p)
            if t and t != m:
                graph[m].add(t)
    return graph


def circles(graph):
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
    return sorted((c for c in sccs if len(c) > 1), key=len, reverse=True)


def fold(graph):
    top = lambda m: m.split("::")[0]
    g2 = {}
    for m, ts in graph.items():
        g2.setdefault(top(m), set()).update(top(t) for t in ts if top(t) != top(m))
    return g2


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    dirs = args or [os.path.join(HERE, "..", d) for d in DEFAULT]
    bad = []
    for root in dirs:
        graph = graph_of(root)
        if "--top-level" in sys.argv:
            graph = fold(graph)
        big = circles(graph)
        pairs = sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if a in graph.get(b, ())})
        name = os.path.relpath(os.path.normpath(root), os.path.join(HERE, ".."))
        print(f"{name}: modules: {len(graph)}; in a circle: {sum(len(c) for c in big)}; "
              f"circles: {len(big)}; two-way pairs: {len(pairs)}")
        for c in big:
            tops = {m.split('::')[0] for m in c}
            breaks = len(tops) > 1 or len(c) > MAX_INNER
            mark = " (breaks the layering)" if breaks else ""
            print(f"  circle of {len(c)}{mark}: {' '.join(c)}")
            if breaks:
                bad.append(f"{name}: circle of {len(c)} over {', '.join(sorted(tops))}")
        if "--pairs" in sys.argv:
            for a, b in pairs:
                print(f"  pair: {a} <-> {b}")
    if "--check" in sys.argv and bad:
        print("layering broken (a circle joins top-level modules, or has more than "
              f"{MAX_INNER} files):")
        for b in bad:
            print("  " + b)
        sys.exit(1)


main()
