//! Config files edited in place, in their own format: JSON (key order kept), TOML (through
//! toml_edit, comments and layout kept) and the flat YAML of `.aider.conf.yml`. Each can
//! read, set and remove a value at a key path, so an install and its uninstall are the same
//! code whatever the format. Pure: text in, text out.

use serde_json::json;
use serde_json::{Map, Value};
use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike};

/// Why a file cannot be read as its format, or a value cannot be set in it. The text says
/// what is wrong and where; the caller adds which file and that nothing was changed.
#[derive(Debug)]
pub(crate) enum DocError {
    /// Not valid JSON.
    Json(serde_json::Error),
    /// Valid JSON, but not an object of settings.
    NotAnObject,
    /// Not valid TOML.
    Toml(toml_edit::TomlError),
    /// A line (1-based) of a YAML file that is not `key: value`.
    YamlLine(usize),
    /// A parent key (dotted) holds a plain value where fcm needs a table of settings.
    NotATable(String),
    /// The key (dotted) holds a table where fcm would write a value.
    IsATable(String),
}

impl std::fmt::Display for DocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DocError::Json(e) => write!(f, "{e}"),
            DocError::NotAnObject => f.write_str("the top level is not a JSON object"),
            DocError::Toml(e) => f.write_str(e.to_string().trim()),
            DocError::YamlLine(n) => write!(f, "line {n}: expected `key: value`"),
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
    Json(Value),
    Toml(DocumentMut),
    Yaml(Vec<String>),
}

/// File formats fcm writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Toml,
    Yaml,
}

impl Doc {
    /// Parses `text` (empty text is an empty document). An error says what is wrong.
    pub(crate) fn parse(format: Format, text: &str) -> Result<Doc, DocError> {
        match format {
            Format::Json if text.trim().is_empty() => Ok(Doc::Json(Value::Object(Map::new()))),
            Format::Json => match serde_json::from_str::<Value>(text) {
                Ok(v @ Value::Object(_)) => Ok(Doc::Json(v)),
                Ok(_) => Err(DocError::NotAnObject),
                Err(e) => Err(DocError::Json(e)),
            },
            Format::Toml => text
                .parse::<DocumentMut>()
                .map(Doc::Toml)
                .map_err(DocError::Toml),
            Format::Yaml => {
                for (i, line) in text.lines().enumerate() {
                    let t = line.trim();
                    if !t.is_empty()
                        && !t.starts_with('#')
                        && !line.starts_with([' ', '\t', '-'])
                        && !t.contains(':')
                    {
                        return Err(DocError::YamlLine(i + 1));
                    }
                }
                Ok(Doc::Yaml(text.lines().map(str::to_string).collect()))
            }
        }
    }

    pub(crate) fn get(&self, path: &[&str]) -> Option<Value> {
        match self {
            Doc::Json(v) => path.iter().try_fold(v, |v, k| v.get(*k)).cloned(),
            Doc::Toml(d) => {
                let mut item = d.as_item();
                for k in path {
                    item = item.get(k)?;
                }
                toml_to_json(item)
            }
            Doc::Yaml(lines) => {
                let key = path.first()?;
                lines
                    .iter()
                    .find_map(|l| yaml_value(l, key))
                    .map(Value::String)
            }
        }
    }

    /// The value to record as "what was there before": for YAML the raw text after the key
    /// (quotes and comment included), so an uninstall restores the line word for word.
    pub(crate) fn previous(&self, path: &[&str]) -> Option<Value> {
        match self {
            Doc::Yaml(lines) => lines
                .iter()
                .find_map(|l| yaml_raw(l, path[0]))
                .map(|raw| json!({ YAML_RAW: raw })),
            _ => self.get(path),
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
                let mut v = root;
                for (i, k) in parents.iter().enumerate() {
                    let obj = v
                        .as_object_mut()
                        .ok_or_else(|| not_a_table(i.saturating_sub(1)))?;
                    match obj.get(*k) {
                        None => {
                            obj.insert(k.to_string(), Value::Object(Map::new()));
                            created.push(path[..=i].iter().map(|s| s.to_string()).collect());
                        }
                        Some(Value::Object(_)) => {}
                        Some(_) => return Err(not_a_table(i)),
                    }
                    v = obj.get_mut(*k).expect("present");
                }
                v.as_object_mut()
                    .ok_or(DocError::NotAnObject)?
                    .insert(last.to_string(), value.clone());
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
            Doc::Yaml(lines) => {
                let key = path[0];
                let line = match value.get(YAML_RAW).and_then(Value::as_str) {
                    Some(raw) => format!("{key}:{raw}"),
                    None => format!("{key}: {}", yaml_scalar(value)),
                };
                match lines.iter().position(|l| yaml_raw(l, key).is_some()) {
                    Some(i) => lines[i] = line,
                    None => lines.push(line),
                }
            }
        }
        Ok(created)
    }

    pub(crate) fn remove(&mut self, path: &[&str]) {
        match self {
            Doc::Json(root) => {
                let parent = path[..path.len() - 1]
                    .iter()
                    .try_fold(&mut *root, |v, k| v.get_mut(*k));
                if let Some(obj) = parent.and_then(Value::as_object_mut) {
                    obj.shift_remove(path[path.len() - 1]);
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
            Doc::Yaml(lines) => lines.retain(|l| yaml_raw(l, path[0]).is_none()),
        }
    }

    /// Whether the object or table at `path` exists and is empty.
    pub(crate) fn is_empty_at(&self, path: &[&str]) -> bool {
        match self {
            Doc::Json(_) => self
                .get(path)
                .is_some_and(|v| v.as_object().is_some_and(Map::is_empty)),
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
            Doc::Yaml(_) => false,
        }
    }

    pub(crate) fn render(&self) -> String {
        match self {
            Doc::Json(v) => format!(
                "{}\n",
                serde_json::to_string_pretty(v).expect("JSON values serialise")
            ),
            Doc::Toml(d) => d.to_string(),
            Doc::Yaml(lines) if lines.is_empty() => String::new(),
            Doc::Yaml(lines) => format!("{}\n", lines.join("\n")),
        }
    }
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

/// Marks a recorded YAML value as raw line text to put back as it was.
const YAML_RAW: &str = "yamlRaw";

/// Everything after `key:` on a top-level line of that key.
fn yaml_raw<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.strip_prefix(key)?
        .trim_start_matches([' ', '\t'])
        .strip_prefix(':')
}

/// The value of a top-level `key: value` line: quoted strings unquoted (a `#` inside quotes
/// is text), an unquoted value ends at a ` #` comment.
fn yaml_value(line: &str, key: &str) -> Option<String> {
    let rest = yaml_raw(line, key)?.trim_start();
    let mut chars = rest.chars();
    match chars.next() {
        Some('"') => {
            let mut out = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.extend(chars.next()),
                    '"' => return Some(out),
                    c => out.push(c),
                }
            }
            Some(out)
        }
        Some('\'') => {
            let inner = &rest[1..];
            let end = inner.find('\'').unwrap_or(inner.len());
            Some(inner[..end].to_string())
        }
        _ => Some(rest.split(" #").next().unwrap_or("").trim().to_string()),
    }
}

fn yaml_scalar(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
        other => other.to_string(),
    }
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
        let mut d = Doc::parse(
            Format::Yaml,
            "model: \"gpt # 4o\"   # my favourite\nkey: 'a:b'\n",
        )
        .unwrap();
        assert_eq!(d.get(&["model"]), Some(json!("gpt # 4o")));
        assert_eq!(d.get(&["key"]), Some(json!("a:b")));
        let before = d.previous(&["model"]).unwrap();
        d.set(&["model"], &json!("openai/fcm")).unwrap();
        d.set(&["model"], &before).unwrap();
        assert_eq!(
            d.render(),
            "model: \"gpt # 4o\"   # my favourite\nkey: 'a:b'\n"
        );
    }

    #[test]
    fn flat_yaml() {
        let mut d = Doc::parse(Format::Yaml, "# aider\nmodel: gpt-4o\ndark-mode: true\n").unwrap();
        assert_eq!(d.get(&["model"]), Some(json!("gpt-4o")));
        d.set(&["model"], &json!("openai/fcm")).unwrap();
        d.set(&["openai-api-base"], &json!("http://127.0.0.1:19280/v1"))
            .unwrap();
        assert_eq!(d.render(), "# aider\nmodel: \"openai/fcm\"\ndark-mode: true\nopenai-api-base: \"http://127.0.0.1:19280/v1\"\n");
        d.remove(&["openai-api-base"]);
        assert_eq!(d.get(&["openai-api-base"]), None);
        assert!(Doc::parse(Format::Yaml, "just words\n").is_err());
    }
}
