//! The layers of `src/` point one way: each folder uses only the ones below it, and no two
//! files import each other, directly or round a circle. ARCHITECTURE.md says so; this test
//! keeps it true. Read as text (the `use` lines and paths written in the code, test modules
//! left out), so it needs nothing built.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, top first. A module may use its own layer's modules and any below.
const LAYERS: &[&[&str]] = &[
    &["main", "lib", "cli"],
    &["commands"],
    &["install", "fake_provider"],
    &["edge"],
    &["protocol", "bench"],
    &["routing"],
    &["state"],
    &["answers", "compress"],
    &["providers"],
    &[
        "capability",
        "hex",
        "tokens",
        "time",
        "secrets",
        "table",
        "process",
    ],
];

fn layer_of(top: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&top))
        .unwrap_or_else(|| panic!("src/{top} is in no layer: add it to LAYERS and ARCHITECTURE.md"))
}

/// A source file as a module path: `src/routing/attempt.rs` is `routing::attempt`,
/// `src/routing/mod.rs` is `routing`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The code of a file without its comments, string contents, and `#[cfg(test)]` items.
fn code_without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        rest = &rest[at + "#[cfg(test)]".len()..];
        // Skip the item: up to its `;`, or its whole `{ ... }` block.
        let semi = rest.find(';');
        let brace = rest.find('{');
        match (semi, brace) {
            (Some(s), Some(b)) if s < b => rest = &rest[s + 1..],
            (_, Some(b)) => {
                let mut depth = 0;
                let mut end = rest.len();
                for (i, c) in rest[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &rest[end..];
            }
            (Some(s), None) => rest = &rest[s + 1..],
            (None, None) => rest = "",
        }
    }
    out.push_str(rest);
    out.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The files whose modules are declared under `#[cfg(test)]` (`mod tests;`).
fn test_only_files(src: &Path, files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let dir = if f.file_name().unwrap() == "mod.rs" || f.parent() == Some(src) {
            f.parent().unwrap().to_path_buf()
        } else {
            f.with_extension("")
        };
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[cfg(test)]") {
            rest = &rest[at + 12..];
            let line = rest.trim_start().lines().next().unwrap_or("");
            let Some(name) = line
                .strip_prefix("mod ")
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .and_then(|n| n.strip_suffix(';'))
            else {
                continue;
            };
            out.insert(dir.join(format!("{name}.rs")));
            out.insert(dir.join(name).join("mod.rs"));
            for sub in walk(&dir.join(name)) {
                out.insert(sub);
            }
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The modules a file names: `crate::a::b` paths, and `super::x` paths resolved.
fn named_modules(
    code: &str,
    me: &[String],
    known: &BTreeSet<Vec<String>>,
) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    // A file's own module is `me`; `super` from a file is its folder's module, from a
    // mod.rs the folder above.
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let (base, skip): (Vec<String>, usize) = if rest.starts_with("crate::") {
            (Vec::new(), 7)
        } else if rest.starts_with("super::") && (i == 0 || !is_ident(bytes[i - 1])) {
            let mut base = me.to_vec();
            let mut skip = 0;
            let mut r = rest;
            while let Some(after) = r.strip_prefix("super::") {
                base.pop();
                skip += 7;
                r = after;
            }
            (base, skip)
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        if i > 0 && is_ident(bytes[i - 1]) {
            i += skip;
            continue;
        }
        let path: Vec<String> = code[i + skip..]
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .next()
            .unwrap_or("")
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        // The longest prefix that is a module of the crate.
        let mut full = base.clone();
        let mut best = None;
        for seg in path {
            full.push(seg);
            if known.contains(&full) {
                best = Some(full.clone());
            }
        }
        if let Some(m) = best.or_else(|| (!base.is_empty()).then_some(base)) {
            out.insert(m);
        }
        i += skip;
    }
    // A folder's own files named without a prefix (`anthropic::to_chat`), except in the
    // lines that only declare or re-export them.
    for line in code.lines() {
        let t = line.trim_start();
        let declares = [
            "mod ",
            "pub mod ",
            "pub(crate) mod ",
            "pub use ",
            "pub(crate) use ",
            "pub(super) use ",
        ]
        .iter()
        .any(|p| t.starts_with(p));
        if declares {
            continue;
        }
        for child in known
            .iter()
            .filter(|k| k.len() == me.len() + 1 && k.starts_with(me))
        {
            let name = format!("{}::", child.last().unwrap());
            let mut from = 0;
            while let Some(at) = line[from..].find(&name) {
                let at = from + at;
                let before = line[..at].chars().next_back();
                if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    out.insert(child.clone());
                }
                from = at + name.len();
            }
        }
    }
    out
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[test]
fn folders_use_only_the_layers_below_and_no_files_import_each_other() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = walk(&src);
    let test_only = test_only_files(&src, &files);
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| !test_only.contains(f))
        .collect();
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let known: BTreeSet<Vec<String>> = modules.keys().cloned().collect();
    let mut upward = Vec::new();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (me, file) in &modules {
        let code = code_without_tests(&std::fs::read_to_string(file).unwrap());
        for dep in named_modules(&code, me, &known) {
            if dep == *me {
                continue;
            }
            let (mine, theirs) = (layer_of(&me[0]), layer_of(&dep[0]));
            if theirs < mine {
                upward.push(format!(
                    "src/{} uses {} (a layer above)",
                    me.join("/"),
                    dep.join("::")
                ));
            }
            edges.entry(me.clone()).or_default().insert(dep);
        }
    }
    assert!(upward.is_empty(), "{}", upward.join("\n"));
    // A folder's mod.rs that only declares and re-exports its files imports none of them.
    let mut circles = Vec::new();
    for start in edges.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, path)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    let names: Vec<String> = path.iter().map(|m| m.join("::")).collect();
                    circles.push(format!("{} -> {}", names.join(" -> "), start.join("::")));
                } else if !path.contains(next) && next > start && path.len() < 8 {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}
