#!/usr/bin/env python3
"""Import cycles among the top-level modules of a Rust crate's src/.

A module is a file `src/x.rs` or a folder `src/x/`; an edge x -> y is a `crate::y` path in x's code
(comments, `#[cfg(test)] mod tests` blocks and `tests.rs` files left out). Prints the strongly
connected components with more than one module, and with -v the edges inside them (file:line).
Exits 1 when there is a cycle.

Usage: scripts/module_cycles.py [SRC_DIR] [-v]      (default src)
"""
import collections
import os
import re
import sys


def modules(root):
    found = {}
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if entry.endswith(".rs") and entry not in ("lib.rs", "main.rs"):
            found[entry[:-3]] = [path]
        elif os.path.isdir(path) and entry != "bin":
            found[entry] = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".rs")]
    return found


def edges_of(found):
    edges, where = collections.defaultdict(set), collections.defaultdict(list)
    for name, files in found.items():
        for path in files:
            if path.endswith("/tests.rs"):
                continue
            code = re.split(r"#\[cfg\(test\)\]\s*mod tests", open(path).read())[0]
            for number, line in enumerate(code.splitlines(), 1):
                if line.lstrip().startswith("//"):
                    continue
                for target in re.findall(r"crate::(\w+)", line):
                    if target in found and target != name:
                        edges[name].add(target)
                        where[(name, target)].append(f"{path}:{number}")
    return edges, where


def cycles(names, edges):
    """Tarjan's strongly connected components of more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(names):
        if v not in index:
            visit(v)
    return out


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    found = modules(args[0] if args else "src")
    edges, where = edges_of(found)
    found_cycles = cycles(found, edges)
    print(f"{len(found)} top-level modules; import cycles: {len(found_cycles)}")
    for component in found_cycles:
        print("  " + " ".join(component))
        if "-v" in sys.argv:
            for a in component:
                for b in sorted(edges[a] & set(component)):
                    print(f"    {a} -> {b}: {', '.join(where[(a, b)][:3])}")
    sys.exit(1 if found_cycles else 0)


if __name__ == "__main__":
    main()
