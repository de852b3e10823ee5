#!/usr/bin/env python3
"""In how many files is each operation named? (issue 56: at most three: its definition, the CLI's
list, the MCP server's list; a hook-only operation, its definition and the hook that calls it.)

Operations are read from their definitions (`impl Operation for X { const NAME: &'static str =
"x"; ... }` in the crates' sources), or given with --names (to count an older tree, whose operations were a
`Request` enum). Code only: comments, string literals and test code (`#[cfg(test)]` modules,
`tests.rs`, `tests/`) are left out.

A name that is also an ordinary word or identifier (`list`, `get`, `map`, `export`, ...) is
counted where the operation's type is used (`ops::List`, `Request::List`, `impl Operation for
List`); a distinctive one (`learn_key`, `brain`, `unlearn`, ...) wherever it appears, in any of its
spellings (learn_key, LearnKey, learn-key).

    python3 scripts/operation_names.py [--root DIR] [--names a,b] [--max N] [--distinctive]

Exit 1 when --max is given and an operation is named in more files than that. --distinctive
counts only the operations whose names are no ordinary word (scripts/test.sh checks those with
--max 3: the others are also named by every front that calls them).
"""

import argparse
import pathlib
import re
import sys

DISTINCTIVE_WORDS = {"brain", "unlearn", "supersede", "reembed"}


def camel(snake):
    return "".join(part.title() for part in snake.split("_"))


def strip_code(text):
    """Comments, string literals and #[cfg(test)] modules removed."""
    text = re.sub(r'r#+".*?"#+', '""', text, flags=re.S)
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and i + 2 < n and (text[i + 2] == "'" or text[i + 1] == "\\"):
            j = text.find("'", i + 2)
            out.append("' '")
            i = j + 1
        else:
            out.append(c)
            i += 1
    code = "".join(out)
    # #[cfg(test)] mod x { ... }: drop the balanced block.
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", code)
        if not m:
            break
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[: m.start()] + code[j:]
    return code


def sources(root):
    # The root package's src/ and every library crate under crates/ (a folder with a Cargo.toml).
    crates = ["src"] + sorted(f"crates/{d.name}/src" for d in (root / "crates").iterdir()
                              if (d / "Cargo.toml").is_file())
    for base in crates:
        for path in sorted((root / base).rglob("*.rs")):
            if path.name == "tests.rs" or "tests" in path.relative_to(root).parts[:-1]:
                continue
            yield path


def defined(root):
    ops = []
    for path in sources(root):
        text = path.read_text()
        for m in re.finditer(
            r'impl\s+Operation\s+for\s+(\w+)\s*\{\s*const\s+NAME:\s*&\'static\s+str\s*=\s*"(\w+)"',
            text,
        ):
            ops.append((m.group(2), m.group(1)))
    return ops


def patterns(name, type_name):
    """The patterns that name the operation, and whether it is counted as a word."""
    if "_" in name or name in DISTINCTIVE_WORDS:
        forms = {name, camel(name), type_name, name.replace("_", "-")}
        return [re.compile(r"\b" + re.escape(f) + r"\b") for f in forms], True
    t, n = re.escape(type_name), re.escape(name)
    return [
        # the type: ops::List, Request::List (R::List), a CLI subcommand Cmd::List
        re.compile(r"\b(ops|Request|R|Cmd)::" + t + r"\b"),
        re.compile(r"\bOperation\s+for\s+" + t + r"\b"),
        # a client's method for it (before issue 56: client.list(...))
        re.compile(r"\b(c|client)\s*\." + n + r"\("),
    ], False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", type=pathlib.Path)
    ap.add_argument("--names", help="comma-separated wire names (default: the definitions)")
    ap.add_argument("--max", type=int)
    ap.add_argument("--distinctive", action="store_true", help="only names that are no ordinary word")
    args = ap.parse_args()
    root = args.root.resolve()
    if args.names:
        ops = [(n, camel(n)) for n in dict.fromkeys(args.names.split(","))]
    else:
        ops = defined(root)
    if not ops:
        sys.exit("no operations found (impl Operation for X { const NAME ... })")
    code = {p: strip_code(p.read_text()) for p in sources(root)}
    over = 0
    for name, type_name in ops:
        pats, as_word = patterns(name, type_name)
        if args.distinctive and not as_word:
            continue
        files = [
            p
            for p, text in code.items()
            if any(pat.search(text) for pat in (pats if as_word else pats[:2]))
            # a client's method call, in a file that has a Client
            or (not as_word and "Client" in text and any(pat.search(text) for pat in pats[2:]))
        ]
        # The client's own method for it (before issue 56: `pub fn list(&mut self, ...)`).
        method = re.compile(r"\bfn\s+" + re.escape(name) + r"\s*(<[^>]*>)?\s*\(\s*&mut\s+self")
        files += [
            p
            for p, text in code.items()
            if (p.name == "client.rs" and p not in files and method.search(text))
        ]
        kind = "word" if as_word else "type"
        rel = ", ".join(str(p.relative_to(root)) for p in files)
        flag = ""
        if args.max is not None and len(files) > args.max:
            over += 1
            flag = "  <- over"
        print(f"{name:<14} {len(files)}  ({kind})  {rel}{flag}")
    if over:
        print(f"{over} operation(s) named in more than {args.max} files", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
