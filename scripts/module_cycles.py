#!/usr/bin/env python3
"""Import cycles among the modules of a Rust crate's src/, at every level.

A module is a file `x.rs` or a folder `x/`; at the top level an edge x -> y is a `crate::y` path in
x's code; inside a folder `f/`, an edge between two of its modules is a `super::y` path in a file
directly under `f/` or a `crate::f::y` path anywhere in `f/` (comments, `#[cfg(test)] mod tests`
blocks and `tests.rs` files left out). Prints the strongly connected components with more than
one module, and with -v the edges inside them (file:line). Exits 1 on a cycle. (The layers are
crates, so the compiler keeps them one-way; this checks the modules inside each crate.)

Usage: scripts/module_cycles.py [SRC_DIR ...] [-v]      (default src)
"""
import collections
import os
import re
import sys


def modules(root):
    """The modules directly under `root`."""
    return plain_modules(root)


def plain_modules(root):
    found = {}
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if entry.endswith(".rs") and entry not in ("lib.rs", "main.rs"):
            found[entry[:-3]] = [path]
        elif os.path.isdir(path) and entry != "bin":
            found[entry] = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".rs")]
    return found


def code_lines(path):
    code = re.split(r"#\[cfg\(test\)\]\s*mod tests", open(path).read())[0]
    for number, line in enumerate(code.splitlines(), 1):
        if not line.lstrip().startswith("//"):
            yield number, line


def edges_of(found, prefix="crate::", local_super_dir=None):
    """Edges among `found`: `<prefix>y` paths, and `super::y` paths in files directly under
    `local_super_dir`."""
    edges, where = collections.defaultdict(set), collections.defaultdict(list)
    pattern = re.escape(prefix) + r"(\w+)"
    for name, files in found.items():
        for path in files:
            if path.endswith("/tests.rs"):
                continue
            direct = local_super_dir and os.path.dirname(path) == local_super_dir
            for number, line in code_lines(path):
                targets = re.findall(pattern, line)
                if direct:
                    targets += re.findall(r"(?<!::)\bsuper::(\w+)", line)
                for target in targets:
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


def report(label, found, edges, where, verbose):
    found_cycles = cycles(found, edges)
    print(f"{label}: {len(found)} modules; import cycles: {len(found_cycles)}")
    for component in found_cycles:
        print("  " + " ".join(component))
        if verbose:
            for a in component:
                for b in sorted(edges[a] & set(component)):
                    print(f"    {a} -> {b}: {', '.join(where[(a, b)][:3])}")
    return len(found_cycles)


def folders(root):
    """Every folder module under `root`, with its path in the crate (`hook`, `store::records`)."""
    for d, subdirs, _ in os.walk(root):
        subdirs.sort()
        parts = os.path.relpath(d, root).split(os.sep)
        if parts and parts != ["."] and parts[0] != "bin":
            yield d, "::".join(parts)


def main():
    verbose = "-v" in sys.argv
    roots = [a for a in sys.argv[1:] if a != "-v"] or ["src"]
    total = 0
    for root in roots:
        found = modules(root)
        edges, where = edges_of(found, local_super_dir=root)
        total += report(f"{root} (top level)", found, edges, where, verbose)
        for folder, path in folders(root):
            inner = {k: v for k, v in modules(folder).items() if k != "mod"}
            if len(inner) > 1:
                edges, where = edges_of(inner, f"crate::{path}::", folder)
                total += report(folder, inner, edges, where, verbose)
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
