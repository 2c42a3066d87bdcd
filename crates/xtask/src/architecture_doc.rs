//! docs/architecture.md names every crate and every source module, and every path it
//! gives exists, so a newcomer's map cannot silently fall behind the code: tests of the
//! native stage of `cargo xtask test`. A module is named by its file name (`forward.rs`,
//! `fetch_body.js`); `lib.rs`, `main.rs` and `mod.rs` are named by their crate or folder
//! instead. A path is a backquoted `crates/…`, `www/…`, `e2e/…` or `docs/…` (a
//! placeholder in capitals, `NAME`, stands for any file).

use std::path::{Path, PathBuf};

/// Where the source modules live, relative to the workspace: each file below them with
/// one of these endings is a module the map must name.
const SOURCE_FOLDERS: [&str; 3] = ["crates", "www/src", "e2e/src"];
const ENDINGS: [&str; 2] = [".rs", ".js"];
/// Files that stand for their folder, and folders that hold no modules of ours.
const NAMED_BY_FOLDER: [&str; 3] = ["lib.rs", "main.rs", "mod.rs"];
const NOT_SOURCE: [&str; 6] = [
    "tests",
    "examples",
    "fuzz",
    "testdata",
    "pkg-template",
    "target",
];

/// The source files below `dir` (recursively), folders in NOT_SOURCE skipped.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !NOT_SOURCE.contains(&name.as_str()) && !name.starts_with('.') {
                sources(&path, out);
            }
        } else if ENDINGS.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// The source files and crates the map does not name, as workspace-relative paths.
fn unnamed(workspace: &Path, map: &str) -> Vec<String> {
    let mut files = Vec::new();
    for folder in SOURCE_FOLDERS {
        sources(&workspace.join(folder), &mut files);
    }
    let mut missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
            name.is_some_and(|n| !NAMED_BY_FOLDER.contains(&n.as_str()) && !map.contains(&n))
        })
        .filter_map(|f| f.strip_prefix(workspace).ok())
        .map(|f| f.display().to_string())
        .collect();
    let crates = std::fs::read_dir(workspace.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| format!("crates/{}", e.file_name().to_string_lossy()));
    missing.extend(crates.filter(|c| !map.contains(&format!("{c} "))));
    missing.sort();
    missing
}

/// The backquoted workspace paths in `map` that name nothing in `workspace` (`::item`
/// after a path is dropped; a path with a capitalised placeholder such as `NAME` is a
/// pattern, not a file).
fn dangling_paths(workspace: &Path, map: &str) -> Vec<String> {
    let mut missing: Vec<String> = map
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|p| {
            ["crates/", "www/", "e2e/", "docs/"]
                .iter()
                .any(|r| p.starts_with(r))
        })
        .filter(|p| !p.contains(' ') && !p.contains("NAME"))
        .map(|p| p.split("::").next().unwrap_or(p))
        .filter(|p| !workspace.join(p).exists())
        .map(str::to_owned)
        .collect();
    missing.sort();
    missing.dedup();
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_architecture_map_names_every_crate_and_module() {
        let root = crate::paths::root();
        let map = std::fs::read_to_string(root.join("docs/architecture.md"))
            .unwrap_or_else(|e| panic!("docs/architecture.md: {e}"));
        let missing = unnamed(&root, &map);
        assert!(
            missing.is_empty(),
            "docs/architecture.md does not name these (add a line for each where its crate \
             or folder is listed):\n  {}",
            missing.join("\n  ")
        );
    }

    #[test]
    fn every_path_the_architecture_map_gives_exists() {
        let root = crate::paths::root();
        let map = std::fs::read_to_string(root.join("docs/architecture.md"))
            .unwrap_or_else(|e| panic!("docs/architecture.md: {e}"));
        let dangling = dangling_paths(&root, &map);
        assert!(
            dangling.is_empty(),
            "docs/architecture.md names paths that do not exist:\n  {}",
            dangling.join("\n  ")
        );
    }

    #[test]
    fn a_dangling_path_is_found_and_a_pattern_is_not() {
        let root = crate::paths::root();
        let map = "see `crates/xtask/src/main.rs`, `crates/gone/src/x.rs`, \
                   `crates/ttfx-sim/src/dialect/NAME.rs` and `docs/architecture.md`";
        assert_eq!(dangling_paths(&root, map), ["crates/gone/src/x.rs"]);
    }

    #[test]
    fn an_unnamed_module_and_crate_are_found() {
        let dir = tempfile_dir();
        let src = dir.join("crates/ttfx-new/src");
        std::fs::create_dir_all(src.join("tests")).unwrap_or_else(|e| panic!("{e}"));
        for file in ["lib.rs", "named.rs", "unnamed.rs", "tests/ignored.rs"] {
            std::fs::write(src.join(file), "").unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(dir.join("crates/ttfx-new/Cargo.toml"), "")
            .unwrap_or_else(|e| panic!("{e}"));
        let map = "named.rs is here";
        assert_eq!(
            unnamed(&dir, map),
            ["crates/ttfx-new", "crates/ttfx-new/src/unnamed.rs"]
        );
        let map = "crates/ttfx-new    its line\n named.rs unnamed.rs";
        assert!(unnamed(&dir, map).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A fresh folder of this test's own.
    fn tempfile_dir() -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("xtask-architecture-doc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}
