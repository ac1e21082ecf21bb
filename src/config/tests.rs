//! The configuration: layers, precedence, values out of range, the sandbox and the
//! unattended defaults.

use super::*;

fn load_with(file: &str, flags: FlagSettings, env: &[(&str, &str)]) -> Result<Settings, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, file).unwrap();
    let flags = FlagSettings {
        config: Some(path),
        ..flags
    };
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    load(&flags, &|k| {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    })
}

#[test]
fn precedence_is_flags_env_profile_file_defaults() {
    let file = r#"
model = "ollama/from-file"
max_turns = 7
temperature = 0.5
[profiles.fast]
model = "ollama/from-profile"
max_turns = 3
"#;
    let s = load_with(file, FlagSettings::default(), &[]).unwrap();
    assert_eq!(s.model.unwrap().model, "from-file");
    assert_eq!(s.max_turns, 7);
    assert_eq!(s.max_tokens, None);
    assert!(s.tools);

    let profile = FlagSettings {
        profile: Some("fast".into()),
        ..FlagSettings::default()
    };
    let s = load_with(file, profile.clone(), &[]).unwrap();
    assert_eq!(s.model.unwrap().model, "from-profile");
    assert_eq!(s.max_turns, 3);
    assert_eq!(s.temperature, Some(0.5));

    let s = load_with(
        file,
        profile.clone(),
        &[("OI_TUI_MODEL", "openai/from-env")],
    )
    .unwrap();
    assert_eq!(s.model.unwrap().to_string(), "openai/from-env");

    let mut flags = profile;
    flags.settings.model = Some("anthropic/from-flag".into());
    flags.no_tools = true;
    let s = load_with(file, flags, &[("OI_TUI_MODEL", "openai/from-env")]).unwrap();
    assert_eq!(s.model.unwrap().to_string(), "anthropic/from-flag");
    assert!(!s.tools);
}

#[test]
fn keys_come_from_the_flag_then_the_providers_variable() {
    let file = "model = \"openai/x\"\napi_key = \"from-file\"\n";
    let s = load_with(
        file,
        FlagSettings::default(),
        &[("OPENAI_API_KEY", "from-env")],
    )
    .unwrap();
    assert_eq!(s.api_key.unwrap().expose(), "from-env");
    assert!(s.warnings.iter().any(|w| w.contains("clear text")));
    let s = load_with(file, FlagSettings::default(), &[]).unwrap();
    assert_eq!(s.api_key.unwrap().expose(), "from-file");
    let mut flags = FlagSettings::default();
    flags.settings.api_key = Some("from-flag".into());
    let s = load_with(file, flags, &[("OPENAI_API_KEY", "from-env")]).unwrap();
    assert_eq!(s.api_key.unwrap().expose(), "from-flag");
}

#[test]
fn malformed_files_say_where() {
    let err = load_with(
        "model = \"ollama/x\"\nmax_turns = \n",
        FlagSettings::default(),
        &[],
    )
    .unwrap_err();
    assert!(err.contains("config.toml:2:"), "{err}");
    let err = load_with("max_turns = \"many\"\n", FlagSettings::default(), &[]).unwrap_err();
    assert!(err.contains("config.toml:1:13"), "{err}");
}

#[test]
fn unknown_keys_are_warnings() {
    let s = load_with(
        "modle = \"x\"\n[profiles.a]\ncolour = 1\n",
        FlagSettings::default(),
        &[],
    )
    .unwrap();
    assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
    assert!(s.warnings[0].contains("config.toml:1: unknown key `modle`"));
    assert!(s.warnings[1].contains("[profiles.a]"));
}

#[test]
fn bad_values_are_errors() {
    assert!(
        load_with("model = \"gpt-4o\"\n", FlagSettings::default(), &[])
            .unwrap_err()
            .contains("provider/model")
    );
    assert!(
        load_with("temperature = 9.0\n", FlagSettings::default(), &[])
            .unwrap_err()
            .contains("0 to 2")
    );
    assert!(
        load_with("timeout = -1\n", FlagSettings::default(), &[])
            .unwrap_err()
            .contains("from 0.001 to")
    );
    let missing = FlagSettings {
        profile: Some("nope".into()),
        ..FlagSettings::default()
    };
    assert!(
        load_with("", missing, &[])
            .unwrap_err()
            .contains("no [profiles.*]")
    );
}

#[test]
fn a_provider_alone_is_kept_for_listing_models() {
    let s = load_with("model = \"ollama\"\n", FlagSettings::default(), &[]).unwrap();
    assert!(s.model.is_none());
    assert_eq!(s.provider(), Some(ProviderKind::Ollama));
}

#[test]
fn the_env_section_is_read_and_checked() {
    let file = "model = \"ollama/x\"\n[env]\ninherit = \"core\"\nkeep = [\"MY_TOKEN\"]\nset = { A = \"1\" }\n[profiles.bare.env]\ninherit = \"none\"\n";
    let s = load_with(file, FlagSettings::default(), &[]).unwrap();
    assert_eq!(s.env.inherit, crate::secrets::Inherit::Core);
    assert_eq!(s.env.keep, ["MY_TOKEN"]);
    assert_eq!(s.env.set.get("A").map(String::as_str), Some("1"));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let bare = FlagSettings {
        profile: Some("bare".into()),
        ..FlagSettings::default()
    };
    let s = load_with(file, bare, &[]).unwrap();
    assert_eq!(s.env.inherit, crate::secrets::Inherit::None);
    assert!(s.env.keep.is_empty());

    let err = load_with("[env]\ninherit = \"some\"\n", FlagSettings::default(), &[]).unwrap_err();
    assert!(
        err.contains("config.toml:2:") && err.contains("core"),
        "{err}"
    );
    let err = load_with("[env]\nkepp = []\n", FlagSettings::default(), &[]).unwrap_err();
    assert!(err.contains("kepp") && err.contains("keep"), "{err}");
    let err = load_with("[env]\nkeep = \"A\"\n", FlagSettings::default(), &[]).unwrap_err();
    assert!(err.contains("config.toml:2:"), "{err}");
    let err = load_with("[env.set]\n\"A=B\" = \"1\"\n", FlagSettings::default(), &[]).unwrap_err();
    assert!(err.contains("not a variable name"), "{err}");
}

#[test]
fn env_pass_lets_names_through_and_keep_still_works() {
    let file = "[env]\npass = [\"DB_PASS\", \"SSH_AUTH_SOCK\"]\nkeep = [\"MY_TOKEN\"]\n";
    let s = load_with(file, FlagSettings::default(), &[]).unwrap();
    let process = [
        ("DB_PASS", "hunter2hunter2"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
        ("MY_TOKEN", "tok-0123456789"),
        ("OTHER_PASS", "other-pass-123"),
        ("DATABASE_URL", "postgres://u:s3cret-pw@h/db"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let env = crate::secrets::kernel_env(process, &s.env, None);
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["DB_PASS", "MY_TOKEN", "SSH_AUTH_SOCK"]);

    for (bad, why) in [
        ("pass = [\"A=B\"]", "not a variable name"),
        ("pass = [\"\"]", "not a variable name"),
        ("pass = [\" DB_PASS\"]", "space"),
        ("keep = [\"A\\u0000B\"]", "not a variable name"),
    ] {
        let err = load_with(&format!("[env]\n{bad}\n"), FlagSettings::default(), &[]).unwrap_err();
        assert!(err.contains("[env] ") && err.contains(why), "{bad}: {err}");
    }
    let err = load_with("[env]\npass = \"DB_PASS\"\n", FlagSettings::default(), &[]).unwrap_err();
    assert!(err.contains("config.toml:2:"), "{err}");
}

#[test]
fn kernels_get_a_filtered_environment_and_the_redactor_knows_the_key() {
    let file = "model = \"openai/x\"\napi_key = \"sk-from-the-file-123\"\n[env]\nset = { DB_PASSWORD = \"set-password-123\", PLAIN = \"v\" }\n";
    let s = load_with(file, FlagSettings::default(), &[]).unwrap();
    let config = s
        .engine_config(crate::protocol::ApprovalMode::Ask, true)
        .unwrap();
    assert!(config.kernels.clear_env);
    let names: Vec<String> = config
        .kernels
        .env
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !crate::secrets::is_secret_name(n) || n == "DB_PASSWORD")
    );
    assert!(names.contains(&"PLAIN".to_string()));
    let cleaned = config
        .redactor
        .clean("sk-from-the-file-123 set-password-123 v");
    assert_eq!(cleaned, "[REDACTED] [REDACTED] v");
}

#[test]
fn the_sandbox_comes_from_flags_config_and_safe_mode() {
    use crate::sandbox::{Network, SandboxFile, SandboxMode};
    let s = load_with("", FlagSettings::default(), &[]).unwrap();
    assert_eq!(s.sandbox.mode, SandboxMode::WorkspaceWrite);
    assert_eq!(s.sandbox.network, Network::On);
    assert!(!s.sandbox.explicit);
    let s = load_with(
        "[sandbox]\nmode = \"read-only\"\nnetwork = \"off\"\n",
        FlagSettings::default(),
        &[],
    )
    .unwrap();
    assert_eq!(s.sandbox.mode, SandboxMode::ReadOnly);
    assert_eq!(s.sandbox.network, Network::Off);
    assert!(s.sandbox.explicit);
    let flag = FlagSettings {
        settings: FileSettings {
            sandbox: Some(SandboxFile {
                mode: Some(SandboxMode::Off),
                network: None,
            }),
            ..FileSettings::default()
        },
        ..FlagSettings::default()
    };
    let s = load_with("[sandbox]\nmode = \"read-only\"\n", flag.clone(), &[]).unwrap();
    assert_eq!(s.sandbox.mode, SandboxMode::Off);
    let safe = FlagSettings {
        safe_mode: true,
        ..FlagSettings::default()
    };
    let s = load_with("", safe, &[]).unwrap();
    assert_eq!(s.sandbox.network, Network::Off);
    assert!(s.sandbox.explicit);
    assert_eq!(s.approval_mode(), crate::protocol::ApprovalMode::Rules);
    let both = FlagSettings {
        safe_mode: true,
        ..flag
    };
    assert!(
        load_with("", both, &[])
            .unwrap_err()
            .contains("--safe-mode")
    );
    assert!(
        load_with(
            "[sandbox]\nmode = \"sometimes\"\n",
            FlagSettings::default(),
            &[]
        )
        .unwrap_err()
        .contains("sometimes")
    );
}

#[test]
fn unattended_runs_get_a_default_block_timeout_unless_one_is_set() {
    let s = load_with("model = \"ollama/x\"\n", FlagSettings::default(), &[]).unwrap();
    let ask = crate::protocol::ApprovalMode::Ask;
    let unattended = s.engine_config(ask, true).unwrap();
    assert_eq!(unattended.block_timeout, None);
    assert_eq!(
        unattended.kernels.default_timeout,
        Some(UNATTENDED_BLOCK_TIMEOUT)
    );
    assert_eq!(
        s.engine_config(ask, false).unwrap().kernels.default_timeout,
        None
    );
    let s = load_with(
        "model = \"ollama/x\"\ntimeout = 5\n",
        FlagSettings::default(),
        &[],
    )
    .unwrap();
    let set = s.engine_config(ask, true).unwrap();
    assert_eq!(set.block_timeout, Some(Duration::from_secs(5)));
}

#[test]
fn agents_md_is_on_unless_the_file_a_profile_or_the_flag_turns_it_off() {
    let ask = crate::protocol::ApprovalMode::Ask;
    let on = load_with("model = \"ollama/x\"\n", FlagSettings::default(), &[]).unwrap();
    assert!(on.agents_md);
    assert!(on.engine_config(ask, true).unwrap().agents_md);
    let file = "model = \"ollama/x\"\nagents_md = false\n[profiles.p]\nagents_md = true\n";
    let off = load_with(file, FlagSettings::default(), &[]).unwrap();
    assert!(!off.agents_md);
    assert!(!off.engine_config(ask, true).unwrap().agents_md);
    assert!(off.warnings.is_empty(), "a known key: {:?}", off.warnings);
    let profile = FlagSettings {
        profile: Some("p".into()),
        ..FlagSettings::default()
    };
    assert!(load_with(file, profile.clone(), &[]).unwrap().agents_md);
    let flag = FlagSettings {
        settings: FileSettings {
            agents_md: Some(false),
            ..FileSettings::default()
        },
        ..profile
    };
    assert!(!load_with(file, flag, &[]).unwrap().agents_md);
    let bad = load_with("agents_md = 0\n", FlagSettings::default(), &[]).unwrap_err();
    assert!(bad.contains("config.toml:1:"), "{bad}");
}

#[test]
fn vision_is_auto_unless_the_file_a_profile_or_the_flag_says_otherwise() {
    use crate::llm::vision::VisionMode;
    let ask = crate::protocol::ApprovalMode::Ask;
    let plain = load_with("model = \"ollama/x\"\n", FlagSettings::default(), &[]).unwrap();
    assert_eq!(plain.vision, VisionMode::Auto);
    let file = "model = \"ollama/x\"\nvision = \"off\"\n[profiles.p]\nvision = \"on\"\n";
    let off = load_with(file, FlagSettings::default(), &[]).unwrap();
    assert_eq!(off.vision, VisionMode::Off);
    assert_eq!(
        off.engine_config(ask, true).unwrap().vision,
        VisionMode::Off
    );
    assert!(off.warnings.is_empty(), "a known key: {:?}", off.warnings);
    let profile = FlagSettings {
        profile: Some("p".into()),
        ..FlagSettings::default()
    };
    assert_eq!(
        load_with(file, profile.clone(), &[]).unwrap().vision,
        VisionMode::On
    );
    let flag = FlagSettings {
        settings: FileSettings {
            vision: Some(VisionMode::Auto),
            ..FileSettings::default()
        },
        ..profile
    };
    assert_eq!(load_with(file, flag, &[]).unwrap().vision, VisionMode::Auto);
    let bad = load_with("vision = \"maybe\"\n", FlagSettings::default(), &[]).unwrap_err();
    assert!(bad.contains("config.toml:1:"), "{bad}");
}
