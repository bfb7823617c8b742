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
            .find(|l| l.contains(&format!(" {tool} ")))
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
    let crush: Value = serde_json::from_str(
        &std::fs::read_to_string(w.dir.join(".config/crush/crush.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(crush["providers"]["fcm"]["type"], "openai-compat");
    assert_eq!(crush["providers"]["fcm"]["models"][0]["id"], "fcm:p/m");
    let aider = std::fs::read_to_string(w.dir.join(".aider.conf.yml")).unwrap();
    assert!(
        aider.contains("openai-api-base: \"http://127.0.0.1:19280/v1\"")
            && aider.contains("model: \"openai/fcm:p/m\""),
        "{aider}"
    );
    let un = w.fcm(&["install", "crush", "--uninstall"]);
    assert_eq!(un.code, 0);
    let crush: Value = serde_json::from_str(
        &std::fs::read_to_string(w.dir.join(".config/crush/crush.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(crush, json!({}));
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
    // The variable is gone by the time the user uninstalls: fcm still cleans the right file.
    w.env.remove("CODEX_HOME");
    assert_eq!(w.fcm(&["install", "codex", "--uninstall"]).code, 0);
    let text = std::fs::read_to_string(alt.join("config.toml")).unwrap();
    assert!(!text.contains("fcm"), "{text}");
}
