//! Golden files: an output compared byte for byte with the file under `tests/golden/`
//! that was written from the code before the restructure of issue #28. Shared by the
//! integration test `tests/golden.rs` and the runner's unit test (by `#[path]`), so
//! both report a mismatch the same way and bless only on request.

use std::path::{Path, PathBuf};

/// Set to `1` to rewrite the golden files from the current output instead of comparing.
const BLESS: &str = "TTFX_BLESS";

const HOW_TO_BLESS: &str = "if the change is meant, regenerate with \
    `TTFX_BLESS=1 cargo test -p ttfx --test golden` (CLI, HTTP, analysis) or \
    `TTFX_BLESS=1 cargo test -p ttfx-run golden_tests` (`ttfx run`'s output), \
    then review `git diff` of tests/golden/";

/// The folder of golden files and their fixed inputs (`inputs/`): `crates/ttfx/tests/
/// golden`, named from the manifest of the crate under test (the binary's or the
/// runner's, its sibling).
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ttfx/tests/golden")
}

/// A fixed input, never rewritten by blessing.
pub fn input(name: &str) -> PathBuf {
    dir().join("inputs").join(name)
}

/// Panics, with the first differing line and how to regenerate, unless `actual` equals
/// the golden file `name` byte for byte. With `TTFX_BLESS=1` it writes `actual` there
/// instead (never by default: a missing or stale file is a failure).
pub fn golden(name: &str, actual: &str) {
    let path = dir().join(name);
    if std::env::var(BLESS).is_ok_and(|v| v == "1") {
        if let Err(e) = std::fs::write(&path, actual) {
            panic!("cannot bless {}: {e}", path.display());
        }
        return;
    }
    let expected = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => panic!(
            "golden file {} unreadable ({e}); {HOW_TO_BLESS}",
            path.display()
        ),
    };
    if let Some(diff) = first_difference(&expected, actual) {
        panic!(
            "output differs from golden file {}:\n{diff}\n{HOW_TO_BLESS}",
            path.display()
        );
    }
}

/// The first line where the two texts differ, both sides shown (from a little before
/// the first differing character, as long lines are whole JSON documents), or None when
/// equal.
pub fn first_difference(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let mut exp = expected.split_inclusive('\n');
    let mut act = actual.split_inclusive('\n');
    let mut line = 1;
    loop {
        match (exp.next(), act.next()) {
            (Some(e), Some(a)) if e == a => line += 1,
            (e, a) => {
                let (e, a) = (e.unwrap_or(""), a.unwrap_or(""));
                let column = e
                    .char_indices()
                    .zip(a.chars())
                    .find(|((_, x), y)| x != y)
                    .map_or(e.len().min(a.len()), |((i, _), _)| i);
                let from = boundary(e, column.saturating_sub(60));
                let show = |l: &str| match l.get(from..) {
                    Some(rest) if !l.is_empty() => format!("{:?}", cut(rest, 160)),
                    _ => "(end of file)".to_owned(),
                };
                return Some(format!(
                    "first difference at line {line}, byte {column}:\n  golden: {}\n  actual: {}",
                    show(e),
                    show(a),
                ));
            }
        }
    }
}

/// At most `n` bytes of `text`, cut at a character boundary.
fn cut(text: &str, n: usize) -> &str {
    &text[..boundary(text, n)]
}

/// The largest character boundary of `text` at or below `i` (`str::floor_char_boundary`
/// is newer than the workspace's rust-version).
fn boundary(text: &str, i: usize) -> usize {
    (0..=i.min(text.len()))
        .rev()
        .find(|&b| text.is_char_boundary(b))
        .unwrap_or(0)
}
