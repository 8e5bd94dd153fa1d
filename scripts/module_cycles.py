#!/usr/bin/env python3
"""Checks that the modules of each workspace crate (the library, the
recorder runtime, the event encoding) import each other without circles.

For every folder of modules (the crate root, `race`, `race::cp`, ...), the
sibling modules it holds must depend on each other acyclically: `A -> B`
when some file in A's tree names something in B's tree (`use crate::...`,
`super::...`, `self::...`, or a `crate::` path in code). A module naming its
own ancestors (`super::Type` in a child) is not a sibling edge, and unit
tests (`#[cfg(test)]` modules) are left out. Prints each
sibling group's edges with `-v`, and every circle found; exits 1 on a circle.

Usage: python3 scripts/module_cycles.py [-v]   (from anywhere in the repo)
"""

import os
import re
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# The library and the other workspace members' crates.
CRATES = ["src", "recorder/src", "events/src"]


def module_files(root):
    """(module path as a tuple, file) for every file of a crate."""
    out = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            parts = rel[:-3].split(os.sep)
            if parts[0] in ("main", "cli"):  # the binary, not the library
                continue
            if parts[-1] == "testing":  # test-only helpers (`#[cfg(test)] mod testing`)
                continue
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            out.append((tuple(parts), os.path.join(dirpath, f)))
    return out


def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = tree.strip()
    i = tree.find("{")
    if i < 0:
        return [tree]
    prefix, inner = tree[:i], tree[i + 1 : tree.rindex("}")]
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += (ch == "{") - (ch == "}")
        cur += ch
    items.append(cur)
    return [p for it in items if it.strip() for p in expand(prefix + it.strip())]


def paths(text):
    """Every path the file names, as written, unit tests left out."""
    text = re.sub(r"//[^\n]*", "", text)
    # A unit-test module (`#[cfg(test)] mod tests { ... }`) closes a file.
    m = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    if m:
        text = text[: m.start()]
    found = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        found += expand(re.sub(r"\s+", "", m.group(1)))
    found += re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text)
    return found


def resolve(path, here, is_mod_file):
    """The absolute module path `path` names from module `here`."""
    parts = path.split("::")
    base = list(here)
    if parts[0] == "crate":
        base, parts = [], parts[1:]
    elif parts[0] in ("self", "super"):
        while parts and parts[0] in ("self", "super"):
            if parts[0] == "super":
                base = base[:-1]
            parts = parts[1:]
    else:
        return None  # an external crate, or a name in scope
    return tuple(base + [p for p in parts if p != "self"])


def main():
    verbose = "-v" in sys.argv
    circles = 0
    count = 0
    for crate in CRATES:
        c, n = check(os.path.join(REPO, crate), crate, verbose)
        circles += c
        count += n
    if circles:
        sys.exit(1)
    print(f"no import circles among {count} modules")


def check(root, crate, verbose):
    """Prints the circles among one crate's sibling modules; their count."""
    files = module_files(root)
    modules = {m for m, _ in files}
    edges = {}  # parent -> {(a, b)}
    for here, f in files:
        text = open(f, encoding="utf-8").read()
        is_mod = f.endswith(("mod.rs", "lib.rs"))
        for p in paths(text):
            target = resolve(p, here, is_mod)
            if target is None:
                continue
            # The deepest module the path names (the rest are items).
            while target and target not in modules:
                target = target[:-1]
            k = 0
            while k < min(len(here), len(target)) and here[k] == target[k]:
                k += 1
            if k == len(here) or k == len(target):
                continue  # an ancestor or a descendant: no sibling edge
            edges.setdefault(here[:k], set()).add((here[k], target[k]))
    circles = 0
    for parent in sorted(edges):
        graph = {}
        for a, b in edges[parent]:
            graph.setdefault(a, set()).add(b)
        name = crate + ": " + "::".join(("crate",) + parent)
        if verbose:
            for a in sorted(graph):
                print(f"{name}: {a} -> {', '.join(sorted(graph[a]))}")
        state = {}

        def visit(n, stack):
            nonlocal circles
            state[n] = 1
            for m in sorted(graph.get(n, ())):
                if state.get(m) == 1:
                    cycle = stack[stack.index(m) :] + [m]
                    print(f"circle in {name}: {' -> '.join(cycle)}")
                    circles += 1
                elif m not in state:
                    visit(m, stack + [m])
            state[n] = 2

        for n in sorted(graph):
            if n not in state:
                visit(n, [n])
    return circles, len(modules)


if __name__ == "__main__":
    main()
