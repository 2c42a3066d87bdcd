use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::graph::Crate;
use super::{CRATES, crate_cycles, crate_roots, cycles};
use crate::paths;

/// The check itself: no crate of the workspace has a module cycle.
#[test]
fn workspace_crates_have_no_module_cycles() {
    let workspace = paths::root();
    let read = |p: &Path| std::fs::read_to_string(workspace.join(p));
    let mut found = Vec::new();
    let mut edges = 0;
    for krate in CRATES {
        let roots = crate_roots(&workspace, krate).unwrap();
        assert!(
            !roots.is_empty(),
            "{krate}: no src/lib.rs, src/main.rs or src/bin"
        );
        for root in roots {
            let (cycles, n) = crate_cycles(&root, &read).unwrap();
            found.extend(cycles);
            edges += n;
        }
    }
    // The crates do use their modules: a reader that found no edge read nothing.
    assert!(edges > 100, "only {edges} edges between modules found");
    assert!(
        found.is_empty(),
        "module cycles (make dependencies run one way: move what both sides need to a \
         lower module):\n{}",
        found.join("\n")
    );
}

#[test]
fn crate_list_names_every_workspace_member() {
    let manifest = std::fs::read_to_string(paths::root().join("Cargo.toml")).unwrap();
    let start = manifest.find("members = [").unwrap();
    let end = start + manifest[start..].find(']').unwrap();
    let members: Vec<&str> = manifest[start..end]
        .lines()
        .skip(1)
        .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
        .collect();
    assert!(!members.is_empty());
    let mut listed = CRATES.to_vec();
    listed.sort_unstable();
    let mut members = members;
    members.sort_unstable();
    assert_eq!(
        listed, members,
        "module_graph::CRATES and the workspace members differ"
    );
}

/// Reads a crate from files held in memory.
fn cycles_in(files: &[(&str, &str)]) -> Vec<cycles::Cycle> {
    let krate = read(files);
    cycles::find(&krate.edges())
}

fn read(files: &[(&str, &str)]) -> Crate {
    let map: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), (*t).to_owned()))
        .collect();
    let read = move |p: &Path| {
        map.get(p)
            .cloned()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    };
    Crate::read(Path::new("src/lib.rs"), &read).unwrap()
}

fn no_cycle(files: &[(&str, &str)]) {
    let found = cycles_in(files);
    assert!(found.is_empty(), "{found:?}");
}

/// The cycle's message names the edge `edge` (modules, file:line, path).
fn names_edge(cycle: &cycles::Cycle, edge: &str) {
    let message = cycle.to_string();
    assert!(message.contains(edge), "{message}");
}

/// The one cycle among `files`, between the modules `members`.
fn one_cycle(files: &[(&str, &str)], members: &[&str]) -> cycles::Cycle {
    let mut found = cycles_in(files);
    assert_eq!(found.len(), 1, "{found:?}");
    let cycle = found.remove(0);
    assert_eq!(cycle.member_paths(), members);
    cycle
}

#[test]
fn two_siblings_that_use_each_other_are_a_cycle_named_with_file_and_line() {
    let cycle = one_cycle(
        &[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
            (
                "src/b.rs",
                "pub struct B;\n\nfn f() -> crate::a::A { crate::a::A }\n",
            ),
        ],
        &["a", "b"],
    );
    names_edge(&cycle, "a -> b: src/a.rs:1 `crate::b::B`");
    names_edge(&cycle, "b -> a: src/b.rs:3 `crate::a::A`");
}

#[test]
fn a_ring_of_three_is_one_cycle() {
    let cycle = one_cycle(
        &[
            ("src/lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n"),
            ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
            ("src/b.rs", "use crate::c::C;\npub struct B;\n"),
            ("src/c.rs", "pub struct C;\nfn f(_: super::a::A) {}\n"),
            // Uses the ring without being part of it.
            ("src/d.rs", "use crate::{a::A, c::C};\n"),
        ],
        &["a", "b", "c"],
    );
    assert_eq!(cycle.edges.len(), 3);
}

#[test]
fn one_way_dependencies_are_not_a_cycle() {
    no_cycle(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("src/a.rs", "pub struct A;\n"),
        ("src/b.rs", "use crate::a::A;\npub struct B;\n"),
        ("src/c.rs", "use crate::{a::A, b::B};\n"),
    ]);
}

#[test]
fn a_parent_and_its_children_may_use_each_other() {
    no_cycle(&[
        ("src/lib.rs", "mod a;\npub struct Root;\nfn f(_: a::A) {}\n"),
        (
            "src/a/mod.rs",
            "mod x;\npub struct A;\nfn g(_: x::X, _: crate::Root) {}\n",
        ),
        (
            "src/a/x.rs",
            "use super::A;\npub struct X;\nfn h(_: super::super::Root) {}\n",
        ),
    ]);
}

#[test]
fn test_modules_are_ignored() {
    no_cycle(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
        (
            "src/b.rs",
            "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n\
             #[cfg(test)]\nmod more;\n#[cfg(test)]\nfn helper(_: crate::a::A) {}\n",
        ),
        ("src/b/more.rs", "use crate::a::A;\n"),
    ]);
}

#[test]
fn a_test_module_that_says_so_inside_is_ignored() {
    no_cycle(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
        ("src/b.rs", "pub struct B;\nmod tests;\n"),
        ("src/b/tests.rs", "#![cfg(test)]\nuse crate::a::A;\n"),
    ]);
}

#[test]
fn a_re_export_leads_to_the_module_that_defines_the_item() {
    // `crate::A` is `a::A`: b depends on a through the root.
    let cycle = one_cycle(
        &[
            ("src/lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
            ("src/a.rs", "pub struct A;\nfn f(_: crate::b::B) {}\n"),
            ("src/b.rs", "pub struct B;\nfn g() -> crate::A { todo() }\n"),
        ],
        &["a", "b"],
    );
    names_edge(&cycle, "b -> a: src/b.rs:2 `crate::A`");
}

#[test]
fn a_glob_re_export_leads_to_the_module_that_defines_the_item() {
    no_cycle(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
        (
            "src/a.rs",
            "pub use crate::c::*;\nfn f(_: crate::b::B) {}\n",
        ),
        ("src/b.rs", "pub struct B;\nuse crate::a::C;\n"),
        ("src/c.rs", "pub struct C;\n"),
    ]);
    // b uses c's C through a's glob: no cycle between a and b.
}

#[test]
fn cycles_between_grandchildren_are_lifted_to_their_ancestors() {
    // a::x uses b, b uses a::y: a as a whole and b depend on each other.
    let cycle = one_cycle(
        &[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            (
                "src/a.rs",
                "pub mod x {\n    use crate::b::B;\n}\npub mod y {\n    pub struct Y;\n}\n",
            ),
            ("src/b.rs", "pub struct B;\nuse crate::a::y::Y;\n"),
        ],
        &["a", "b"],
    );
    names_edge(&cycle, "a -> b: src/a.rs:2 `crate::b::B` (in a::x)");
}

#[test]
fn siblings_inside_a_module_form_a_cycle_there() {
    one_cycle(
        &[
            ("src/lib.rs", "mod m;\n"),
            ("src/m/mod.rs", "mod x;\nmod y;\n"),
            ("src/m/x.rs", "use super::y::Y;\npub struct X;\n"),
            ("src/m/y.rs", "use super::x::X;\npub struct Y;\n"),
        ],
        &["m::x", "m::y"],
    );
}

#[test]
fn visibility_paths_comments_and_strings_are_not_uses() {
    no_cycle(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\n"),
        (
            "src/b.rs",
            "pub struct B;\n// crate::a::A\n/// [`crate::a::A`]\npub(in crate::a) fn f() { \
             let _ = \"crate::a::A\"; }\n",
        ),
    ]);
}

#[test]
fn a_missing_module_file_is_an_error_naming_the_declaration() {
    let map: BTreeMap<PathBuf, String> =
        [(PathBuf::from("src/lib.rs"), "mod gone;\n".to_owned())].into();
    let read = move |p: &Path| {
        map.get(p)
            .cloned()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    };
    let err = Crate::read(Path::new("src/lib.rs"), &read).unwrap_err();
    assert!(
        err.to_string().contains("src/lib.rs:1: `mod gone`"),
        "{err}"
    );
}
