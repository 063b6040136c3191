#!/usr/bin/env python3
"""No two modules of a crate import each other, even through a third (STYLE.md, issue 38).

For every Cargo package under the repository (each target's module tree: the library, the binary and every
`src/bin` binary), this maps each source file to its module path by following the `mod` declarations from the
target's root, collects every reference to another module of the same target (`use crate::…`, `use super::…`,
`use self::…`, grouped `use crate::{a, b::c}`, a path relative to a child module, and inline paths such as
`crate::a::f(…)` or `super::f(…)`), and resolves each to the deepest module that exists. A name the module only
re-exports (`pub use b::X`) is followed to the module that defines it, so that using `crate::X` depends on where `X`
lives, not on lib.rs. A `mod child;` declaration is not an import.

It reports every strongly connected component with more than one member (Tarjan) of two graphs: the files, and the
target's top-level modules (`src/pipeline/` with everything under it is one node). Each edge of a circle is shown
with one line that makes it. Exit status: 0 when there is no circle, 1 when there is one, 2 on a source that cannot
be read (a `mod` without its file, an unterminated comment or string).

Python 3.11 standard library only: scripts/test.sh runs it before anything is built.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = {"target", "node_modules", "__pycache__"}


class SourceError(Exception):
    """A source file the checker cannot read as Rust; the message names the file and the line."""


# ---------------------------------------------------------------------------------------------------------------
# Tokens


@dataclass(frozen=True)
class Tok:
    kind: str  # "id", "str", "p" (punctuation; "::" is one token)
    text: str
    line: int


def _is_id_start(c: str) -> bool:
    return c == "_" or c.isalpha()


def _is_id_char(c: str) -> bool:
    return c == "_" or c.isalnum()


def tokenize(text: str, name: str) -> list[Tok]:
    """Identifiers, string literals (their contents, for `#[path]`) and punctuation, with comments dropped."""
    toks: list[Tok] = []
    i, n, line = 0, len(text), 1

    def fail(msg: str, at_line: int) -> SourceError:
        return SourceError(f"{name}:{at_line}: {msg}")

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            start_line, depth, i = line, 1, i + 2
            while depth:
                if i >= n:
                    raise fail("block comment is never closed", start_line)
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif c == '"' or (c in "rbc" and _raw_or_byte_string_at(text, i)):
            start_line = line
            j = i
            while text[j] in "rbc":
                j += 1
            raw = "r" in text[i:j]
            hashes = 0
            while raw and text[j] == "#":
                hashes, j = hashes + 1, j + 1
            j += 1  # the opening quote
            body_start = j
            close = '"' + "#" * hashes
            while True:
                if j >= n:
                    raise fail("string literal is never closed", start_line)
                if not raw and text[j] == "\\":
                    line += text[j + 1 : j + 2] == "\n"
                    j += 2
                    continue
                if text.startswith(close, j):
                    break
                line += text[j] == "\n"
                j += 1
            toks.append(Tok("str", text[body_start:j], start_line))
            i = j + len(close)
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}', '\''), else a lifetime or label ('a, 'static).
            if text.startswith("\\", i + 1):
                end = text.find("'", i + 3)
                if end < 0:
                    raise fail("char literal is never closed", line)
                i = end + 1
            elif i + 2 < n and text[i + 2] == "'":
                i += 3
            else:
                i += 1
        elif c == "r" and text.startswith("r#", i) and i + 2 < n and _is_id_start(text[i + 2]):
            j = i + 2
            while j < n and _is_id_char(text[j]):
                j += 1
            toks.append(Tok("id", text[i + 2 : j], line))
            i = j
        elif _is_id_start(c):
            j = i
            while j < n and _is_id_char(text[j]):
                j += 1
            toks.append(Tok("id", text[i:j], line))
            i = j
        elif c.isdigit():
            j = i
            while j < n and (_is_id_char(text[j]) or text[j] == "."):
                if text[j] == "." and not (j + 1 < n and text[j + 1].isdigit()):
                    break
                j += 1
            i = j
        elif text.startswith("::", i):
            toks.append(Tok("p", "::", line))
            i += 2
        else:
            toks.append(Tok("p", c, line))
            i += 1
    return toks


def _raw_or_byte_string_at(text: str, i: int) -> bool:
    """`r"`, `r#"`, `b"`, `br"`, `br#"`, `c"`, `cr"` at i, where i does not continue an identifier."""
    if i > 0 and _is_id_char(text[i - 1]):
        return False
    j = i
    prefix = ""
    while j < len(text) and text[j] in "rbc" and len(prefix) < 2:
        prefix += text[j]
        j += 1
    if prefix not in {"r", "b", "br", "c", "cr"}:
        return False
    if "r" in prefix:
        while j < len(text) and text[j] == "#":
            j += 1
    return j < len(text) and text[j] == '"'


# ---------------------------------------------------------------------------------------------------------------
# Module trees


@dataclass
class Module:
    path: tuple[str, ...]
    file: Path
    children: dict[str, "Module"] = field(default_factory=dict)
    # name a `use` brings in → what it names from the target's root (None: another crate's), to follow re-exports
    bindings: dict[str, tuple[str, ...] | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Ref:
    scope: tuple[str, ...]  # the module (inline ones included) the reference is written in
    file: Path
    line: int
    segs: tuple[str, ...]  # as written: `crate`/`self`/`super`/a name, then modules, then items
    kind: str  # "use" or "inline"
    binds: str | None  # the name a `use` brings into scope (None for a glob, `_` or an inline path)


@dataclass
class Target:
    package: str
    name: str  # "lib", "bin NAME"
    root: Path
    modules: dict[tuple[str, ...], Module] = field(default_factory=dict)
    refs: list[Ref] = field(default_factory=list)
    test_only: set[tuple[str, ...]] = field(default_factory=set)  # modules under #[cfg(test)]


@dataclass
class _Scope:
    path: tuple[str, ...]
    depth: int  # brace depth at which the inline module's body closes


def _module_children_dir(file: Path, is_mod_rs: bool) -> Path:
    return file.parent if is_mod_rs else file.parent / file.stem


def load_target(t: Target) -> None:
    """Walk the `mod` declarations from the root, reading every file once, and collect its references."""
    pending: list[tuple[tuple[str, ...], Path, bool]] = [((), t.root, True)]
    while pending:
        modpath, file, is_mod_rs = pending.pop()
        t.modules[modpath] = Module(modpath, file)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise SourceError(f"{file}: cannot read: {e}") from e
        toks = tokenize(text, str(file))
        for child_path, child_file, child_mod_rs in _scan(t, modpath, file, is_mod_rs, toks):
            pending.append((child_path, child_file, child_mod_rs))


def _scan(t: Target, modpath: tuple[str, ...], file: Path, is_mod_rs: bool, toks: list[Tok]):
    """Record this file's inline modules and references; return its `mod x;` children to load."""
    out = []
    scopes = [_Scope(modpath, -1)]
    depth = 0
    path_attr: str | None = None
    children_dir = _module_children_dir(file, is_mod_rs)
    i, n = 0, len(toks)
    while i < n:
        tok = toks[i]
        cur = scopes[-1].path
        if tok.kind == "p":
            if tok.text == "{":
                depth += 1
            elif tok.text == "}":
                depth -= 1
                if len(scopes) > 1 and depth == scopes[-1].depth:
                    scopes.pop()
            elif tok.text == "#" and _attr_path(toks, i) is not None:
                path_attr = _attr_path(toks, i)
            i += 1
            continue
        if tok.kind != "id":
            i += 1
            continue
        if tok.text == "mod" and i + 2 < n and toks[i + 1].kind == "id" and toks[i + 2].text in {";", "{"}:
            name = toks[i + 1].text
            child = cur + (name,)
            if _cfg_test_before(toks, i):
                t.test_only.add(child)
            if toks[i + 2].text == "{":
                t.modules[child] = Module(child, file)
                t.modules[cur].children[name] = t.modules[child]
                depth += 1
                scopes.append(_Scope(child, depth - 1))
            else:
                inline_dir = children_dir.joinpath(*cur[len(modpath) :])
                child_file, child_mod_rs = _child_file(file, inline_dir, cur != modpath, name, path_attr, tok.line)
                out.append((child, child_file, child_mod_rs))
                t.modules[cur].children[name] = Module(child, child_file)  # replaced by the loaded one
            path_attr = None
            i += 3
            continue
        if tok.text == "use" and not (i > 0 and toks[i - 1].text == "$"):
            end = i + 1
            while end < n and toks[end].text != ";":
                end += 1
            for segs, binds, line in _use_tree(toks[i + 1 : end]):
                t.refs.append(Ref(cur, file, line, tuple(segs), "use", binds))
            i = end + 1
            continue
        if i + 1 < n and toks[i + 1].text == "::" and not (i > 0 and toks[i - 1].text in {"::", "$"}):
            prev2 = toks[i - 2].text if i > 1 else ""
            if not (toks[i - 1].text == "in" and prev2 == "("):  # pub(in crate::a) names an ancestor
                segs, end = _inline_path(toks, i)
                t.refs.append(Ref(cur, file, tok.line, tuple(segs), "inline", None))
                i = end
                continue
        i += 1
    return out


def _cfg_test_before(toks: list[Tok], i: int) -> bool:
    """Whether the item whose keyword is toks[i] carries #[cfg(test)] (after its visibility, if any)."""
    j = i - 1
    if j >= 0 and toks[j].text == ")":
        while j >= 0 and toks[j].text != "(":
            j -= 1
        j -= 1
    if j >= 0 and toks[j].text == "pub":
        j -= 1
    while j >= 1 and toks[j].text == "]":
        k = j
        while k >= 0 and toks[k].text != "[":
            k -= 1
        if k < 1 or toks[k - 1].text != "#":
            return False
        if [t.text for t in toks[k + 1 : j]] == ["cfg", "(", "test", ")"]:
            return True
        j = k - 2
    return False


def _attr_path(toks: list[Tok], i: int) -> str | None:
    """`#[path = "x.rs"]` starting at toks[i]: its value."""
    if (
        i + 5 < len(toks)
        and toks[i + 1].text == "["
        and toks[i + 2].text == "path"
        and toks[i + 3].text == "="
        and toks[i + 4].kind == "str"
        and toks[i + 5].text == "]"
    ):
        return toks[i + 4].text
    return None


def _child_file(file: Path, inline_dir: Path, in_inline: bool, name: str, path_attr: str | None, line: int):
    """The file of `mod name;`, as rustc finds it: #[path] (relative to the declaring file's folder, or to the inline
    module's folder), else name.rs, else name/mod.rs."""
    if path_attr is not None:
        p = ((inline_dir if in_inline else file.parent) / path_attr).resolve()
        if not p.is_file():
            raise SourceError(f"{file}:{line}: `mod {name};` names #[path = \"{path_attr}\"], which does not exist")
        return p, p.name == "mod.rs"
    flat, nested = inline_dir / f"{name}.rs", inline_dir / name / "mod.rs"
    if flat.is_file():
        return flat.resolve(), False
    if nested.is_file():
        return nested.resolve(), True
    raise SourceError(f"{file}:{line}: `mod {name};` has no file: neither {flat} nor {nested} exists")


def _inline_path(toks: list[Tok], i: int) -> tuple[list[str], int]:
    segs = [toks[i].text]
    j = i + 1
    while j + 1 < len(toks) and toks[j].text == "::" and toks[j + 1].kind == "id":
        segs.append(toks[j + 1].text)
        j += 2
    return segs, j


def _use_tree(toks: list[Tok]) -> list[tuple[list[str], str | None, int]]:
    """Flatten a use tree into (segments, the name it binds, line of its last segment). `use ::ext::…` is left out,
    `a::{self}` becomes `a`, and a glob keeps its `*`."""
    toks = [t for t in toks if t.kind == "id" or t.text in {"::", "{", "}", ",", "*"}]
    out: list[tuple[list[str], str | None, int]] = []

    def tree(prefix: list[str], pos: int) -> int:
        """One tree from pos, under prefix; returns the position after it."""
        segs = list(prefix)
        if not prefix and pos < len(toks) and toks[pos].text == "::":
            return _skip_tree(toks, pos)
        while pos < len(toks):
            tk = toks[pos]
            if tk.text == "*":
                out.append((segs + ["*"], None, tk.line))
                return pos + 1
            if tk.text == "{":
                pos += 1
                while pos < len(toks) and toks[pos].text != "}":
                    pos = pos + 1 if toks[pos].text == "," else tree(segs, pos)
                return pos + 1
            if tk.kind != "id":
                return pos
            segs.append(tk.text)
            pos += 1
            if pos < len(toks) and toks[pos].text == "::":
                pos += 1
                continue
            binds: str | None = segs[-1]
            if pos + 1 < len(toks) and toks[pos].text == "as":
                binds = toks[pos + 1].text
                pos += 2
            if segs[-1] == "self":
                segs.pop()
                if binds == "self":
                    binds = segs[-1] if segs else None
            out.append((segs, None if binds == "_" else binds, tk.line))
            return pos
        return pos

    pos = 0
    while pos < len(toks):
        pos = tree([], pos)
        if pos < len(toks) and toks[pos].text in {",", "}"}:
            pos += 1
    return out


def _skip_tree(toks: list[Tok], pos: int) -> int:
    depth = 0
    while pos < len(toks):
        text = toks[pos].text
        if text == "{":
            depth += 1
        elif text == "}" and depth:
            depth -= 1
        elif text in {"}", ","} and depth == 0:
            return pos
        pos += 1
    return pos


# ---------------------------------------------------------------------------------------------------------------
# Resolution


def _fix_tree(t: Target) -> None:
    """Point every parent's children at the loaded modules (a `mod x;` recorded a placeholder before x was read)."""
    for path, module in t.modules.items():
        for name in list(module.children):
            module.children[name] = t.modules[path + (name,)]


def _absolute(t: Target, scope: tuple[str, ...], segs: tuple[str, ...]) -> tuple[str, ...] | None:
    """What segs, written in scope, names from the target's root; None when it names another crate, a type's
    associated item, or a name in scope that is no module of this target."""
    head = segs[0]
    if head == "crate":
        return segs[1:]
    if head == "self":
        return scope + segs[1:]
    if head == "super":
        base = list(scope)
        k = 0
        while k < len(segs) and segs[k] == "super":
            if not base:
                return None
            base.pop()
            k += 1
        return tuple(base) + segs[k:]
    if head in t.modules[scope].children:
        return scope + segs
    return None


def _deepest(t: Target, abs_segs: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    mod: tuple[str, ...] = ()
    k = 0
    while k < len(abs_segs) and mod + (abs_segs[k],) in t.modules:
        mod += (abs_segs[k],)
        k += 1
    return mod, abs_segs[k:]


def resolve(t: Target, abs_segs: tuple[str, ...]) -> tuple[str, ...] | None:
    """The module that defines what abs_segs names: the deepest module on the path, then through the `use` that
    brought the next name into that module, if one did; None when that `use` names another crate."""
    seen = set()
    while True:
        mod, rest = _deepest(t, abs_segs)
        if not rest or rest[0] == "*" or (mod, rest[0]) in seen or rest[0] not in t.modules[mod].bindings:
            return mod
        seen.add((mod, rest[0]))
        target = t.modules[mod].bindings[rest[0]]
        if target is None:
            return None
        abs_segs = target + rest[1:]


def target_edges(t: Target, with_tests: bool) -> list[tuple[tuple[str, ...], tuple[str, ...], Path, int]]:
    """(source module, target module, file, line) for every reference to another module of the target; code under
    #[cfg(test)] only when with_tests."""
    _fix_tree(t)

    def in_test(scope: tuple[str, ...]) -> bool:
        return any(scope[:k] in t.test_only for k in range(1, len(scope) + 1))

    refs = [r for r in t.refs if with_tests or not in_test(r.scope)]
    named = [(r, _absolute(t, r.scope, r.segs) if r.segs else None) for r in refs]
    for r, abs_segs in named:
        if r.kind == "use" and r.binds is not None:
            t.modules[r.scope].bindings[r.binds] = abs_segs
    edges = []
    for r, abs_segs in named:
        dst = None if abs_segs is None else resolve(t, abs_segs)
        if dst is not None and dst != r.scope:
            edges.append((r.scope, dst, r.file, r.line))
    return edges


# ---------------------------------------------------------------------------------------------------------------
# Circles


def tarjan(nodes: list[str], succ: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components, iteratively (no recursion limit on a long chain)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(succ.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(succ.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


@dataclass
class Circle:
    level: str  # "files" or "top-level modules"
    target: str
    members: list[str]
    edges: list[tuple[str, str, str, int, int]]  # src, dst, file, line, how many references make this edge


def circles(nodes: list[str], edges: list[tuple[str, str, str, int]], level: str, target: str) -> list[Circle]:
    succ: dict[str, set[str]] = {}
    first: dict[tuple[str, str], tuple[str, int]] = {}
    count: dict[tuple[str, str], int] = {}
    for src, dst, file, line in edges:
        if src == dst:
            continue
        succ.setdefault(src, set()).add(dst)
        key = (src, dst)
        count[key] = count.get(key, 0) + 1
        if key not in first or (file, line) < first[key]:
            first[key] = (file, line)
    found = []
    for comp in tarjan(sorted(nodes), succ):
        if len(comp) < 2:
            continue
        members = set(comp)
        inner = [
            (s, d, *first[(s, d)], count[(s, d)])
            for (s, d) in sorted(first)
            if s in members and d in members
        ]
        found.append(Circle(level, target, comp, inner))
    return found


# ---------------------------------------------------------------------------------------------------------------
# Packages


def find_packages(root: Path) -> list[Path]:
    """Every directory under root with a Cargo.toml that declares a [package]; build output and hidden folders are
    not walked."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        if "Cargo.toml" not in files:
            continue
        manifest = Path(folder) / "Cargo.toml"
        try:
            data = tomllib.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise SourceError(f"{manifest}: cannot read: {e}") from e
        if "package" in data:
            found.append(manifest.parent)
    return sorted(found)


def package_targets(pkg: Path) -> list[Target]:
    """The package's library and binaries, as Cargo finds them: declared paths, then src/lib.rs, src/main.rs,
    src/bin/*.rs and src/bin/*/main.rs."""
    manifest = pkg / "Cargo.toml"
    data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    name = data["package"].get("name", pkg.name)
    roots: dict[Path, str] = {}
    lib = data.get("lib", {})
    lib_path = pkg / lib.get("path", "src/lib.rs")
    if lib_path.is_file():
        roots[lib_path.resolve()] = "lib"
    for b in data.get("bin", []):
        if "path" in b:
            p = (pkg / b["path"]).resolve()
            if not p.is_file():
                raise SourceError(f"{manifest}: [[bin]] {b.get('name')!r} names {b['path']}, which does not exist")
            roots.setdefault(p, f"bin {b.get('name', p.stem)}")
    auto = [pkg / "src/main.rs", *sorted((pkg / "src/bin").glob("*.rs")), *sorted((pkg / "src/bin").glob("*/main.rs"))]
    for p in auto:
        if p.is_file():
            stem = name if p == pkg / "src/main.rs" else (p.parent.name if p.name == "main.rs" else p.stem)
            roots.setdefault(p.resolve(), f"bin {stem}")
    return [Target(name, label, root) for root, label in sorted(roots.items(), key=lambda kv: str(kv[0]))]


def check(root: Path, ignore: list[Path] | None = None, with_tests: bool = False) -> list[Circle]:
    """Every circle in every package under root. Files under an ignored folder take part in no edge."""
    root = root.resolve()
    ignore = [p.resolve() for p in (ignore or [])]

    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(root))
        except ValueError:
            return str(p)

    def ignored(p: Path) -> bool:
        return any(p == ig or ig in p.parents for ig in ignore)

    found: list[Circle] = []
    for pkg in find_packages(root):
        for t in package_targets(pkg):
            load_target(t)
            label = f"{t.package} ({t.name}, {rel(t.root)})"
            edges = [e for e in target_edges(t, with_tests) if not ignored(t.modules[e[0]].file) and not ignored(t.modules[e[1]].file)]
            files = sorted({rel(m.file) for m in t.modules.values()})
            file_edges = [(rel(t.modules[s].file), rel(t.modules[d].file), rel(f), ln) for s, d, f, ln in edges]
            found += circles(files, file_edges, "files", label)
            tops = sorted({p[0] for p in t.modules if p})
            top_edges = [(s[0], d[0], rel(f), ln) for s, d, f, ln in edges if s and d]
            found += circles(tops, top_edges, "top-level modules", label)
    return found


def report(found: list[Circle], root: Path) -> str:
    lines = []
    for c in found:
        lines.append(f"circle among {len(c.members)} {c.level} of {c.target}: {', '.join(c.members)}")
        for src, dst, file, line, count in c.edges:
            text = _line_text(root / file, line)
            more = f" (and {count - 1} more)" if count > 1 else ""
            lines.append(f"  {src} -> {dst}: {file}:{line}: {text}{more}")
    return "\n".join(lines)


def _line_text(path: Path, line: int) -> str:
    try:
        return path.read_text(encoding="utf-8").splitlines()[line - 1].strip()
    except (OSError, IndexError):
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="the folder whose Cargo packages are checked (default: the repository)")
    ap.add_argument("--ignore", action="append", type=Path, default=[], metavar="DIR",
                    help="leave out every edge from or to a file under DIR (repeatable)")
    ap.add_argument("--with-tests", action="store_true",
                    help="count the references made by #[cfg(test)] modules too (left out by default: a unit test "
                    "may drive its module through the whole crate without that being the module's dependency)")
    args = ap.parse_args(argv)
    try:
        found = check(args.root, args.ignore, args.with_tests)
    except SourceError as e:
        print(f"check-circles: {e}", file=sys.stderr)
        return 2
    if found:
        print(report(found, args.root.resolve()))
        print(f"check-circles: {len(found)} circle(s); move what both sides share into a leaf module (STYLE.md)")
        return 1
    print("check-circles: no module imports one that imports it back")
    return 0


if __name__ == "__main__":
    sys.exit(main())
