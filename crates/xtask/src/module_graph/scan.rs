//! One module's body, as tokens, into what the graph needs: its child modules, the names
//! it defines and imports, and every path it writes that starts at `crate`, `self` or
//! `super`. Items under `#[cfg(test)]` are left out: a test module may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// A path as written (`crate::a::B`, `super::x`, `timeline::Timeline`) and its line.
#[derive(Debug, Clone)]
pub struct Written {
    pub segments: Vec<String>,
    pub line: usize,
}

impl Written {
    pub fn text(&self) -> String {
        self.segments.join("::")
    }
}

/// A `mod` item: declared here, its body either inline or in a file of its own.
#[derive(Debug)]
pub struct ChildDecl {
    pub name: String,
    pub line: usize,
    pub inline: Option<TokenStream>,
}

/// What one module's own body (nested modules excluded) says.
#[derive(Debug, Default)]
pub struct Body {
    pub children: Vec<ChildDecl>,
    /// Names of the items defined here (functions, types, constants, ...).
    pub items: BTreeSet<String>,
    /// Names brought in by module-level `use` items, with the path they name.
    pub imports: BTreeMap<String, Written>,
    /// Module-level `use ...::*` paths.
    pub globs: Vec<Written>,
    /// Every path that may reach another module: `use` paths and paths in code.
    pub references: Vec<Written>,
    /// `#![cfg(test)]` at the top: the whole module is test code.
    pub test_only: bool,
}

/// Scans a module body.
pub fn body(tokens: TokenStream) -> Body {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Body::default();
    let mut i = 0;
    while i < tokens.len() {
        let mut test_only_item = false;
        // Attributes, outer (`#[..]`) or inner (`#![..]`).
        while let Some((len, inner, is_cfg_test)) = attribute(&tokens[i..]) {
            if is_cfg_test {
                if inner {
                    out.test_only = true;
                } else {
                    test_only_item = true;
                }
            }
            i += len;
        }
        if i >= tokens.len() {
            break;
        }
        let end = item_end(&tokens, i);
        if !test_only_item {
            item(&tokens[i..end], &mut out);
        }
        i = end;
    }
    out
}

/// `#[..]` or `#![..]` at the start of `tokens`: its length, whether it is inner, and
/// whether it is `cfg(test)`.
fn attribute(tokens: &[TokenTree]) -> Option<(usize, bool, bool)> {
    if !is_punct(tokens.first()?, '#') {
        return None;
    }
    let inner = tokens.get(1).is_some_and(|t| is_punct(t, '!'));
    let at = if inner { 2 } else { 1 };
    let TokenTree::Group(g) = tokens.get(at)? else {
        return None;
    };
    if g.delimiter() != Delimiter::Bracket {
        return None;
    }
    let inside: Vec<TokenTree> = g.stream().into_iter().collect();
    let cfg_test = matches!(inside.as_slice(),
        [TokenTree::Ident(cfg), TokenTree::Group(args)]
            if cfg == "cfg" && args.stream().to_string() == "test");
    Some((at + 1, inner, cfg_test))
}

/// Where the item starting at `start` ends (exclusive): after its first `;` or, unless it
/// is a `const`, `static` or `type` (whose value may hold braces), its first `{..}`.
fn item_end(tokens: &[TokenTree], start: usize) -> usize {
    let keyword = item_keyword(&tokens[start..]).map(|(k, _)| k);
    let braces_end = !matches!(keyword.as_deref(), Some("const" | "static" | "type"));
    for (j, t) in tokens.iter().enumerate().skip(start) {
        if is_punct(t, ';') {
            return j + 1;
        }
        if braces_end && matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace) {
            return j + 1;
        }
    }
    tokens.len()
}

/// The keyword that says what an item is, past its visibility and qualifiers, and the
/// index of the token after it.
fn item_keyword(tokens: &[TokenTree]) -> Option<(String, usize)> {
    let mut i = 0;
    while let Some(TokenTree::Ident(id)) = tokens.get(i) {
        let word = id.to_string();
        let next_is_item = matches!(tokens.get(i + 1), Some(TokenTree::Ident(n))
            if matches!(n.to_string().as_str(), "fn" | "unsafe" | "async" | "extern" | "trait" | "impl"));
        match word.as_str() {
            "pub" => {
                i += 1;
                if matches!(tokens.get(i), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
                {
                    i += 1;
                }
            }
            "unsafe" | "async" | "default" | "auto" => i += 1,
            "const" if next_is_item => i += 1,
            "extern" => {
                i += 1;
                if matches!(tokens.get(i), Some(TokenTree::Literal(_))) {
                    i += 1;
                }
            }
            _ => return Some((word, i + 1)),
        }
    }
    None
}

/// One module-level item.
fn item(tokens: &[TokenTree], out: &mut Body) {
    let Some((keyword, after)) = item_keyword(tokens) else {
        references(tokens, out);
        return;
    };
    let name = match tokens.get(after) {
        Some(TokenTree::Ident(id)) if id != "mut" => Some(id.to_string()),
        Some(TokenTree::Ident(_)) => ident_at(tokens, after + 1),
        _ => None,
    };
    match keyword.as_str() {
        "mod" => {
            if let Some(name) = name {
                let inline = match tokens.get(after + 1) {
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                        Some(g.stream())
                    }
                    _ => None,
                };
                out.children.push(ChildDecl {
                    name,
                    line: line(&tokens[after]),
                    inline,
                });
            }
            return;
        }
        "use" => {
            let leaves = use_leaves(&tokens[after..]);
            for leaf in leaves {
                match leaf.kind {
                    Leaf::Glob => out.globs.push(leaf.path.clone()),
                    Leaf::Named(Some(n)) => {
                        out.imports.insert(n, leaf.path.clone());
                    }
                    Leaf::Named(None) => {}
                }
                out.references.push(leaf.path);
            }
            return;
        }
        "macro_rules" => {
            if let Some(n) = ident_at(tokens, after + 1) {
                out.items.insert(n);
            }
        }
        "fn" | "struct" | "enum" | "union" | "trait" | "type" | "const" | "static" => {
            if let Some(n) = name.filter(|n| n != "_") {
                out.items.insert(n);
            }
        }
        _ => {}
    }
    references(tokens, out);
}

/// Paths in code that start at `crate`, `self` or `super` (and `use` items nested in
/// function bodies), anywhere in `tokens`.
fn references(tokens: &[TokenTree], out: &mut Body) {
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            // `pub(in crate::a)` names where an item is visible, not a use of `a`.
            TokenTree::Ident(id) if id == "pub" => {
                let paren = matches!(tokens.get(i + 1),
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
                i += if paren { 2 } else { 1 };
                continue;
            }
            TokenTree::Ident(id) if id == "use" && !is_punct_at(tokens, i + 1, '<') => {
                let end = (i + 1..tokens.len())
                    .find(|&j| is_punct(&tokens[j], ';'))
                    .unwrap_or(tokens.len());
                let leaves = use_leaves(&tokens[i + 1..end]);
                out.references.extend(leaves.into_iter().map(|l| l.path));
                i = end;
                continue;
            }
            TokenTree::Ident(id)
                if matches!(id.to_string().as_str(), "crate" | "self" | "super")
                    && is_path_sep(tokens, i + 1) =>
            {
                let mut segments = vec![id.to_string()];
                let mut j = i + 1;
                while is_path_sep(tokens, j) {
                    let Some(next) = ident_at(tokens, j + 2) else {
                        break;
                    };
                    segments.push(next);
                    j += 3;
                }
                out.references.push(Written {
                    segments,
                    line: line(&tokens[i]),
                });
                i = j;
                continue;
            }
            TokenTree::Group(g) => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                references(&inner, out);
            }
            _ => {}
        }
        i += 1;
    }
}

#[derive(Debug)]
enum Leaf {
    /// Brings in a name (None for `as _`).
    Named(Option<String>),
    Glob,
}

#[derive(Debug)]
struct UseLeaf {
    path: Written,
    kind: Leaf,
}

/// The leaves of a use tree (`a::{b, c::*, d as e}`), the tokens after `use`.
fn use_leaves(tokens: &[TokenTree]) -> Vec<UseLeaf> {
    let mut out = Vec::new();
    use_tree(tokens, &[], &mut out);
    out
}

fn use_tree(tokens: &[TokenTree], prefix: &[String], out: &mut Vec<UseLeaf>) {
    let mut segments = prefix.to_vec();
    let mut i = 0;
    // A leading `::` names an external crate: nothing of ours.
    if is_path_sep(tokens, 0) {
        return;
    }
    loop {
        match tokens.get(i) {
            Some(TokenTree::Ident(id)) => {
                segments.push(id.to_string());
                let line = line(&tokens[i]);
                if is_path_sep(tokens, i + 1) {
                    i += 3;
                    continue;
                }
                let alias = match tokens.get(i + 1) {
                    Some(TokenTree::Ident(a)) if a == "as" => ident_at(tokens, i + 2),
                    _ => None,
                };
                // `a::b::{self}` imports `b`.
                if segments.len() > 1 && segments.last().is_some_and(|s| s == "self") {
                    segments.pop();
                }
                let name = alias.or_else(|| segments.last().cloned());
                out.push(UseLeaf {
                    path: Written { segments, line },
                    kind: Leaf::Named(name.filter(|n| n != "_")),
                });
                return;
            }
            Some(t @ TokenTree::Punct(p)) if p.as_char() == '*' => {
                out.push(UseLeaf {
                    path: Written {
                        segments,
                        line: line(t),
                    },
                    kind: Leaf::Glob,
                });
                return;
            }
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                for part in inner.split(|t| is_punct(t, ',')) {
                    if !part.is_empty() {
                        use_tree(part, &segments, out);
                    }
                }
                return;
            }
            _ => return,
        }
    }
}

fn ident_at(tokens: &[TokenTree], i: usize) -> Option<String> {
    match tokens.get(i) {
        Some(TokenTree::Ident(id)) => Some(id.to_string()),
        _ => None,
    }
}

fn is_punct(t: &TokenTree, c: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == c)
}

fn is_punct_at(tokens: &[TokenTree], i: usize, c: char) -> bool {
    tokens.get(i).is_some_and(|t| is_punct(t, c))
}

/// `::` at `i`: a joint `:` then a `:`.
fn is_path_sep(tokens: &[TokenTree], i: usize) -> bool {
    matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
        && is_punct_at(tokens, i + 1, ':')
}

fn line(t: &TokenTree) -> usize {
    t.span().start().line
}
