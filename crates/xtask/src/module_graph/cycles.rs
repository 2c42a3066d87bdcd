//! Cycles between modules that are more than a parent and its children.
//!
//! Each edge is lifted to the two siblings it runs between: an edge from `a::x` to
//! `b::y` is one from `a` to `b` under the crate root, as `a` as a whole then depends on
//! `b`. An edge between a module and its own ancestor or descendant is left out: a parent
//! may use its children and a child the items of its parent. A cycle is then a set of
//! siblings that each reach all the others (a strongly connected set larger than one).

use std::collections::{BTreeMap, BTreeSet};

use super::graph::{Edge, ModPath, display};

/// Siblings under `parent` that depend on each other in a ring, and for each ordered pair
/// of them with an edge the first reference behind it.
#[derive(Debug)]
pub struct Cycle {
    pub parent: ModPath,
    pub members: BTreeSet<String>,
    pub edges: Vec<(String, String, Edge)>,
}

impl Cycle {
    /// The member names as full module paths.
    pub fn member_paths(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| {
                let mut p = self.parent.clone();
                p.push(m.clone());
                display(&p)
            })
            .collect()
    }
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "cycle between {}:", self.member_paths().join(", "))?;
        for (a, b, e) in &self.edges {
            writeln!(
                f,
                "    {a} -> {b}: {}:{} `{}` (in {})",
                e.file.display(),
                e.line,
                e.written,
                display(&e.from)
            )?;
        }
        Ok(())
    }
}

/// The cycles among `edges`, parents and members in name order.
pub fn find(edges: &[Edge]) -> Vec<Cycle> {
    // parent -> (from sibling, to sibling) -> first edge.
    let mut lifted: BTreeMap<ModPath, BTreeMap<(String, String), &Edge>> = BTreeMap::new();
    for e in edges {
        let common = e.from.iter().zip(&e.to).take_while(|(a, b)| a == b).count();
        if common == e.from.len() || common == e.to.len() {
            continue; // an ancestor and its descendant
        }
        let pair = (e.from[common].clone(), e.to[common].clone());
        lifted
            .entry(e.from[..common].to_vec())
            .or_default()
            .entry(pair)
            .or_insert(e);
    }
    let mut out = Vec::new();
    for (parent, pairs) in lifted {
        let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (a, b) in pairs.keys() {
            next.entry(a).or_default().insert(b);
        }
        let reach: BTreeMap<&str, BTreeSet<&str>> =
            next.keys().map(|&n| (n, reachable(n, &next))).collect();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for (&n, from_n) in &reach {
            if seen.contains(n) {
                continue;
            }
            let members: BTreeSet<String> = from_n
                .iter()
                .filter(|&&m| reach.get(m).is_some_and(|r| r.contains(n)))
                .map(|&m| m.to_owned())
                .collect();
            if members.len() < 2 {
                continue;
            }
            seen.extend(members.iter().cloned());
            let edges = pairs
                .iter()
                .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                .map(|((a, b), e)| (a.clone(), b.clone(), (*e).clone()))
                .collect();
            out.push(Cycle {
                parent: parent.clone(),
                members,
                edges,
            });
        }
    }
    out
}

/// Every node `start` reaches by one edge or more.
fn reachable<'a>(start: &'a str, next: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(n) = stack.pop() {
        for &m in next.get(n).into_iter().flatten() {
            if seen.insert(m) {
                stack.push(m);
            }
        }
    }
    seen
}
