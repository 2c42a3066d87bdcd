//! A crate's modules, read from its root file down through `mod` items, and the edges
//! between them: each path a module writes, resolved to the module that defines what it
//! names (through `use` re-exports and globs, so `crate::Timeline` leads to `timeline`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::scan::{self, Body};

/// A module's path from its crate root: empty for the root itself.
pub type ModPath = Vec<String>;

pub fn display(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

#[derive(Debug)]
pub struct Module {
    /// The file its body is in (an inline module's is its parent's file).
    pub file: PathBuf,
    pub body: Body,
}

/// One module's path naming another module.
#[derive(Debug, Clone)]
pub struct Edge {
    pub from: ModPath,
    pub to: ModPath,
    pub file: PathBuf,
    pub line: usize,
    /// The path as written.
    pub written: String,
}

/// Every non-test module of one crate, keyed by path.
#[derive(Debug)]
pub struct Crate {
    pub modules: BTreeMap<ModPath, Module>,
}

/// Reads files by path: the disk in the real check, a map in the checker's own tests.
pub type Read<'a> = &'a dyn Fn(&Path) -> std::io::Result<String>;

impl Crate {
    /// Reads the crate whose root file (`lib.rs`, `main.rs`, `bin/x.rs`) is `root`.
    pub fn read(root: &Path, read: Read) -> anyhow::Result<Crate> {
        let mut modules = BTreeMap::new();
        let dir = root.parent().map(Path::to_path_buf).unwrap_or_default();
        let text = read(root).with_context(|| format!("cannot read {}", root.display()))?;
        load_file(root, &text, Vec::new(), dir, read, &mut modules)?;
        Ok(Crate { modules })
    }

    /// Every edge between two different modules, in module then line order.
    pub fn edges(&self) -> Vec<Edge> {
        let mut out = Vec::new();
        for (path, module) in &self.modules {
            for r in &module.body.references {
                let Some(to) = self.resolve(path, &r.segments) else {
                    continue;
                };
                if &to != path {
                    out.push(Edge {
                        from: path.clone(),
                        to,
                        file: module.file.clone(),
                        line: r.line,
                        written: r.text(),
                    });
                }
            }
        }
        out
    }

    /// The module that defines what `segments`, written in module `from`, names; None for
    /// what lies outside the crate.
    fn resolve(&self, from: &ModPath, segments: &[String]) -> Option<ModPath> {
        self.resolve_depth(from, segments, 0).map(|f| f.module)
    }

    fn resolve_depth(&self, from: &ModPath, segments: &[String], depth: u8) -> Option<Found> {
        let (first, rest) = segments.split_first()?;
        let mut at = match first.as_str() {
            "crate" => Found::module(Vec::new()),
            "self" => Found::module(from.clone()),
            "super" => Found::module(from.get(..from.len().checked_sub(1)?)?.to_vec()),
            // Relative: a child, an item or an imported name of `from`; else another crate.
            _ => self.lookup(from, first, depth)?,
        };
        for s in rest {
            if !at.is_module {
                break;
            }
            at = match s.as_str() {
                "super" => {
                    Found::module(at.module.get(..at.module.len().checked_sub(1)?)?.to_vec())
                }
                "self" => at,
                _ => match self.lookup(&at.module, s, depth) {
                    Some(found) => found,
                    // Not defined here as far as a token reader can tell (a macro's output,
                    // an enum variant): the module it was looked up in.
                    None => break,
                },
            };
        }
        Some(at)
    }

    /// Where `name`, looked up in module `at`, is defined.
    fn lookup(&self, at: &ModPath, name: &str, depth: u8) -> Option<Found> {
        // Re-exports that lead back to themselves (or very deep) end the search.
        if depth > 16 {
            return None;
        }
        let module = self.modules.get(at)?;
        let mut child = at.clone();
        child.push(name.to_owned());
        if self.modules.contains_key(&child) {
            return Some(Found::module(child));
        }
        if module.body.items.contains(name) {
            return Some(Found {
                module: at.clone(),
                is_module: false,
            });
        }
        if let Some(import) = module.body.imports.get(name) {
            return self.resolve_depth(at, &import.segments, depth + 1);
        }
        module.body.globs.iter().find_map(|glob| {
            let target = self.resolve_depth(at, &glob.segments, depth + 1)?;
            if !target.is_module || &target.module == at {
                return None;
            }
            self.lookup(&target.module, name, depth + 1)
        })
    }
}

/// What a path led to: a module, or an item defined in `module`.
#[derive(Debug, Clone)]
struct Found {
    module: ModPath,
    is_module: bool,
}

impl Found {
    fn module(module: ModPath) -> Found {
        Found {
            module,
            is_module: true,
        }
    }
}

/// Reads a module held in a file of its own, and its descendants. `dir` is where its
/// children's files are.
fn load_file(
    file: &Path,
    text: &str,
    path: ModPath,
    dir: PathBuf,
    read: Read,
    modules: &mut BTreeMap<ModPath, Module>,
) -> anyhow::Result<()> {
    let tokens = text
        .parse()
        .map_err(|e| anyhow::anyhow!("cannot tokenize {}: {e}", file.display()))?;
    load_body(file, path, dir, scan::body(tokens), read, modules)
}

fn load_body(
    file: &Path,
    path: ModPath,
    dir: PathBuf,
    mut body: Body,
    read: Read,
    modules: &mut BTreeMap<ModPath, Module>,
) -> anyhow::Result<()> {
    if body.test_only {
        return Ok(());
    }
    let children = std::mem::take(&mut body.children);
    modules.insert(
        path.clone(),
        Module {
            file: file.to_path_buf(),
            body,
        },
    );
    for child in children {
        let mut child_path = path.clone();
        child_path.push(child.name.clone());
        let child_dir = dir.join(&child.name);
        match child.inline {
            Some(tokens) => load_body(
                file,
                child_path,
                child_dir,
                scan::body(tokens),
                read,
                modules,
            )?,
            None => {
                let flat = dir.join(format!("{}.rs", child.name));
                let nested = child_dir.join("mod.rs");
                let (child_file, text) = match (read(&flat), read(&nested)) {
                    (Ok(text), _) => (flat, text),
                    (_, Ok(text)) => (nested, text),
                    _ => bail!(
                        "{}:{}: `mod {}` has neither {} nor {}",
                        file.display(),
                        child.line,
                        child.name,
                        flat.display(),
                        nested.display()
                    ),
                };
                load_file(&child_file, &text, child_path, child_dir, read, modules)?;
            }
        }
    }
    Ok(())
}
