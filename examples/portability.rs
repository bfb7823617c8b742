//! The portability check (`scripts/portability-check.sh`): fcm builds for Linux, macOS and
//! Windows, so a platform's own API may only be used where a `cfg` for that platform
//! gates it (`#[cfg(unix)]`, `#[cfg(target_os = "linux")]`, ...), on the item, statement or
//! expression that uses it, on a module around it, or on the file (`#![cfg(...)]`, or the
//! `mod` that names it). Flagged elsewhere: `libc::` paths and imports, `std::os::unix`,
//! `std::os::fd`, and `/proc` in a string. The sources are read with `syn`, so comments
//! and doc text never count.
//!
//! Usage: `portability PATH...` (files, or folders searched for `.rs` files); prints one
//! line per finding and exits 1 when there is any.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::{self, Visit};

/// A platform-specific use outside a gate for its platform.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub file: PathBuf,
    pub line: usize,
    pub what: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {} outside a #[cfg] for its platform (gate it: #[cfg(unix)], #[cfg(windows)], #[cfg(target_os = \"...\")])",
            self.file.display(),
            self.line,
            self.what
        )
    }
}

/// Path prefixes only one platform family has.
const PLATFORM_PATHS: [&str; 3] = ["libc", "std::os::unix", "std::os::fd"];
/// Linux's process file system (spelt in two pieces, so this file does not name it).
const PROC: &str = concat!("/", "proc");
/// Configuration keys that name a platform.
const PLATFORM_KEYS: [&str; 6] = [
    "unix",
    "windows",
    "target_os",
    "target_family",
    "target_env",
    "target_vendor",
];

/// Whether an attribute is a `cfg` (or `#![cfg]`) that names a platform.
fn platform_gate(attr: &syn::Attribute) -> bool {
    if !attr.path().is_ident("cfg") {
        return false;
    }
    let tokens = match &attr.meta {
        syn::Meta::List(list) => list.tokens.to_string(),
        _ => return false,
    };
    tokens
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| PLATFORM_KEYS.contains(&word))
}

fn gated(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(platform_gate)
}

/// The platform prefix `path` (`a::b::c`) starts with, if any.
fn platform_prefix(path: &str) -> Option<&'static str> {
    let path = path.trim_start_matches("::");
    PLATFORM_PATHS
        .into_iter()
        .find(|p| path == *p || path.starts_with(&format!("{p}::")))
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Every whole path a `use` tree names (`std::os::{unix, fd}` is two).
fn use_paths(tree: &syn::UseTree, prefix: &str, out: &mut Vec<String>) {
    let join = |name: String| {
        if prefix.is_empty() {
            name
        } else {
            format!("{prefix}::{name}")
        }
    };
    match tree {
        syn::UseTree::Path(p) => use_paths(&p.tree, &join(p.ident.to_string()), out),
        syn::UseTree::Name(n) => out.push(join(n.ident.to_string())),
        syn::UseTree::Rename(r) => out.push(join(r.ident.to_string())),
        syn::UseTree::Glob(_) => out.push(prefix.to_string()),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_paths(t, prefix, out)),
    }
}

/// The attributes of an expression, whichever kind it is.
fn expr_attrs(e: &syn::Expr) -> &[syn::Attribute] {
    use syn::Expr::*;
    macro_rules! attrs {
        ($($kind:ident),*) => {
            match e {
                $($kind(x) => &x.attrs,)*
                _ => &[],
            }
        };
    }
    attrs!(
        Array, Assign, Async, Await, Binary, Block, Break, Call, Cast, Closure, Const, Continue,
        Field, ForLoop, Group, If, Index, Infer, Let, Lit, Loop, Macro, Match, MethodCall, Paren,
        Path, Range, RawAddr, Reference, Repeat, Return, Struct, Try, TryBlock, Tuple, Unary,
        Unsafe, While, Yield
    )
}

/// One file's walk: how deep inside platform gates it is, and what it found outside them.
struct Walk<'a> {
    file: &'a Path,
    depth: usize,
    findings: Vec<Finding>,
    /// Modules declared here without a body, and whether a platform gate is on them.
    modules: Vec<(String, Option<String>, bool)>,
}

impl Walk<'_> {
    fn found(&mut self, span: proc_macro2::Span, what: String) {
        if self.depth == 0 {
            self.findings.push(Finding {
                file: self.file.to_path_buf(),
                line: span.start().line,
                what,
            });
        }
    }

    /// Runs `inner` one gate deeper when `attrs` hold a platform gate.
    fn within(&mut self, attrs: &[syn::Attribute], inner: impl FnOnce(&mut Self)) {
        let gate = gated(attrs);
        self.depth += usize::from(gate);
        inner(self);
        self.depth -= usize::from(gate);
    }

    /// Platform paths and `/proc` in tokens `syn` does not parse (macro arguments).
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let mut path: Vec<String> = Vec::new();
        let mut last_colon = false;
        for tt in tokens {
            match tt {
                proc_macro2::TokenTree::Group(g) => {
                    self.tokens(g.stream());
                    path.clear();
                }
                proc_macro2::TokenTree::Ident(i) => {
                    if !last_colon {
                        path.clear();
                    }
                    path.push(i.to_string());
                    if let Some(p) = platform_prefix(&path.join("::")) {
                        if path.len() == p.split("::").count() {
                            self.found(i.span(), format!("`{p}`"));
                        }
                    }
                    last_colon = false;
                }
                proc_macro2::TokenTree::Punct(p) => {
                    last_colon = p.as_char() == ':';
                }
                proc_macro2::TokenTree::Literal(l) => {
                    if l.to_string().contains(PROC) {
                        self.found(l.span(), format!("\"{PROC}\""));
                    }
                    path.clear();
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Walk<'_> {
    /// Attributes are not code (doc comments among them).
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match i {
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::ExternCrate(x) => &x.attrs,
            syn::Item::Fn(x) => &x.attrs,
            syn::Item::ForeignMod(x) => &x.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Macro(x) => &x.attrs,
            syn::Item::Mod(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::TraitAlias(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            syn::Item::Union(x) => &x.attrs,
            syn::Item::Use(x) => &x.attrs,
            _ => &[],
        };
        if let syn::Item::Mod(m) = i {
            if m.content.is_none() {
                let at = m.attrs.iter().find_map(|a| match &a.meta {
                    syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }) => Some(s.value()),
                        _ => None,
                    },
                    _ => None,
                });
                let gate = self.depth > 0 || gated(&m.attrs);
                self.modules.push((m.ident.to_string(), at, gate));
            }
        }
        self.within(attrs, |w| visit::visit_item(w, i));
    }

    fn visit_impl_item(&mut self, i: &'ast syn::ImplItem) {
        let attrs: &[syn::Attribute] = match i {
            syn::ImplItem::Const(x) => &x.attrs,
            syn::ImplItem::Fn(x) => &x.attrs,
            syn::ImplItem::Type(x) => &x.attrs,
            syn::ImplItem::Macro(x) => &x.attrs,
            _ => &[],
        };
        self.within(attrs, |w| visit::visit_impl_item(w, i));
    }

    fn visit_trait_item(&mut self, i: &'ast syn::TraitItem) {
        let attrs: &[syn::Attribute] = match i {
            syn::TraitItem::Const(x) => &x.attrs,
            syn::TraitItem::Fn(x) => &x.attrs,
            syn::TraitItem::Type(x) => &x.attrs,
            syn::TraitItem::Macro(x) => &x.attrs,
            _ => &[],
        };
        self.within(attrs, |w| visit::visit_trait_item(w, i));
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        self.within(&l.attrs, |w| visit::visit_local(w, l));
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        self.within(&m.attrs, |w| visit::visit_stmt_macro(w, m));
    }

    fn visit_expr(&mut self, e: &'ast syn::Expr) {
        self.within(expr_attrs(e), |w| visit::visit_expr(w, e));
    }

    fn visit_arm(&mut self, a: &'ast syn::Arm) {
        self.within(&a.attrs, |w| visit::visit_arm(w, a));
    }

    fn visit_field(&mut self, f: &'ast syn::Field) {
        self.within(&f.attrs, |w| visit::visit_field(w, f));
    }

    fn visit_variant(&mut self, v: &'ast syn::Variant) {
        self.within(&v.attrs, |w| visit::visit_variant(w, v));
    }

    fn visit_foreign_item(&mut self, f: &'ast syn::ForeignItem) {
        let attrs: &[syn::Attribute] = match f {
            syn::ForeignItem::Fn(x) => &x.attrs,
            syn::ForeignItem::Static(x) => &x.attrs,
            syn::ForeignItem::Type(x) => &x.attrs,
            syn::ForeignItem::Macro(x) => &x.attrs,
            _ => &[],
        };
        self.within(attrs, |w| visit::visit_foreign_item(w, f));
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&u.tree, "", &mut paths);
        for p in paths {
            if let Some(prefix) = platform_prefix(&p) {
                self.found(u.span(), format!("`use {prefix}`"));
            }
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if let Some(prefix) = platform_prefix(&path_text(p)) {
            self.found(p.span(), format!("`{prefix}::`"));
        }
        visit::visit_path(self, p);
    }

    fn visit_lit_str(&mut self, s: &'ast syn::LitStr) {
        if s.value().contains(PROC) {
            self.found(s.span(), format!("\"{PROC}\""));
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        visit::visit_macro(self, m);
    }
}

fn rust_files(root: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    if root.is_file() {
        out.push(root.to_path_buf());
        return Ok(());
    }
    let entries = std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The file a `mod name;` in `file` names (with its `#[path]`, if any).
fn module_file(file: &Path, name: &str, at: Option<&str>) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let owns_dir = file
        .file_name()
        .is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs");
    let base = if owns_dir {
        dir.to_path_buf()
    } else {
        dir.join(file.file_stem().unwrap_or_default())
    };
    match at {
        Some(at) => vec![dir.join(at)],
        None => vec![
            base.join(format!("{name}.rs")),
            base.join(name).join("mod.rs"),
        ],
    }
}

/// Every finding in the `.rs` files under `roots`, in file and line order.
pub fn check(roots: &[PathBuf]) -> Result<Vec<Finding>, String> {
    let mut files = Vec::new();
    for root in roots {
        rust_files(root, &mut files)?;
    }
    files.sort();
    let mut walks = Vec::new();
    let mut gated_files: BTreeSet<PathBuf> = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let ast = syn::parse_file(&text).map_err(|e| {
            format!(
                "{}:{}: cannot parse: {e}",
                file.display(),
                e.span().start().line
            )
        })?;
        let mut walk = Walk {
            file,
            depth: usize::from(gated(&ast.attrs)),
            findings: Vec::new(),
            modules: Vec::new(),
        };
        walk.visit_file(&ast);
        walks.push(walk);
    }
    // A module gated where it is declared gates its file, and that file's modules.
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    loop {
        let before = gated_files.len();
        for walk in &walks {
            let whole = gated_files.contains(&canonical(walk.file));
            for (name, at, gate) in &walk.modules {
                if *gate || whole {
                    for f in module_file(walk.file, name, at.as_deref()) {
                        if f.exists() {
                            gated_files.insert(canonical(&f));
                        }
                    }
                }
            }
        }
        if gated_files.len() == before {
            break;
        }
    }
    let mut out: Vec<Finding> = walks
        .into_iter()
        .filter(|w| !gated_files.contains(&canonical(w.file)))
        .flat_map(|w| w.findings)
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

fn main() {
    let roots: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if roots.is_empty() {
        eprintln!("usage: portability PATH... (files, or folders of .rs files)");
        std::process::exit(2);
    }
    match check(&roots) {
        Ok(findings) if findings.is_empty() => {
            println!("portability: no platform-specific API outside a platform gate");
        }
        Ok(findings) => {
            for f in &findings {
                println!("{f}");
            }
            println!("portability: {} finding(s)", findings.len());
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("portability: {e}");
            std::process::exit(2);
        }
    }
}
