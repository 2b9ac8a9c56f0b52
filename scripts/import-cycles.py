#!/usr/bin/env python3
"""Import circles between the modules of a crate (docs/architecture.md, "Layers").

Reads every path in a crate's src directory that names one of its modules, outside
`#[cfg(test)]` modules and test-only files (`tests.rs`, `*_tests.rs`): `crate::…`, `super::…`
and `self::…` paths, and bare paths (`update::f(…)`, `va::State`) whose first segment is a
module the file can name that way (a child module, a module a `use` brought in, or one a glob
`use …::*` of a module brings in). It builds the graph module -> module it names. A module is a file (`fence/table.rs` is `fence::table`,
`fence/mod.rs` is `fence`); a path names the deepest module that exists. Prints, per crate, the
strongly connected components with more than one module, largest first.

The layering rule, stated here only: no circle joins two top-level modules, and none inside one
top-level module has more than 3 files. A circle that breaks it is marked in the report;
`--check` also exits 1 (the test command reads the marks). The circles listed in `KNOWN` are
marked "known, to break" instead.

Usage: scripts/import-cycles.py [--check] [--pairs] [--top-level] [SRC_DIR ...]
       (default SRC_DIRs: the driver core, the simulated OS, the UMD, the harness)
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = ["driver/kmd/src", "simos/src", "umd/src", "whlk/src"]
MAX_INNER = 3

# Circles still to be broken: a circle inside one of these is reported as known and does not
# fail `--check`; a new one, or one that grew, does. None is left.
KNOWN = {}


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


USE = re.compile(r"\buse\s+((?:[\w:]*\{[^;]*\}|[\w:*]+(?:\s+as\s+\w+)?))\s*;")


def uses(text):
    """The `use` declarations of `text` (already absolute): alias -> full path, with
    `(glob, path)` keys for `use path::*`."""
    out = {}
    for m in USE.finditer(text):
        leaves = set()
        expand_use(m.group(1), [], leaves)
        for full, alias in leaves:
            if alias == "*":
                out[("glob", full)] = full
            else:
                out[alias] = full
    return out


def expand_use(p, prefix, out):
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
                expand_use(part, prefix + head, out)
        return
    name, _, alias = p.partition(" as ")
    segs = prefix + [s for s in name.strip().split("::") if s]
    if segs and segs[-1] == "self":
        segs = segs[:-1]
    if not segs:
        return
    if segs[-1] == "*":
        out.add(("::".join(segs[:-1]), "*"))
    else:
        out.add(("::".join(segs), alias.strip() or segs[-1]))


def children(mods, m):
    """The modules declared in module `m` (its files' children), by name."""
    pre = m + "::" if m else ""
    return {k[len(pre):]: k for k in mods if k.startswith(pre) and "::" not in k[len(pre):]}


def bare_names(mods, m, text, texts):
    """Module names a bare path in module `m` may start with -> the module's full name."""
    names = dict(children(mods, m))
    for alias, full in uses(text).items():
        if isinstance(alias, tuple):
            if not full.startswith("crate::"):
                continue
            g = full[len("crate::"):]
            if g not in mods and g != "":
                continue
            # A glob brings in the module's children and the modules its own `use`s name.
            for k, v in children(mods, g).items():
                names.setdefault(k, v)
            for k, v in uses(texts.get(g, "")).items():
                if not isinstance(k, tuple) and v.startswith("crate::") and v[7:] in mods:
                    names.setdefault(k, v[7:])
            continue
        if full.startswith("crate::") and full[7:] in mods:
            names[alias] = full[7:]
        else:
            # An outside crate's item of that name hides a child of the same name.
            names.pop(alias, None)
    return names


def bare_paths(text, names):
    """`crate::` forms of the bare paths of `text` that start with a module in `names`."""
    text = re.sub(r"//[^\n]*", "", text)
    found = set()
    # `use child::{a, b}` and `use child::item` name the child.
    for m in USE.finditer(text):
        leaves = set()
        expand_use(m.group(1), [], leaves)
        for full, _ in leaves:
            head, _, rest = full.partition("::")
            if names.get(head) and rest:
                found.add(names[head] + "::" + rest)
    text = USE.sub("", text)
    for mm in re.finditer(r"(?<![\w:])(\w+)::((?:\w+::)*\w+)", text):
        full = names.get(mm.group(1))
        if full:
            found.add(full + "::" + mm.group(2))
    return found


def graph_of(root):
    mods = modules(root)
    graph = {m: set() for m in mods}
    texts = {m: absolute(strip_tests(open(f, encoding="utf-8").read()), m) for m, f in mods.items()}
    for m in mods:
        text = texts[m]
        found = paths(text) | bare_paths(text, bare_names(mods, m, text, texts))
        for p in found:
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
            known = any(set(c) <= set(k.split()) for k in KNOWN.get(name, []))
            mark = ""
            if breaks:
                mark = " (known, to break)" if known else " (breaks the layering)"
                breaks = not known
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
