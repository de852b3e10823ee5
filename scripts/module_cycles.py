#!/usr/bin/env python3
"""Import cycles among the modules of a Rust crate's src/, at every level.

A module is a file `x.rs` or a folder `x/`; at the top level an edge x -> y is a `crate::y` path in
x's code; inside a folder `f/`, an edge between two of its modules is a `super::y` path in a file
directly under `f/` or a `crate::f::y` path anywhere in `f/` (comments, `#[cfg(test)] mod tests`
blocks and `tests.rs` files left out). Prints the strongly connected components with more than
one module, and with -v the edges inside them (file:line). A crate whose src/ holds layer folders
(LAYERS below; `src/lib.rs` loads each module from its layer's folder with `#[path]`, so its path
in the crate stays `crate::x`) is also checked for the layer rule: a module sits in exactly one
layer folder, and no module imports from a higher layer than its own. Exits 1 on a cycle or
violation.

Usage: scripts/module_cycles.py [SRC_DIR ...] [-v]      (default src)
"""
import collections
import os
import re
import sys


def modules(root):
    """The modules directly under `root`; with layer folders, the modules inside them."""
    if any(os.path.isdir(os.path.join(root, layer)) for layer, _ in LAYERS):
        found = {}
        for layer, _ in LAYERS:
            if os.path.isdir(os.path.join(root, layer)):
                found.update(plain_modules(os.path.join(root, layer)))
        return found
    return plain_modules(root)


def layer_of(root):
    """{module: layer} from the layer folders of `root` ({} when it has none)."""
    return {m: layer for layer, _ in LAYERS if os.path.isdir(os.path.join(root, layer))
            for m in plain_modules(os.path.join(root, layer))}


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


# The layer folders of src/, lowest first, and what each holds (docs/architecture.md, "Layer
# rule"): a module may import its own layer and the layers below it, never one above. A module's
# layer is the folder it sits in.
LAYERS = [
    ("foundation", "small pieces with no store"),
    ("engine", "the store and everything computed on it"),
    ("operations", "the typed operations, the metrics log, the spool"),
    ("service", "execute, the resident service, the Client"),
    ("fronts", "what people and Claude Code call"),
]
LAYER_NAMES = [name for name, _ in LAYERS]


def layer_violations(root, edges, where):
    """Edges from a lower layer up to a higher one, and modules outside every layer folder."""
    layers = layer_of(root)
    rank = {m: LAYER_NAMES.index(layer) for m, layer in layers.items()}
    problems = [f"{root}/{m}: not in a layer folder (move it into one of {', '.join(LAYER_NAMES)})"
                for m in sorted(plain_modules(root)) if m not in LAYER_NAMES]
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if a in rank and b in rank and rank[b] > rank[a]:
                problems.append(f"{a} ({layers[a]}) imports {b} ({layers[b]}): "
                                f"{', '.join(where[(a, b)][:2])}")
    return problems


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
    """Every folder module under `root`, with its path in the crate (`hook`, `store::records`;
    a layer folder is no module, and not part of the path)."""
    for d, subdirs, _ in os.walk(root):
        subdirs.sort()
        parts = os.path.relpath(d, root).split(os.sep)
        if parts[0] in LAYER_NAMES and os.path.isdir(os.path.join(root, parts[0])):
            parts = parts[1:]
        if parts and parts != ["."] and parts[0] != "bin":
            yield d, "::".join(parts)


def main():
    verbose = "-v" in sys.argv
    roots = [a for a in sys.argv[1:] if a != "-v"] or ["src"]
    total = 0
    for root in roots:
        found = modules(root)
        edges, where = edges_of(found)
        total += report(f"{root} (top level)", found, edges, where, verbose)
        if layer_of(root):
            problems = layer_violations(root, edges, where)
            print(f"{root}: {len(LAYERS)} layers; violations: {len(problems)}")
            for p in problems:
                print("  " + p)
            total += len(problems)
        for folder, path in folders(root):
            inner = {k: v for k, v in modules(folder).items() if k != "mod"}
            if len(inner) > 1:
                edges, where = edges_of(inner, f"crate::{path}::", folder)
                total += report(folder, inner, edges, where, verbose)
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
