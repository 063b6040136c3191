"""Tests of check-circles.py on small synthetic crates: each tree is written here, so the circle it holds (or not)
is known by construction."""

import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("check_circles", Path(__file__).with_name("check-circles.py"))
cc = importlib.util.module_from_spec(_spec)
sys.modules["check_circles"] = cc
_spec.loader.exec_module(cc)


def crate(root: Path, files: dict[str, str], name: str = "demo") -> Path:
    pkg = root / name
    (pkg / "src").mkdir(parents=True)
    (pkg / "Cargo.toml").write_text(f'[package]\nname = "{name}"\nversion = "0.1.0"\n')
    for rel, text in files.items():
        p = pkg / "src" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return pkg


def file_circles(found):
    return [sorted(Path(m).name for m in c.members) for c in found if c.level == "files"]


def test_a_clean_tree_has_no_circle(tmp_path):
    crate(tmp_path, {
        "lib.rs": "//! x\npub mod a;\npub mod b;\npub mod c;\npub use a::Thing;\n",
        "a.rs": "pub struct Thing;\n",
        "b.rs": "use crate::a::Thing;\npub fn f() -> Thing { Thing }\n",
        "c.rs": "use crate::{a, b};\npub fn g() { b::f(); let _ = a::Thing; }\n",
    })
    assert cc.check(tmp_path) == []
    assert cc.main([str(tmp_path)]) == 0


def test_a_circle_through_a_third_module_is_found_with_each_edge_line(tmp_path):
    crate(tmp_path, {
        "lib.rs": "mod a;\nmod b;\nmod c;\n",
        "a.rs": "use crate::b::B;\npub struct A;\n",
        "b.rs": "pub struct B;\n\npub fn f() { crate::c::g(); }\n",
        "c.rs": "// crate::a is only a comment here\nuse crate::a::A;\npub fn g() {}\n",
    })
    found = cc.check(tmp_path)
    assert file_circles(found) == [["a.rs", "b.rs", "c.rs"]]
    circle = next(c for c in found if c.level == "files")
    assert [(s, d, f, ln) for s, d, f, ln, _n in circle.edges] == [
        ("demo/src/a.rs", "demo/src/b.rs", "demo/src/a.rs", 1),
        ("demo/src/b.rs", "demo/src/c.rs", "demo/src/b.rs", 3),
        ("demo/src/c.rs", "demo/src/a.rs", "demo/src/c.rs", 2),
    ]
    tops = [c.members for c in found if c.level == "top-level modules"]
    assert tops == [["a", "b", "c"]]
    assert cc.main([str(tmp_path)]) == 1


def test_a_grouped_use_makes_one_edge_per_module_it_names(tmp_path):
    crate(tmp_path, {
        "lib.rs": "mod a;\nmod b;\nmod c;\n",
        "a.rs": "use crate::{\n    b::{self, B},\n    c::C,\n};\npub struct A;\n",
        "b.rs": "pub struct B;\n",
        "c.rs": "pub struct C;\npub fn f() { let _ = crate::a::A; }\n",
    })
    found = cc.check(tmp_path)
    assert file_circles(found) == [["a.rs", "c.rs"]]
    circle = next(c for c in found if c.level == "files")
    assert [(Path(s).name, Path(d).name, ln) for s, d, _f, ln, _n in circle.edges] == [
        ("a.rs", "c.rs", 3),
        ("c.rs", "a.rs", 2),
    ]


def test_a_child_using_its_parent_through_super_is_an_edge(tmp_path):
    crate(tmp_path, {
        "lib.rs": "pub mod layers;\n",
        "layers/mod.rs": "mod sys;\npub struct Setup;\npub fn all() { sys::attach(); }\n",
        "layers/sys.rs": "use super::Setup;\npub fn attach() -> Option<Setup> { None }\n",
    })
    assert file_circles(cc.check(tmp_path)) == [["mod.rs", "sys.rs"]]


def test_a_mod_declaration_and_a_child_using_its_parent_alone_are_no_circle(tmp_path):
    crate(tmp_path, {
        "lib.rs": "pub mod layers;\n",
        "layers/mod.rs": "mod shared;\nmod sys;\npub use shared::Setup;\npub fn all() { sys::attach(); }\n",
        "layers/shared.rs": "pub struct Setup;\n",
        "layers/sys.rs": "use super::Setup;\npub fn attach() -> Option<Setup> { None }\n",
    })
    # sys uses Setup through the parent's re-export: the edge goes to shared.rs, where Setup lives.
    assert cc.check(tmp_path) == []


def test_super_super_and_inline_modules_resolve_to_the_right_file(tmp_path):
    crate(tmp_path, {
        "lib.rs": "mod a;\nmod b;\n",
        "a.rs": "mod inner {\n    pub fn f() { super::super::b::g(); }\n}\npub fn h() {}\n",
        "b.rs": "pub fn g() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::a::h;\n}\n",
    })
    # b's tests use a, and a uses b: a circle only when test code counts.
    assert cc.check(tmp_path) == []
    assert file_circles(cc.check(tmp_path, with_tests=True)) == [["a.rs", "b.rs"]]


def test_strings_chars_and_lifetimes_hide_no_path(tmp_path):
    crate(tmp_path, {
        "lib.rs": "mod a;\nmod b;\n",
        "a.rs": "pub fn f<'a>(s: &'a str) -> char { let _ = \"crate::b::g()\"; let _ = r#\"use crate::b;\"#; '\"' }\n",
        "b.rs": "pub fn g() { crate::a::f(\"\"); }\n",
    })
    assert cc.check(tmp_path) == []


def test_top_level_modules_are_checked_as_folders(tmp_path):
    crate(tmp_path, {
        "lib.rs": "mod pipeline;\nmod apps;\n",
        "pipeline/mod.rs": "mod run;\nmod plan;\n",
        "pipeline/run.rs": "use crate::apps::service::Service;\n",
        "pipeline/plan.rs": "pub struct Spec;\n",
        "apps/mod.rs": "pub mod service;\nmod roles;\n",
        "apps/service.rs": "pub struct Service;\n",
        "apps/roles.rs": "use crate::pipeline::plan::Spec;\n",
    })
    found = cc.check(tmp_path)
    assert file_circles(found) == []
    assert [c.members for c in found if c.level == "top-level modules"] == [["apps", "pipeline"]]


def test_each_binary_is_its_own_module_tree(tmp_path):
    crate(tmp_path, {
        "lib.rs": "pub mod a;\n",
        "a.rs": "pub fn f() {}\n",
        "main.rs": "mod cli;\nfn main() { cli::run(); }\npub fn helper() {}\n",
        "cli.rs": "pub fn run() { crate::helper(); }\n",
    })
    found = cc.check(tmp_path)
    assert [(c.target, file_circles([c])) for c in found if c.level == "files"] == [
        ("demo (bin demo, demo/src/main.rs)", [["cli.rs", "main.rs"]])
    ]


def test_a_mod_without_its_file_is_an_error_naming_the_line(tmp_path, capsys):
    crate(tmp_path, {"lib.rs": "//! x\n\nmod missing;\n"})
    assert cc.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "lib.rs:3: `mod missing;` has no file" in err


def test_the_ignore_option_drops_the_edges_of_a_folder(tmp_path):
    crate(tmp_path, {
        "lib.rs": "mod a;\nmod b;\n",
        "a.rs": "use crate::b::g;\npub fn f() {}\n",
        "b.rs": "pub fn g() { crate::a::f(); }\n",
    })
    assert cc.main([str(tmp_path)]) == 1
    assert cc.main([str(tmp_path), "--ignore", str(tmp_path / "demo/src/b.rs")]) == 0


@pytest.mark.parametrize(
    "use, expected",
    [
        ("crate::a::B;", [(["crate", "a", "B"], "B")]),
        ("crate::{a, b::c as d};", [(["crate", "a"], "a"), (["crate", "b", "c"], "d")]),
        ("super::{x::*, y};", [(["super", "x", "*"], None), (["super", "y"], "y")]),
        ("crate::a::{self};", [(["crate", "a"], "a")]),
        ("::ext::y;", []),
        ("x::Y as _;", [(["x", "Y"], None)]),
    ],
)
def test_use_trees_flatten_to_paths_and_the_names_they_bind(use, expected):
    toks = cc.tokenize(use, "t.rs")
    got = [(segs, binds) for segs, binds, _line in cc._use_tree(toks[:-1])]
    assert got == expected
