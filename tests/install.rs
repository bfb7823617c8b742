//! `fcm install`: merges into the tools' own config files, never loses a setting, undoes
//! exactly what it did.

mod support;

use serde_json::{json, Value};
use support::*;

fn world() -> World {
    let w = World::new();
    w.catalog(&[("p", "http://127.0.0.1:9/v1", None, &["m"])]);
    w
}

fn backups(dir: &std::path::Path, name: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{name}.fcm-backup-"))
        })
        .count()
}

#[test]
fn claude_code_merge_idempotence_backup_and_uninstall() {
    let w = world();
    let dir = w.dir.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("settings.json");
    let original = "{\n  \"theme\": \"dark\",\n  \"permissions\": {\"allow\": [\"Bash(ls:*)\"]},\n  \"env\": {\"ANTHROPIC_MODEL\": \"opus\", \"MY_VAR\": \"1\"}\n}\n";
    std::fs::write(&file, original).unwrap();

    let dry = w.fcm(&["install", "claude-code", "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(
        dry.stdout
            .contains("+     \"ANTHROPIC_BASE_URL\": \"http://127.0.0.1:19280\""),
        "{dry:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        original,
        "a dry run writes nothing"
    );

    let out = w.fcm(&["install", "claude-code", "--port", "19333"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("fcm serve"),
        "names the next step: {out:?}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    assert_eq!(v["permissions"]["allow"][0], "Bash(ls:*)");
    assert_eq!(v["env"]["MY_VAR"], "1");
    assert_eq!(v["env"]["ANTHROPIC_BASE_URL"], "http://127.0.0.1:19333");
    assert_eq!(v["env"]["ANTHROPIC_AUTH_TOKEN"], "fcm-local");
    assert!(v["env"].get("ANTHROPIC_API_KEY").is_none());
    for k in [
        "ANTHROPIC_MODEL",
        "ANTHROPIC_DEFAULT_OPUS_MODEL",
        "ANTHROPIC_DEFAULT_SONNET_MODEL",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    ] {
        assert_eq!(v["env"][k], "fcm", "{k}");
    }
    assert_eq!(backups(&dir, "settings.json"), 1);

    let again = w.fcm(&["install", "claude-code", "--port", "19333"]);
    assert!(again.stdout.contains("nothing changed"), "{again:?}");
    assert_eq!(backups(&dir, "settings.json"), 1, "no second backup");

    let list = w.fcm(&["install", "--list"]);
    let line = |tool: &str| {
        list.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{tool}\t")))
            .unwrap_or("")
            .to_string()
    };
    assert!(
        line("claude-code").contains("installed") && line("claude-code").contains("settings.json"),
        "{list:?}"
    );
    assert!(
        line("cursor").contains("state.vscdb") && line("cursor").contains("no config file"),
        "{list:?}"
    );
    assert!(line("codex").contains("no config file"), "{list:?}");

    let un = w.fcm(&["install", "claude-code", "--uninstall"]);
    assert_eq!(un.code, 0, "{un:?}");
    let back: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        back,
        serde_json::from_str::<Value>(original).unwrap(),
        "the user's file is as it was"
    );
}

#[test]
fn codex_toml_keeps_comments_and_layout() {
    let mut w = world();
    let codex_home = w.dir.join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    w.set_env("CODEX_HOME", codex_home.to_str().unwrap());
    let file = codex_home.join("config.toml");
    let original = "# my settings\nmodel = \"o3\" # the usual\napproval_policy = \"on-request\"\n\n[history]\npersistence = \"none\"\n";
    std::fs::write(&file, original).unwrap();
    let out = w.fcm(&["install", "codex"]);
    assert_eq!(out.code, 0, "{out:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel = \"fcm\" # the usual\n"),
        "{text}"
    );
    assert!(text.contains("approval_policy = \"on-request\""), "{text}");
    assert!(text.contains("model_provider = \"fcm\""), "{text}");
    assert!(text.contains("[model_providers.fcm]\nname = \"fcm\"\nbase_url = \"http://127.0.0.1:19280/v1\"\nwire_api = \"responses\""), "{text}");
    assert_eq!(w.fcm(&["install", "codex", "--uninstall"]).code, 0);
    let back = std::fs::read_to_string(&file).unwrap();
    assert!(
        back.starts_with("# my settings\nmodel = \"o3\" # the usual\n"),
        "{back}"
    );
    assert!(!back.contains("fcm"), "{back}");
}

#[test]
fn unparsable_files_are_never_overwritten() {
    let w = world();
    let dir = w.dir.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("settings.json");
    std::fs::write(&file, "{\"env\": {").unwrap();
    let out = w.fcm(&["install", "claude-code"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("cannot parse")
            && out.stderr.contains("settings.json")
            && out.stderr.contains("nothing was changed"),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"env\": {");
    assert_eq!(backups(&dir, "settings.json"), 0);
}

#[test]
fn json_and_yaml_tools() {
    let w = world();
    for tool in ["opencode", "crush", "aider"] {
        let out = w.fcm(&["install", tool, "--model", "fcm:p/m"]);
        assert_eq!(out.code, 0, "{tool}: {out:?}");
    }
    let oc: Value = serde_json::from_str(
        &std::fs::read_to_string(w.dir.join(".config/opencode/opencode.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(oc["provider"]["fcm"]["npm"], "@ai-sdk/openai-compatible");
    assert_eq!(
        oc["provider"]["fcm"]["options"]["baseURL"],
        "http://127.0.0.1:19280/v1"
    );
    assert_eq!(oc["model"], "fcm/fcm:p/m");
    assert_eq!(oc["small_model"], "fcm/fcm:p/m");
    assert_eq!(
        oc["provider"]["fcm"]["models"]["fcm:p/m"]["limit"],
        json!({"context": 131072, "output": 16384})
    );
    let rc = std::fs::read_to_string(w.dir.join(".config/crush/crushrc")).unwrap();
    for line in [
        "provider add fcm --type openai-compat --name fcm --base-url http://127.0.0.1:19280/v1 --api-key fcm-local",
        "model add fcm/fcm:p/m --name fcm:p/m --context-window 131072 --default-max-tokens 16384",
        "model large fcm/fcm:p/m --max-tokens 16384",
        "model small fcm/fcm:p/m --max-tokens 16384",
    ] {
        assert!(rc.lines().any(|l| l == line), "{line}\n{rc}");
    }
    let aider = std::fs::read_to_string(w.dir.join(".aider.conf.yml")).unwrap();
    for line in [
        "openai-api-base: http://127.0.0.1:19280/v1",
        "model: openai/fcm:p/m",
        "weak-model: openai/fcm:p/m",
        "editor-model: openai/fcm:p/m",
    ] {
        assert!(aider.lines().any(|l| l == line), "{line}\n{aider}");
    }
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(w.dir.join(".aider.model.metadata.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["openai/fcm:p/m"]["max_input_tokens"], 131072);
    let list = w.fcm(&["install", "--list"]);
    for tool in ["opencode", "crush", "aider"] {
        let row = list.stdout.lines().find(|l| l.contains(tool)).unwrap();
        assert!(row.contains("installed"), "{row}");
    }
    // In a home where none of them had a file, uninstalling leaves nothing behind.
    for tool in ["opencode", "crush", "aider"] {
        let out = w.fcm(&["install", tool, "--uninstall"]);
        assert_eq!(out.code, 0, "{tool}: {out:?}");
    }
    for gone in [
        ".config/opencode",
        ".config/crush",
        ".config",
        ".aider.conf.yml",
        ".aider.model.metadata.json",
    ] {
        assert!(!w.dir.join(gone).exists(), "{gone} is left");
    }
}

/// The user's own files, with comments and their own layout: an install changes only what
/// it sets, an uninstall gives back the same bytes.
#[test]
fn users_files_keep_their_comments_and_come_back_to_the_byte() {
    let w = world();
    let oc_dir = w.dir.join(".config/opencode");
    std::fs::create_dir_all(&oc_dir).unwrap();
    // OpenCode reads opencode.jsonc after opencode.json: the .jsonc one is the one to write.
    let json = "{\n  \"theme\": \"system\"\n}\n";
    let jsonc = "{\n    // my setup\n    \"theme\": \"tokyonight\",\n    \"enabled_providers\": [\"anthropic\"], /* only this */\n    \"model\": \"anthropic/claude-sonnet-4-5\",\n    \"small_model\": \"anthropic/claude-haiku-4-5\",\n}\n";
    std::fs::write(oc_dir.join("opencode.json"), json).unwrap();
    std::fs::write(oc_dir.join("opencode.jsonc"), jsonc).unwrap();
    let aider = "# my aider settings\nmodel: gpt-4o   # the usual\ndark-mode: true\n\nauto-commits: false\n";
    std::fs::write(w.dir.join(".aider.conf.yml"), aider).unwrap();
    let crush_dir = w.dir.join(".config/crush");
    std::fs::create_dir_all(&crush_dir).unwrap();
    let crushrc = "# my crush\noption debug true\nprovider add groq --api-key \"$GROQ_API_KEY\"";
    std::fs::write(crush_dir.join("crushrc"), crushrc).unwrap();
    let state_dir = w.dir.join(".local/share/crush");
    std::fs::create_dir_all(&state_dir).unwrap();
    let state = "{\"models\":{\"large\":{\"model\":\"llama-3.3-70b\",\"provider\":\"groq\"}},\"recent_models\":{}}\n";
    std::fs::write(state_dir.join("crush.json"), state).unwrap();

    let dry = w.fcm(&["install", "crush", "--dry-run"]);
    assert!(dry.stdout.contains("--default-max-tokens 16384"), "{dry:?}");
    assert!(
        !dry.stdout.contains("fcm-local"),
        "the key is masked: {dry:?}"
    );
    for tool in ["opencode", "aider", "crush"] {
        let out = w.fcm(&["install", tool]);
        assert_eq!(out.code, 0, "{tool}: {out:?}");
    }
    assert_eq!(
        std::fs::read_to_string(oc_dir.join("opencode.json")).unwrap(),
        json,
        "untouched"
    );
    let written = std::fs::read_to_string(oc_dir.join("opencode.jsonc")).unwrap();
    assert!(
        written.starts_with("{\n    // my setup\n    \"theme\": \"tokyonight\",\n    \"enabled_providers\": [\"anthropic\", \"fcm\"], /* only this */\n    \"model\": \"fcm/fcm\",\n    \"small_model\": \"fcm/fcm\",\n"),
        "{written}"
    );
    let written = std::fs::read_to_string(w.dir.join(".aider.conf.yml")).unwrap();
    assert!(
        written.starts_with("# my aider settings\nmodel: openai/fcm   # the usual\ndark-mode: true\n\nauto-commits: false\n"),
        "{written}"
    );
    let written = std::fs::read_to_string(crush_dir.join("crushrc")).unwrap();
    assert!(
        written.starts_with(&format!("{crushrc}\n\n# fcm: begin")),
        "{written}"
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(state_dir.join("crush.json")).unwrap())
            .unwrap();
    assert_eq!(
        written["models"]["large"],
        json!({"model": "fcm", "provider": "fcm", "max_tokens": 16384})
    );
    assert_eq!(written["models"]["small"]["provider"], "fcm");
    for tool in ["opencode", "aider", "crush"] {
        let again = w.fcm(&["install", tool]);
        assert!(
            again.stdout.contains("nothing changed"),
            "{tool}: {again:?}"
        );
        let out = w.fcm(&["install", tool, "--uninstall"]);
        assert_eq!(out.code, 0, "{tool}: {out:?}");
    }
    assert_eq!(
        std::fs::read_to_string(oc_dir.join("opencode.jsonc")).unwrap(),
        jsonc
    );
    assert_eq!(
        std::fs::read_to_string(w.dir.join(".aider.conf.yml")).unwrap(),
        aider
    );
    assert_eq!(
        std::fs::read_to_string(crush_dir.join("crushrc")).unwrap(),
        crushrc
    );
    assert_eq!(
        std::fs::read_to_string(state_dir.join("crush.json")).unwrap(),
        state
    );
}

/// Settings that win over the ones fcm writes: an install refuses and says where, and the
/// list says the tool will not use fcm.
#[test]
fn settings_that_would_win_over_fcms_refuse_the_install() {
    let mut w = world();
    let project = w.dir.join("work/app");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("opencode.json"),
        r#"{"model": "anthropic/claude-sonnet-4-5"}"#,
    )
    .unwrap();
    std::fs::write(project.join(".aider.conf.yml"), "weak-model: gpt-4o-mini\n").unwrap();
    std::fs::write(project.join(".crushrc"), "model large groq/llama-3.3-70b\n").unwrap();
    for (tool, said) in [
        (
            "opencode",
            "opencode.json sets model \"anthropic/claude-sonnet-4-5\"",
        ),
        ("aider", ".aider.conf.yml sets weak-model \"gpt-4o-mini\""),
        ("crush", ".crushrc sets model large groq/llama-3.3-70b"),
    ] {
        // From a folder below the project's root too.
        let out = w.fcm_in(&project.join("src"), &["install", tool]);
        assert_eq!(out.code, 1, "{tool}: {out:?}");
        assert!(
            out.stderr.contains(said) && out.stderr.contains("nothing was changed"),
            "{tool}: {out:?}"
        );
        let list = w.fcm_in(&project, &["install", "--list"]);
        assert!(
            !list
                .stdout
                .lines()
                .any(|l| l.starts_with(&format!("{tool}\t")) && l.ends_with("\tinstalled")),
            "{list:?}"
        );
    }
    assert!(!w.dir.join(".aider.conf.yml").exists());
    // Installed elsewhere, the same project makes the list say it is not used there.
    assert_eq!(w.fcm(&["install", "opencode"]).code, 0);
    let list = w.fcm_in(&project, &["install", "--list"]);
    let row = list
        .stdout
        .lines()
        .find(|l| l.contains("opencode"))
        .unwrap();
    assert!(row.contains("not used"), "{row}");
    w.set_env("AIDER_MODEL", "gpt-4o");
    let out = w.fcm(&["install", "aider"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("AIDER_MODEL=gpt-4o"), "{out:?}");
}

#[test]
fn usage_errors() {
    let w = world();
    let out = w.fcm(&["install", "vim"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("claude-code, codex"), "{out:?}");
    assert_eq!(w.fcm(&["install"]).code, 2);
    assert_eq!(w.fcm(&["install", "codex", "--model", "nope/x"]).code, 2);
}

#[test]
fn cursor_needs_a_url_a_stopped_cursor_and_gets_a_token() {
    use rusqlite::Connection;
    let w = world();
    // Where this system's Cursor keeps it (the world sets none of the table's variables).
    use fcm::install::paths::{resolve, Os};
    let db = resolve("cursor", Os::current(), &w.dir, |_| None);
    let dir = db.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let key = fcm::install::cursor::APPLICATION_USER_KEY;
    {
        let c = Connection::open(&db).unwrap();
        c.execute(
            "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)",
            [],
        )
        .unwrap();
        c.execute(
            "INSERT INTO ItemTable (key, value) VALUES (?1, ?2)",
            [key, r#"{"theme":"dark"}"#],
        )
        .unwrap();
    }
    let read = || {
        let c = Connection::open(&db).unwrap();
        let s: String = c
            .query_row("SELECT value FROM ItemTable WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .unwrap();
        serde_json::from_str::<Value>(&s).unwrap()
    };

    let out = w.fcm(&["install", "cursor"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("tunnel"), "{out:?}");
    assert_eq!(
        read(),
        json!({"theme": "dark"}),
        "nothing written without --url"
    );

    // A running Cursor (any process named cursor) rewrites the database on exit: refuse.
    #[cfg(unix)]
    {
        let fake_cursor = w.dir.join("cursor");
        std::fs::copy("/bin/sleep", &fake_cursor).unwrap();
        let mut running = std::process::Command::new(&fake_cursor)
            .arg("30")
            .spawn()
            .unwrap();
        let out = w.fcm(&["install", "cursor", "--url", "https://tunnel.example"]);
        running.kill().unwrap();
        running.wait().unwrap();
        assert_eq!(out.code, 1, "{out:?}");
        assert!(out.stderr.contains("Cursor is running"), "{out:?}");
        assert_eq!(read(), json!({"theme": "dark"}));
    }

    let out = w.fcm(&["install", "cursor", "--url", "https://tunnel.example"]);
    assert_eq!(out.code, 0, "{out:?}");
    let s = read();
    assert_eq!(
        (s["openAIBaseUrl"].as_str(), s["useOpenAIKey"].as_bool()),
        (Some("https://tunnel.example/v1"), Some(true))
    );
    assert_eq!(s["aiSettings"]["userAddedModels"], json!(["fcm"]));
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("config.json")).unwrap())
            .unwrap();
    let token = config["serve"]["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("fcm-") && token.len() > 20);
    let c = Connection::open(&db).unwrap();
    let sent: String = c
        .query_row(
            "SELECT value FROM ItemTable WHERE key = 'cursorAuth/openAIKey'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(sent, token, "Cursor's key is fcm's access token");
    assert!(
        !out.stdout.contains(&token),
        "the token is not printed whole"
    );
    assert_eq!(backups(&dir, "state.vscdb"), 1);

    assert_eq!(w.fcm(&["install", "cursor", "--uninstall"]).code, 0);
    assert_eq!(read(), json!({"theme": "dark"}));
}

#[test]
fn uninstall_follows_the_file_it_wrote_and_codex_sends_the_token() {
    let mut w = world();
    let alt = w.dir.join("alt-codex");
    w.set_env("CODEX_HOME", alt.to_str().unwrap());
    w.set_env("FCM_TOKEN", "tok-abcdef123456");
    assert_eq!(w.fcm(&["install", "codex"]).code, 0);
    let text = std::fs::read_to_string(alt.join("config.toml")).unwrap();
    assert!(
        text.contains("experimental_bearer_token = \"tok-abcdef123456\""),
        "{text}"
    );
    // The variable is gone by the time the user uninstalls: fcm still cleans the right file
    // (it made the file and its folder: both go).
    w.env.remove("CODEX_HOME");
    assert_eq!(w.fcm(&["install", "codex", "--uninstall"]).code, 0);
    assert!(!alt.exists());
}

/// Crush cannot be installed where the tests run (its npm package downloads its binary from
/// GitHub), so what fcm writes for it is held to Crush's published reference: the commands
/// and flags of its `crushrc` (docs/config in its repository), and for its state file the
/// `SelectedModel` of its JSON schema (`model` and `provider` required, `max_tokens` an
/// integer up to 200,000, nothing else than the schema's properties).
#[test]
fn crush_config_matches_its_published_reference() {
    let w = world();
    let state_dir = w.dir.join(".local/share/crush");
    std::fs::create_dir_all(&state_dir).unwrap();
    std::fs::write(
        state_dir.join("crush.json"),
        r#"{"models": {"large": {"model": "x", "provider": "groq"}}}"#,
    )
    .unwrap();
    assert_eq!(w.fcm(&["install", "crush", "--model", "fcm:p/m"]).code, 0);
    // command → its positional arguments and the flags it takes, with the kind of value.
    type Flags = &'static [(&'static str, &'static str)];
    let reference: &[(&str, usize, Flags)] = &[
        (
            "provider add",
            1,
            &[
                ("--type", "openai|openai-compat|anthropic|ollama"),
                ("--name", "string"),
                ("--base-url", "url"),
                ("--api-key", "string"),
            ],
        ),
        (
            "model add",
            1,
            &[
                ("--name", "string"),
                ("--context-window", "int"),
                ("--default-max-tokens", "int"),
            ],
        ),
        ("model large", 1, &[("--max-tokens", "int")]),
        ("model small", 1, &[("--max-tokens", "int")]),
    ];
    let rc = std::fs::read_to_string(w.dir.join(".config/crush/crushrc")).unwrap();
    let lines: Vec<&str> = rc
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(lines.len(), 4, "{rc}");
    let mut seen = Vec::new();
    for line in &lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let command = format!("{} {}", words[0], words[1]);
        let (_, positional, flags) = reference
            .iter()
            .find(|(c, _, _)| *c == command)
            .unwrap_or_else(|| panic!("{command} is not a crushrc command: {line}"));
        let rest = &words[2..];
        assert!(
            rest.len() > *positional && !rest[0].starts_with("--"),
            "{line}"
        );
        let reference_ok = rest[0]
            .split_once('/')
            .is_some_and(|(p, id)| p == "fcm" && id == "fcm:p/m");
        assert!(
            command == "provider add" && rest[0] == "fcm" || reference_ok,
            "{line}"
        );
        let mut pairs = rest[*positional..].chunks(2);
        for pair in &mut pairs {
            let [flag, value] = pair else {
                panic!("{line}: a flag without its value")
            };
            let (_, kind) = flags
                .iter()
                .find(|(f, _)| f == flag)
                .unwrap_or_else(|| panic!("{line}: {flag} is not a flag of {command}"));
            let value = value.trim_matches('\'');
            match *kind {
                "int" => assert!(value.parse::<u32>().is_ok(), "{line}: {flag} {value}"),
                "url" => assert!(value.starts_with("http://127.0.0.1:"), "{line}"),
                "string" => assert!(!value.is_empty(), "{line}"),
                kinds => assert!(
                    kinds.split('|').any(|k| k == value),
                    "{line}: {flag} {value}"
                ),
            }
        }
        seen.push(command);
    }
    assert_eq!(
        seen,
        ["provider add", "model add", "model large", "model small"]
    );
    // The state file's model slots, as its schema's SelectedModel.
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(state_dir.join("crush.json")).unwrap())
            .unwrap();
    let properties = [
        "model",
        "provider",
        "reasoning_effort",
        "think",
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "frequency_penalty",
        "presence_penalty",
        "provider_options",
    ];
    for slot in ["large", "small"] {
        let m = state["models"][slot].as_object().unwrap();
        assert!(
            m["model"].is_string() && m["provider"] == "fcm",
            "{slot}: {m:?}"
        );
        assert!(
            m.keys().all(|k| properties.contains(&k.as_str())),
            "{slot}: {m:?}"
        );
        assert!(m["max_tokens"].as_u64().is_some_and(|n| n <= 200_000));
    }
}
