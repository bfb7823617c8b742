//! The documentation against the binary. README's command overview and docs/commands.md
//! name exactly the commands `fcm --help` lists, and no page names one it does not have;
//! README stays a front door (at most [`README_MAX_LINES`] lines, the manual lives in
//! `docs/`); and every relative link in README.md and docs/*.md reaches a file that exists
//! and, into a Markdown page, a heading that page has.
//!
//! Markdown is read as text, by the few rules these pages keep: fenced code blocks between
//! ```` ``` ```` lines, inline code between backticks on one line, links as `[text](target)`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// README is the front door: what fcm is, install, the first minutes, the commands and links.
const README_MAX_LINES: usize = 300;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// README.md and every page in docs/, as paths.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    assert!(
        docs.iter().any(|p| p.ends_with("commands.md")),
        "docs/commands.md is missing"
    );
    pages.extend(docs);
    pages
}

/// The subcommands `fcm --help` lists: in its `Commands:` section, each name starts a line
/// indented by two spaces (a description that wraps is indented further).
fn cli_commands() -> BTreeSet<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_fcm"))
        .arg("--help")
        .output()
        .expect("run fcm --help");
    assert!(out.status.success(), "fcm --help failed: {out:?}");
    let help = String::from_utf8(out.stdout).expect("help is UTF-8");
    let mut names = BTreeSet::new();
    let mut listing = false;
    for line in help.lines() {
        if line.trim_end() == "Commands:" {
            listing = true;
            continue;
        }
        if !listing || line.trim().is_empty() {
            continue;
        }
        if !line.starts_with(' ') {
            break;
        }
        if let Some(rest) = line.strip_prefix("  ").filter(|r| !r.starts_with(' ')) {
            names.insert(
                rest.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
    }
    assert!(
        names.contains("serve") && names.contains("bench") && names.len() >= 10,
        "could not read the commands from fcm --help:\n{help}"
    );
    names
}

/// The lines of a page outside fenced code blocks, with their line numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((n + 1, line));
        }
    }
    out
}

/// The inline code spans of one line (between backtick pairs).
fn code_spans(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2)
}

/// A heading's text (`## Foo` is `Foo`), if the line is one.
fn heading(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches('#');
    (rest.len() < line.len() && line.starts_with('#') && rest.starts_with(' ')).then(|| rest.trim())
}

/// The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a page's headings (a repeated heading's anchor gets `-1`, `-2`, ...).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose(text) {
        if let Some(h) = heading(line) {
            let s = slug(h);
            let n = seen.entry(s.clone()).or_default();
            out.insert(if *n == 0 {
                s.clone()
            } else {
                format!("{s}-{n}")
            });
            *n += 1;
        }
    }
    out
}

/// The command a `fcm NAME ...` text names: the word after `fcm `, when it is one.
fn command_named(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix("fcm ")?;
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || *c == '-')
        .collect();
    (!word.is_empty() && !word.starts_with('-')).then_some(word)
}

#[test]
fn docs_commands_has_a_heading_for_each_command_of_the_cli() {
    let cli = cli_commands();
    let text = read(&root().join("docs/commands.md"));
    let headed: BTreeSet<String> = prose(&text)
        .into_iter()
        .filter_map(|(_, line)| heading(line))
        .filter_map(|h| {
            h.strip_prefix("`fcm ")?
                .strip_suffix('`')
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        headed, cli,
        "docs/commands.md should have one heading `fcm NAME` per command of `fcm --help`"
    );
}

#[test]
fn readme_lists_each_command_of_the_cli_with_a_link_to_its_section() {
    let cli = cli_commands();
    let text = read(&root().join("README.md"));
    let section: Vec<&str> = prose(&text)
        .into_iter()
        .map(|(_, line)| line)
        .skip_while(|line| *line != "## Commands")
        .skip(1)
        .take_while(|line| !line.starts_with("## "))
        .collect();
    assert!(
        !section.is_empty(),
        "README.md has no `## Commands` section"
    );
    let mut listed = BTreeSet::new();
    for row in section.iter().filter(|l| l.starts_with("| [`fcm ")) {
        let name = command_named(code_spans(row).next().unwrap_or_default())
            .unwrap_or_else(|| panic!("README command row names no command: {row}"));
        let link = format!("](docs/commands.md#fcm-{name})");
        assert!(
            row.contains(&link),
            "README's row for `fcm {name}` should link to {link}: {row}"
        );
        let described = row.rsplit('|').nth(1).unwrap_or_default().trim();
        assert!(
            !described.is_empty(),
            "README's row for `fcm {name}` says nothing"
        );
        assert!(
            listed.insert(name.clone()),
            "README lists `fcm {name}` twice"
        );
    }
    assert_eq!(
        listed, cli,
        "README's command overview should list exactly the commands of `fcm --help`"
    );
}

#[test]
fn no_page_names_a_command_the_cli_does_not_have() {
    let cli = cli_commands();
    let mut wrong = Vec::new();
    for page in pages() {
        let text = read(&page);
        for (n, line) in text.lines().enumerate() {
            let shell = line.trim_start().strip_prefix("$ ").into_iter();
            for named in code_spans(line).chain(shell).filter_map(command_named) {
                if !cli.contains(&named) && named != "help" {
                    wrong.push(format!("{}:{}: fcm {named}", page.display(), n + 1));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "commands fcm does not have:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn readme_is_a_front_door() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; at most {README_MAX_LINES}: the manual belongs in docs/"
    );
}

#[test]
fn every_relative_link_reaches_a_file_and_its_heading() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = read(&page);
        let dir = page.parent().unwrap();
        for (n, line) in prose(&text) {
            // Inline code is not a link, whatever it holds.
            let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
            for target in plain
                .split("](")
                .skip(1)
                .filter_map(|t| t.split(')').next())
            {
                let target = target.split_whitespace().next().unwrap_or_default();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target, None),
                };
                let path = if file.is_empty() {
                    page.clone()
                } else {
                    dir.join(file)
                };
                let at = format!("{}:{n}: {target}", page.display());
                if !path.exists() {
                    broken.push(format!("{at} (no such file)"));
                    continue;
                }
                if let Some(anchor) = anchor {
                    let is_md = path.extension().is_some_and(|x| x == "md");
                    if is_md && !anchors(&read(&path)).contains(anchor) {
                        broken.push(format!("{at} (no such heading)"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_markdown_reading_holds() {
    assert_eq!(slug("`fcm models`"), "fcm-models");
    assert_eq!(
        slug("In the background: `--detach`"),
        "in-the-background---detach"
    );
    assert_eq!(slug("`config.json`"), "configjson");
    assert_eq!(
        slug("Budgets: never a predictable 429"),
        "budgets-never-a-predictable-429"
    );
    assert_eq!(heading("## `fcm serve`"), Some("`fcm serve`"));
    assert_eq!(heading("#no heading"), None);
    assert_eq!(command_named("fcm keys set groq").as_deref(), Some("keys"));
    assert_eq!(command_named("fcm --version"), None);
    assert_eq!(command_named("fcm:provider/modelId"), None);
    let spans: Vec<&str> = code_spans("run `fcm stop` or `fcm serve --detach`").collect();
    assert_eq!(spans, ["fcm stop", "fcm serve --detach"]);
    let text = "# Top\n```text\n# not a heading\n```\n## Top\n";
    assert_eq!(
        anchors(text),
        BTreeSet::from(["top".to_string(), "top-1".to_string()])
    );
}
