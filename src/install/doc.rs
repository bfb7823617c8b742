//! Config files edited in place, in their own format, through a format-preserving editor
//! for each: JSON and JSONC (jsonc-parser's syntax tree), TOML (toml_edit) and YAML
//! (yaml-edit). Comments, indentation, quoting, key order and the layout of everything fcm
//! does not change survive an edit, and removing what was added gives back the same bytes.
//! Each can read, set and remove a value at a key path, so an install and its uninstall are
//! the same code whatever the format. Pure: text in, text out.

use std::str::FromStr;

use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;
use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike};

/// Why a file cannot be read as its format, or a value cannot be set in it. The text says
/// what is wrong and where; the caller adds which file and that nothing was changed.
#[derive(Debug)]
pub(crate) enum DocError {
    /// Not valid JSON (or JSONC): the parser's words, with line and column.
    Json(String),
    /// Valid JSON, but not an object of settings.
    NotAnObject,
    /// Not valid TOML.
    Toml(toml_edit::TomlError),
    /// Not valid YAML, or YAML whose top level is not a mapping of settings.
    Yaml(String),
    /// A parent key (dotted) holds a plain value where fcm needs a table of settings.
    NotATable(String),
    /// The key (dotted) holds a table where fcm would write a value.
    IsATable(String),
}

impl std::fmt::Display for DocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DocError::Json(e) => f.write_str(e),
            DocError::NotAnObject => f.write_str("the top level is not a JSON object"),
            DocError::Toml(e) => f.write_str(e.to_string().trim()),
            DocError::Yaml(e) => f.write_str(e),
            DocError::NotATable(path) => write!(
                f,
                "{path} holds a value, not a table of settings; fcm leaves it alone"
            ),
            DocError::IsATable(path) => write!(f, "{path} is a table; fcm leaves it alone"),
        }
    }
}

impl std::error::Error for DocError {}

/// A parsed config file.
pub(crate) enum Doc {
    /// JSON or JSONC, as its syntax tree.
    Json(CstRootNode),
    Toml(DocumentMut),
    Yaml(Yaml),
    /// A file of commands (Crush's `crushrc`), kept as text; see [`Format::Commands`].
    Commands(String),
}

/// A YAML file of settings: its tree, or (empty, or only comments) the text a first
/// setting is added to.
pub(crate) enum Yaml {
    Mapping(yaml_edit::Document),
    Empty(String),
}

/// File formats fcm writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// JSON, comments and trailing commas allowed (JSONC), as the tools that read them allow.
    Json,
    Toml,
    Yaml,
    /// A file of commands run by the tool (Crush's `crushrc`, Bash with its own builtins).
    /// fcm never reads the user's commands: its own lines go in one block between two
    /// marker comments, the one setting (key path `[COMMANDS_BLOCK]`) such a file has, and
    /// everything outside the block stays as it is.
    Commands,
}

/// The key of the block of lines fcm keeps in a [`Format::Commands`] file.
pub(crate) const COMMANDS_BLOCK: &str = "fcm";
const BLOCK_START: &str = "# fcm: begin (`fcm install --uninstall` takes these lines out)";
const BLOCK_END: &str = "# fcm: end";

/// What a JSON file may hold: JSON with comments and trailing commas, as VS Code, OpenCode
/// and Crush read it; nothing looser (single quotes, bare keys, missing commas), which no
/// tool fcm writes for reads.
fn json_options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        ..ParseOptions::default()
    }
}

/// A key that fcm puts in an empty YAML file first, so the file has a mapping to add to;
/// removed again at once.
const YAML_SEED: &str = "fcm-seed";

impl Doc {
    /// Parses `text` (empty text is an empty document). An error says what is wrong.
    pub(crate) fn parse(format: Format, text: &str) -> Result<Doc, DocError> {
        match format {
            Format::Json => {
                let root = CstRootNode::parse(text, &json_options())
                    .map_err(|e| DocError::Json(e.to_string()))?;
                match root.value() {
                    None => Ok(Doc::Json(root)),
                    Some(v) if v.as_object().is_some() => Ok(Doc::Json(root)),
                    Some(_) => Err(DocError::NotAnObject),
                }
            }
            Format::Toml => text
                .parse::<DocumentMut>()
                .map(Doc::Toml)
                .map_err(DocError::Toml),
            Format::Commands => Ok(Doc::Commands(text.to_string())),
            Format::Yaml => {
                let blank = text
                    .lines()
                    .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'));
                if blank {
                    return Ok(Doc::Yaml(Yaml::Empty(text.to_string())));
                }
                let doc = yaml_edit::Document::from_str(text)
                    .map_err(|e| DocError::Yaml(e.to_string()))?;
                if doc.as_mapping().is_none() {
                    return Err(DocError::Yaml(
                        "the top level is not a mapping of `key: value` settings".into(),
                    ));
                }
                Ok(Doc::Yaml(Yaml::Mapping(doc)))
            }
        }
    }

    pub(crate) fn get(&self, path: &[&str]) -> Option<Value> {
        match self {
            Doc::Json(root) => {
                let (parents, last) = path.split_at(path.len() - 1);
                json_object(root, parents)?
                    .get(last[0])?
                    .value()?
                    .to_serde_value()
            }
            Doc::Toml(d) => {
                let mut item = d.as_item();
                for k in path {
                    item = item.get(k)?;
                }
                toml_to_json(item)
            }
            Doc::Yaml(Yaml::Mapping(doc)) => {
                let node = doc.as_mapping()?.get(path.first()?)?;
                let scalar = node.as_scalar()?;
                Some(yaml_to_json(scalar))
            }
            Doc::Yaml(Yaml::Empty(_)) => None,
            Doc::Commands(text) => {
                let (start, end) = block(text)?;
                let inner = &text[start..end];
                let lines = inner.lines().skip(1).filter(|l| *l != BLOCK_END);
                Some(Value::String(lines.collect::<Vec<_>>().join("\n")))
            }
        }
    }

    /// Sets a value, creating missing parents; returns the parent paths it created. A parent
    /// that exists but holds a plain value is refused: replacing it would lose the user's data.
    pub(crate) fn set(
        &mut self,
        path: &[&str],
        value: &Value,
    ) -> Result<Vec<Vec<String>>, DocError> {
        let mut created = Vec::new();
        let parents = &path[..path.len() - 1];
        let last = path[path.len() - 1];
        let not_a_table = |i: usize| DocError::NotATable(parents[..=i].join("."));
        match self {
            Doc::Json(root) => {
                let mut obj = root.object_value_or_create().ok_or(DocError::NotAnObject)?;
                for (i, k) in parents.iter().enumerate() {
                    obj = match obj.get(k) {
                        None => {
                            created.push(path[..=i].iter().map(|s| s.to_string()).collect());
                            obj.object_value_or_set(k)
                        }
                        Some(prop) => prop.object_value().ok_or_else(|| not_a_table(i))?,
                    };
                }
                let input = json_input(value);
                match obj.get(last) {
                    Some(prop) => prop.set_value(input),
                    None => {
                        obj.append(last, input);
                    }
                }
            }
            Doc::Toml(d) => {
                let mut table: &mut dyn TableLike = d.as_table_mut();
                let mut inline = false;
                for (i, k) in parents.iter().enumerate() {
                    match table.get(k) {
                        None => {
                            let item = if inline {
                                Item::Value(toml_edit::Value::InlineTable(InlineTable::new()))
                            } else {
                                let mut t = Table::new();
                                t.set_implicit(i + 1 < parents.len());
                                Item::Table(t)
                            };
                            table.insert(k, item);
                            created.push(path[..=i].iter().map(|s| s.to_string()).collect());
                        }
                        Some(item) if item.is_table_like() => {}
                        Some(_) => return Err(not_a_table(i)),
                    }
                    let item = table.get_mut(k).expect("present");
                    inline |= item.is_inline_table();
                    table = item.as_table_like_mut().expect("checked above");
                }
                let new = json_to_toml(value);
                match table.get_mut(last) {
                    // Replace the value only: the key's comments and the value's trailing
                    // comment stay where the user put them.
                    Some(Item::Value(old)) => {
                        let decor = old.decor().clone();
                        *old = new.into_value().expect("scalars are values");
                        *old.decor_mut() = decor;
                    }
                    Some(Item::Table(_)) | Some(Item::ArrayOfTables(_)) => {
                        return Err(DocError::IsATable(path.join(".")));
                    }
                    _ => {
                        table.insert(last, new);
                    }
                }
            }
            Doc::Yaml(yaml) => {
                if let Yaml::Empty(text) = yaml {
                    let sep = if text.is_empty() || text.ends_with('\n') {
                        ""
                    } else {
                        "\n"
                    };
                    let seeded = format!("{text}{sep}{YAML_SEED}: 0\n");
                    let doc = yaml_edit::Document::from_str(&seeded)
                        .map_err(|e| DocError::Yaml(e.to_string()))?;
                    *yaml = Yaml::Mapping(doc);
                }
                let Yaml::Mapping(doc) = yaml else {
                    unreachable!("made a mapping above")
                };
                let map = doc.as_mapping().expect("parsed as a mapping");
                if map.get(last).is_some_and(|n| n.as_scalar().is_none()) {
                    return Err(DocError::IsATable(last.to_string()));
                }
                match value {
                    Value::Bool(b) => map.set(last, *b),
                    Value::Number(n) if n.is_i64() => map.set(last, n.as_i64().unwrap_or(0)),
                    Value::Number(n) => map.set(last, n.as_f64().unwrap_or(0.0)),
                    Value::String(s) => map.set(last, s.as_str()),
                    // A value recorded by an earlier fcm as the line's raw text.
                    Value::Object(o) if o.contains_key(YAML_RAW) => {
                        let raw = o[YAML_RAW].as_str().unwrap_or("");
                        map.set(last, yaml_raw_value(raw).as_str())
                    }
                    other => map.set(last, other.to_string().as_str()),
                }
                map.remove(YAML_SEED);
            }
            Doc::Commands(text) => {
                let lines = value.as_str().unwrap_or_default();
                let new = format!("{BLOCK_START}\n{lines}\n{BLOCK_END}\n");
                match block(text) {
                    Some((start, end)) => text.replace_range(start..end, &new),
                    None => {
                        if !text.is_empty() && !text.ends_with('\n') {
                            text.push('\n');
                        }
                        if !text.trim().is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&new);
                    }
                }
            }
        }
        Ok(created)
    }

    pub(crate) fn remove(&mut self, path: &[&str]) {
        match self {
            Doc::Json(root) => {
                let (parents, last) = path.split_at(path.len() - 1);
                if let Some(prop) = json_object(root, parents).and_then(|o| o.get(last[0])) {
                    prop.remove();
                }
            }
            Doc::Toml(d) => {
                let mut item = d.as_item_mut();
                for k in &path[..path.len() - 1] {
                    match item.get_mut(k) {
                        Some(i) => item = i,
                        None => return,
                    }
                }
                if let Some(t) = item.as_table_like_mut() {
                    t.remove(path[path.len() - 1]);
                }
            }
            Doc::Yaml(Yaml::Mapping(doc)) => {
                if let Some(map) = doc.as_mapping() {
                    map.remove(path[0]);
                }
            }
            Doc::Yaml(Yaml::Empty(_)) => {}
            Doc::Commands(text) => {
                if let Some((mut start, end)) = block(text) {
                    // The blank line fcm put before its block goes with it.
                    if text[..start].ends_with("\n\n") {
                        start -= 1;
                    }
                    text.replace_range(start..end, "");
                }
            }
        }
    }

    /// [`remove`](Self::remove), then each object above it that the removal left empty (not
    /// the document itself): `fcm keys rm` and `fcm sets rm` leave no `"apiKeys": {}` or
    /// `"router": {"sets": {}}` behind.
    pub(crate) fn remove_pruned(&mut self, path: &[&str]) {
        self.remove(path);
        for end in (1..path.len()).rev() {
            if !self.is_empty_at(&path[..end]) {
                break;
            }
            self.remove(&path[..end]);
        }
    }

    /// The keys of the JSON object at `path` (none for other formats, or no object there).
    pub(crate) fn keys(&self, path: &[&str]) -> Vec<String> {
        match self {
            Doc::Json(root) => json_object(root, path)
                .map(|o| {
                    o.properties()
                        .iter()
                        .filter_map(|p| p.name()?.decoded_value().ok())
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Whether the object or table at `path` exists and is empty.
    pub(crate) fn is_empty_at(&self, path: &[&str]) -> bool {
        match self {
            Doc::Json(root) => json_object(root, path).is_some_and(|o| o.properties().is_empty()),
            Doc::Toml(d) => {
                let mut item = d.as_item();
                for k in path {
                    match item.get(k) {
                        Some(i) => item = i,
                        None => return false,
                    }
                }
                item.as_table_like().is_some_and(|t| t.is_empty())
            }
            Doc::Yaml(_) | Doc::Commands(_) => false,
        }
    }

    /// Whether the document holds no setting at all (an empty object, table or mapping).
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Doc::Json(root) => root
                .object_value()
                .is_none_or(|o| o.properties().is_empty()),
            Doc::Toml(d) => d.as_table().is_empty(),
            Doc::Yaml(Yaml::Mapping(doc)) => doc.as_mapping().is_none_or(|m| m.is_empty()),
            Doc::Yaml(Yaml::Empty(_)) => true,
            Doc::Commands(text) => text.trim().is_empty(),
        }
    }

    pub(crate) fn render(&self) -> String {
        match self {
            Doc::Json(root) => root.to_string(),
            Doc::Toml(d) => d.to_string(),
            Doc::Yaml(Yaml::Mapping(doc)) => doc.to_string(),
            Doc::Yaml(Yaml::Empty(text)) => text.clone(),
            Doc::Commands(text) => text.clone(),
        }
    }
}

/// Where fcm's block is in a commands file: from its first marker to the end of the line of
/// its last (or the end of the text, when that marker was deleted).
fn block(text: &str) -> Option<(usize, usize)> {
    let start = text
        .match_indices(BLOCK_START)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || text[..i].ends_with('\n'))?;
    let end = match text[start..].find(&format!("\n{BLOCK_END}")) {
        Some(i) => {
            let after = start + i + 1 + BLOCK_END.len();
            after + usize::from(text[after..].starts_with('\n'))
        }
        None => text.len(),
    };
    Some((start, end))
}

/// The object at `path` under the root (the root object itself for an empty path).
fn json_object(root: &CstRootNode, path: &[&str]) -> Option<CstObject> {
    path.iter()
        .try_fold(root.object_value()?, |o, k| o.get(k)?.object_value())
}

/// A JSON value as the syntax tree takes it.
fn json_input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(json_input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), json_input(v))).collect())
        }
    }
}

fn yaml_to_json(scalar: &yaml_edit::Scalar) -> Value {
    if !scalar.is_quoted() {
        if let Some(b) = scalar.as_bool() {
            return Value::Bool(b);
        }
        if let Some(i) = scalar.as_i64() {
            return Value::from(i);
        }
    }
    Value::String(scalar.as_string())
}

fn toml_to_json(item: &Item) -> Option<Value> {
    let v = item.as_value()?;
    Some(if let Some(s) = v.as_str() {
        Value::String(s.to_string())
    } else if let Some(b) = v.as_bool() {
        Value::Bool(b)
    } else if let Some(i) = v.as_integer() {
        Value::from(i)
    } else if let Some(f) = v.as_float() {
        Value::from(f)
    } else {
        Value::String(v.to_string().trim().to_string())
    })
}

fn json_to_toml(v: &Value) -> Item {
    match v {
        Value::Bool(b) => toml_edit::value(*b),
        Value::Number(n) if n.is_i64() => toml_edit::value(n.as_i64().unwrap_or(0)),
        Value::Number(n) => toml_edit::value(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => toml_edit::value(s.as_str()),
        other => toml_edit::value(other.to_string()),
    }
}

/// How earlier fcm versions recorded a YAML value they replaced: the line's text after `key:`.
const YAML_RAW: &str = "yamlRaw";

/// The value in the raw text after a `key:` (quotes and a trailing comment taken off).
fn yaml_raw_value(raw: &str) -> String {
    yaml_edit::Document::from_str(&format!("k:{raw}\n"))
        .ok()
        .and_then(|d| d.as_mapping()?.get("k")?.as_scalar().map(|s| s.as_string()))
        .unwrap_or_else(|| raw.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_keeps_order_and_other_settings() {
        let mut d = Doc::parse(
            Format::Json,
            r#"{"zeta": 1, "env": {"KEEP": "me"}, "alpha": [1]}"#,
        )
        .unwrap();
        assert!(d
            .set(&["env", "ANTHROPIC_BASE_URL"], &json!("http://x"))
            .unwrap()
            .is_empty());
        let created = d.set(&["a", "b", "c"], &json!(true)).unwrap();
        assert_eq!(
            created,
            vec![
                vec!["a".to_string()],
                vec!["a".to_string(), "b".to_string()]
            ]
        );
        let text = d.render();
        assert!(
            text.find("zeta").unwrap() < text.find("alpha").unwrap(),
            "key order kept: {text}"
        );
        assert_eq!(d.get(&["env", "KEEP"]), Some(json!("me")));
        d.remove(&["a", "b", "c"]);
        assert!(d.is_empty_at(&["a", "b"]));
        assert!(Doc::parse(Format::Json, "{oops").is_err());
        assert!(Doc::parse(Format::Json, "[1]").is_err());
    }

    #[test]
    fn toml_edits_in_place() {
        let text =
            "# my codex config\nmodel = \"o3\" # favourite\n\n[history]\npersistence = \"none\"\n";
        let mut d = Doc::parse(Format::Toml, text).unwrap();
        assert_eq!(d.get(&["model"]), Some(json!("o3")));
        d.set(&["model"], &json!("fcm")).unwrap();
        d.set(
            &["model_providers", "fcm", "base_url"],
            &json!("http://127.0.0.1:19280/v1"),
        )
        .unwrap();
        let out = d.render();
        assert!(
            out.starts_with("# my codex config\nmodel = \"fcm\""),
            "{out}"
        );
        assert!(out.contains("[history]\npersistence = \"none\""), "{out}");
        assert!(
            out.contains("[model_providers.fcm]\nbase_url = \"http://127.0.0.1:19280/v1\""),
            "{out}"
        );
        d.remove(&["model_providers", "fcm", "base_url"]);
        assert!(d.is_empty_at(&["model_providers", "fcm"]));
        assert!(Doc::parse(Format::Toml, "model = ").is_err());
    }

    #[test]
    fn values_that_are_not_tables_are_never_replaced() {
        let mut d = Doc::parse(Format::Json, r#"{"env": "oops"}"#).unwrap();
        assert_eq!(
            d.set(&["env", "X"], &json!(1)).unwrap_err().to_string(),
            "env holds a value, not a table of settings; fcm leaves it alone"
        );
        let mut t = Doc::parse(Format::Toml, "model_providers = \"x\"\n").unwrap();
        assert!(t
            .set(&["model_providers", "fcm", "name"], &json!("fcm"))
            .is_err());
    }

    #[test]
    fn toml_inline_tables_are_entered_not_replaced() {
        let text = "model_providers = { ollama = { name = \"Ollama\", base_url = \"http://localhost:11434/v1\" } }\n";
        let mut d = Doc::parse(Format::Toml, text).unwrap();
        d.set(&["model_providers", "fcm", "name"], &json!("fcm"))
            .unwrap();
        assert_eq!(
            d.get(&["model_providers", "ollama", "name"]),
            Some(json!("Ollama"))
        );
        assert_eq!(
            d.get(&["model_providers", "fcm", "name"]),
            Some(json!("fcm"))
        );
        let out = d.render();
        assert!(out.contains("ollama") && out.contains("11434"), "{out}");
    }

    #[test]
    fn yaml_quotes_and_comments_survive() {
        let text = "# aider\nmodel: \"gpt # 4o\"   # my favourite\nkey: 'a:b'\ndark-mode: true\n";
        let mut d = Doc::parse(Format::Yaml, text).unwrap();
        assert_eq!(d.get(&["model"]), Some(json!("gpt # 4o")));
        assert_eq!(d.get(&["key"]), Some(json!("a:b")));
        assert_eq!(d.get(&["dark-mode"]), Some(json!(true)));
        d.set(&["openai-api-base"], &json!("http://127.0.0.1:19280/v1"))
            .unwrap();
        d.set(&["model"], &json!("openai/fcm")).unwrap();
        let out = d.render();
        assert!(out.starts_with("# aider\nmodel: openai/fcm"), "{out}");
        assert!(out.contains("# my favourite"), "{out}");
        assert_eq!(
            d.get(&["openai-api-base"]),
            Some(json!("http://127.0.0.1:19280/v1"))
        );
        d.remove(&["openai-api-base"]);
        assert!(!d.render().contains("openai-api-base"));
        // What an earlier fcm recorded as the raw line text still goes back.
        d.set(
            &["model"],
            &json!({"yamlRaw": " \"gpt # 4o\"   # my favourite"}),
        )
        .unwrap();
        assert_eq!(d.get(&["model"]), Some(json!("gpt # 4o")));
    }

    #[test]
    fn yaml_files_empty_or_not_settings() {
        for empty in ["", "\n", "# only a comment\n"] {
            let mut d = Doc::parse(Format::Yaml, empty).unwrap();
            assert!(d.is_empty());
            d.set(&["model"], &json!("openai/fcm")).unwrap();
            let out = d.render();
            assert!(
                out.starts_with(empty) && out.ends_with("model: openai/fcm\n"),
                "{out:?}"
            );
            assert!(!out.contains(YAML_SEED));
        }
        assert!(Doc::parse(Format::Yaml, "just words\n").is_err());
        assert!(Doc::parse(Format::Yaml, "- a\n- b\n").is_err());
        assert!(Doc::parse(Format::Yaml, "a: [\n").is_err());
    }

    #[test]
    fn jsonc_comments_and_layout_survive_and_removal_gives_the_bytes_back() {
        let text = "{\n    // my theme\n    \"theme\": \"dark\", /* keep */\n    \"keybinds\": {\"leader\": \"ctrl+x\"},\n}\n";
        let mut d = Doc::parse(Format::Json, text).unwrap();
        d.set(&["provider", "fcm", "name"], &json!("fcm")).unwrap();
        d.set(&["model"], &json!("fcm/fcm")).unwrap();
        let out = d.render();
        assert!(out.starts_with("{\n    // my theme\n    \"theme\": \"dark\", /* keep */\n    \"keybinds\": {\"leader\": \"ctrl+x\"},\n    \"provider\": {\n        \"fcm\": {"), "{out}");
        d.remove(&["model"]);
        d.remove(&["provider", "fcm", "name"]);
        d.remove(&["provider", "fcm"]);
        d.remove(&["provider"]);
        assert_eq!(d.render(), text);
        let tabs = "{\n\t\"a\": 1\n}";
        let mut d = Doc::parse(Format::Json, tabs).unwrap();
        d.set(&["b"], &json!(2)).unwrap();
        assert_eq!(d.render(), "{\n\t\"a\": 1,\n\t\"b\": 2\n}");
        let err = Doc::parse(Format::Json, "{\n  \"a\": 1\n  \"b\": 2\n}")
            .err()
            .unwrap();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert!(Doc::parse(Format::Json, "{'a': 1}").is_err());
    }
}
