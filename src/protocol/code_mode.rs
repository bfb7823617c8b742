//! Codex's code mode for chat models.
//!
//! For some model names Codex offers one freeform tool, `exec`, that runs JavaScript, and
//! declares its real tools (`apply_patch`, `exec_command`, ...) only inside `exec`'s
//! description, as TypeScript methods of a global `tools` object. Few chat models write that
//! JavaScript. fcm reads the declarations, offers each nested tool as a chat function of its
//! own, and hands a call of one back to Codex as the `exec` script that makes it:
//! `text(await tools["exec_command"]({"cmd":"ls"}));`. When Codex sends that call back in
//! the history, the script is read back into the call the model made, so the model sees its
//! own call. Pure: text in, values out.

use serde_json::{json, Map, Value};

use super::one_string;

/// The name of Codex's code-mode tool.
pub(crate) const EXEC: &str = "exec";

/// A tool declared inside `exec`'s description.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Nested {
    pub name: String,
    /// Whether the tool takes one string (`apply_patch(input: string)`) rather than an
    /// object of arguments.
    pub string_input: bool,
    /// The chat function offered for it.
    pub function: Value,
}

/// The tools `exec`'s description declares, each as a chat function: its section's prose
/// and TypeScript declaration as the description, the declared fields as parameters.
pub(crate) fn nested(description: &str) -> Vec<Nested> {
    let mut out = Vec::new();
    let mut lines = description.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(name) = section_name(line) else {
            continue;
        };
        let mut prose = Vec::new();
        let mut declaration = Vec::new();
        let mut in_code = false;
        while let Some(next) = lines.peek() {
            if section_name(next).is_some() {
                break;
            }
            let next = lines.next().unwrap_or_default();
            if next.trim_start().starts_with("```") {
                in_code = !in_code;
            } else if in_code {
                declaration.push(next);
            } else if next.trim() != "exec tool declaration:" {
                prose.push(next);
            }
        }
        let declaration = declaration.join("\n");
        if let Some(tool) = declared(name, prose.join("\n").trim(), &declaration) {
            out.push(tool);
        }
    }
    out
}

/// `apply_patch` from a "### `apply_patch`" heading.
fn section_name(line: &str) -> Option<&str> {
    let name = line.strip_prefix("### `")?.strip_suffix('`')?;
    (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
}

/// The chat function for one declared tool; `None` when the declaration does not declare
/// it as a method.
fn declared(name: &str, prose: &str, declaration: &str) -> Option<Nested> {
    let signature = &declaration[declaration.find(&format!("{name}("))? + name.len() + 1..];
    let string_input = signature
        .split(')')
        .next()
        .is_some_and(|args| args.contains(": string") && !args.contains('{'));
    let description = format!("{prose}\n\nDeclared as:\n{}", declaration.trim());
    let function = if string_input {
        one_string::function(name, &description)
    } else {
        let parameters = if signature.starts_with(')') {
            json!({"type": "object", "properties": {}})
        } else {
            fields(signature)
        };
        json!({"type": "function", "function": {
            "name": name, "description": description, "parameters": parameters}})
    };
    Some(Nested {
        name: name.to_string(),
        string_input,
        function,
    })
}

/// The fields of `args: { ... }` as a JSON schema: `// comments` before a field are its
/// description, `?` makes it optional, and plain types (string, number, boolean, arrays of
/// them, string literal unions) are typed; anything else is left open.
fn fields(signature: &str) -> Value {
    let Some(open) = signature.find('{') else {
        return json!({"type": "object"});
    };
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut comment = Vec::new();
    let mut depth = 0usize;
    for line in signature[open + 1..].lines() {
        let trimmed = line.trim();
        if depth > 0 {
            depth =
                (depth + trimmed.matches('{').count()).saturating_sub(trimmed.matches('}').count());
            continue;
        }
        if trimmed.starts_with('}') {
            break;
        }
        if let Some(text) = trimmed.strip_prefix("//") {
            comment.push(text.trim().to_string());
            continue;
        }
        let Some((field, kind)) = trimmed.split_once(':') else {
            continue;
        };
        let (field, optional) = match field.trim().strip_suffix('?') {
            Some(f) => (f, true),
            None => (field.trim(), false),
        };
        if field.is_empty() || !field.chars().all(|c| c.is_alphanumeric() || c == '_') {
            comment.clear();
            continue;
        }
        let kind = kind.trim().trim_end_matches(';').trim();
        let opens = kind.matches('{').count();
        let closes = kind.matches('}').count();
        depth = opens.saturating_sub(closes);
        let mut schema = schema_of(kind);
        if !comment.is_empty() {
            schema["description"] = json!(comment.join(" "));
        }
        comment.clear();
        properties.insert(field.to_string(), schema);
        if !optional {
            required.push(json!(field));
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// A JSON schema for a TypeScript type, as far as a plain one says.
fn schema_of(kind: &str) -> Value {
    match kind {
        "string" => json!({"type": "string"}),
        "number" => json!({"type": "number"}),
        "boolean" => json!({"type": "boolean"}),
        "Array<string>" | "string[]" => json!({"type": "array", "items": {"type": "string"}}),
        "Array<number>" | "number[]" => json!({"type": "array", "items": {"type": "number"}}),
        _ if kind.starts_with('{') => json!({"type": "object"}),
        _ if kind.starts_with("Array<") || kind.ends_with("[]") => json!({"type": "array"}),
        _ => {
            let literals: Option<Vec<Value>> = kind
                .split('|')
                .map(|s| {
                    let s = s.trim();
                    s.strip_prefix('"')
                        .and_then(|s| s.strip_suffix('"'))
                        .map(|s| json!(s))
                })
                .collect();
            match literals {
                Some(values) if !values.is_empty() => json!({"type": "string", "enum": values}),
                _ => json!({}),
            }
        }
    }
}

/// The `exec` script that makes a model's call of a nested tool and prints its result.
pub(crate) fn script(tool: &Nested, arguments: &str) -> String {
    let argument = if tool.string_input {
        Value::String(one_string::input_of(arguments))
    } else {
        match serde_json::from_str::<Value>(arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({}),
        }
    };
    format!(
        "{PREFIX}{}]({argument}));",
        Value::String(tool.name.clone())
    )
}

/// How every script fcm writes begins: a method of `tools` by its name, awaited, printed.
const PREFIX: &str = "text(await tools[";

/// The call a script of [`script`]'s making makes: the tool's name and its arguments as the
/// model sent them (`{"input": ...}` for a string). `None` for any other script.
pub(crate) fn unscript(input: &str) -> Option<(String, String)> {
    let rest = input.strip_prefix(PREFIX)?.strip_suffix("));")?;
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    let name = match stream.next()? {
        Ok(Value::String(name)) => name,
        _ => return None,
    };
    let rest = rest[stream.byte_offset()..].strip_prefix("](")?;
    let arguments = match serde_json::from_str::<Value>(rest).ok()? {
        Value::String(s) => one_string::arguments_of(&s),
        v @ Value::Object(_) => v.to_string(),
        _ => return None,
    };
    Some((name, arguments))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESCRIPTION: &str = "Run JavaScript code to orchestrate/compose tool calls
- All nested tools are available on the global `tools` object.

Shared MCP Types:
```ts
type Role = \"user\" | \"assistant\";
```

### `apply_patch`
The `apply_patch` tool can be used to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.

exec tool declaration:
```ts
declare const tools: { apply_patch(input: string): Promise<unknown>; };
```

### `exec_command`
Runs a command in a PTY, returning output or a session ID for ongoing interaction.

exec tool declaration:
```ts
declare const tools: { exec_command(args: {
  // Shell command to execute.
  cmd: string;
  // Request login-shell startup. Omit to inherit.
  login?: boolean;
  // Reusable approval prefix.
  prefix_rule?: Array<string>;
  sandbox_permissions?: \"use_default\" | \"require_escalated\";
  env?: {
    name: string;
  };
  yield_time_ms?: number;
}): Promise<{ output: string; }>; };
```

### `list_agents`
Lists agents.

exec tool declaration:
```ts
declare const tools: { list_agents(): Promise<unknown>; };
```
";

    #[test]
    fn declared_tools_become_chat_functions() {
        let tools = nested(DESCRIPTION);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["apply_patch", "exec_command", "list_agents"]);
        let patch = &tools[0];
        assert!(patch.string_input);
        assert_eq!(
            patch.function["function"]["parameters"]["required"],
            json!(["input"])
        );
        let d = patch.function["function"]["description"].as_str().unwrap();
        assert!(
            d.starts_with("The `apply_patch` tool can be used")
                && d.contains("apply_patch(input: string)")
        );
        let exec = &tools[1];
        assert!(!exec.string_input);
        let p = &exec.function["function"]["parameters"];
        assert_eq!(p["required"], json!(["cmd"]));
        assert_eq!(
            p["properties"]["cmd"],
            json!({"type": "string", "description": "Shell command to execute."})
        );
        assert_eq!(p["properties"]["login"]["type"], "boolean");
        assert_eq!(p["properties"]["prefix_rule"]["items"]["type"], "string");
        assert_eq!(
            p["properties"]["sandbox_permissions"]["enum"],
            json!(["use_default", "require_escalated"])
        );
        // A nested object type is one open field; its own fields are not the tool's.
        assert_eq!(p["properties"]["env"]["type"], "object");
        assert!(p["properties"].get("name").is_none());
        assert_eq!(p["properties"]["yield_time_ms"]["type"], "number");
        assert_eq!(
            tools[2].function["function"]["parameters"],
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn a_call_becomes_a_script_and_the_script_the_call() {
        let tools = nested(DESCRIPTION);
        let patch = "*** Begin Patch\n*** Add File: a \"b\".txt\n+x\n*** End Patch\n";
        let args = one_string::arguments_of(patch);
        let s = script(&tools[0], &args);
        assert_eq!(
            s,
            format!("text(await tools[\"apply_patch\"]({}));", json!(patch))
        );
        assert_eq!(unscript(&s), Some(("apply_patch".to_string(), args)));
        let s = script(&tools[1], r#"{"cmd":"ls -la"}"#);
        assert_eq!(s, r#"text(await tools["exec_command"]({"cmd":"ls -la"}));"#);
        assert_eq!(
            unscript(&s),
            Some((
                "exec_command".to_string(),
                r#"{"cmd":"ls -la"}"#.to_string()
            ))
        );
        // A model's own script is left as it is.
        assert_eq!(
            unscript("const r = await tools.exec_command({cmd: 'ls'});"),
            None
        );
        assert_eq!(unscript("text(await tools[\"x\"](1));"), None);
    }

    #[test]
    fn descriptions_without_declarations_declare_nothing() {
        assert!(nested("Runs JavaScript.").is_empty());
        assert!(nested("### `broken`\nno declaration here").is_empty());
    }
}
