//! `oi-tui --list-models`: the configured provider's models, or, with none configured, what
//! the usual local servers answer with.

use std::time::Duration;

use crate::config::Settings;
use crate::llm::{Client, ModelSpec, ProviderConfig, ProviderKind, RetryPolicy};

/// The local servers probed when no provider is configured.
const LOCAL_SERVERS: &[(&str, ProviderKind, &str)] = &[
    ("Ollama", ProviderKind::Ollama, "http://127.0.0.1:11434"),
    (
        "llama.cpp server",
        ProviderKind::OpenAi,
        "http://127.0.0.1:8080/v1",
    ),
    (
        "LM Studio",
        ProviderKind::OpenAi,
        "http://127.0.0.1:1234/v1",
    ),
];

/// Prints the models; returns the exit status.
pub async fn list(settings: &Settings) -> i32 {
    match settings.provider() {
        Some(provider) => configured(settings, provider).await,
        None => probe().await,
    }
}

fn client(
    provider: ProviderKind,
    base: String,
    settings: Option<&Settings>,
    quick: bool,
) -> Option<Client> {
    let config = ProviderConfig {
        spec: ModelSpec {
            provider,
            model: "(listing)".to_string(),
        },
        api_base: base,
        api_key: settings.and_then(|s| s.api_key.clone()),
        connect_timeout: if quick {
            Duration::from_millis(800)
        } else {
            settings.map_or(Duration::from_secs(10), |s| s.connect_timeout)
        },
        idle_timeout: if quick {
            Duration::from_secs(3)
        } else {
            settings.map_or(Duration::from_secs(30), |s| {
                s.idle_timeout.min(Duration::from_secs(60))
            })
        },
        retry: if quick {
            RetryPolicy {
                max_retries: 0,
                ..RetryPolicy::default()
            }
        } else {
            RetryPolicy {
                max_retries: settings.map_or(RetryPolicy::default().max_retries, |s| s.max_retries),
                ..RetryPolicy::default()
            }
        },
        max_reply_bytes: crate::llm::DEFAULT_MAX_REPLY_BYTES,
        reply_timeout: crate::llm::DEFAULT_REPLY_TIMEOUT,
    };
    match Client::new(config) {
        Ok(client) => Some(client),
        Err(e) => {
            eprintln!("oi-tui: {e}");
            None
        }
    }
}

async fn configured(settings: &Settings, provider: ProviderKind) -> i32 {
    let base = settings.api_base_for(provider);
    let Some(client) = client(provider, base.clone(), Some(settings), false) else {
        return 1;
    };
    match client.list_models().await {
        Ok(models) if models.is_empty() => {
            crate::stdout::println(&format!("{provider} at {base} offers no models."));
            0
        }
        Ok(models) => {
            for m in models {
                crate::stdout::println(&format!(
                    "{provider}/{}",
                    crate::safe_text::visible_line(&m.id)
                ));
            }
            0
        }
        Err(e) => {
            eprintln!(
                "oi-tui: {}",
                crate::safe_text::visible(&e.message.replace("for model `(listing)` ", ""))
            );
            1
        }
    }
}

/// Asks the usual local servers for their models, all at once, quickly.
pub async fn probe_local() -> Vec<Answer<'static>> {
    let lookups = LOCAL_SERVERS
        .iter()
        .map(|(name, provider, base)| async move {
            let result = match client(*provider, base.to_string(), None, true) {
                Some(client) => client.list_models().await.map_err(|e| e.message),
                None => Err("no HTTP client".to_string()),
            };
            (*name, *provider, *base, result)
        });
    futures_util::future::join_all(lookups).await
}

/// The servers probed, one line each, for messages.
pub fn probed_servers() -> Vec<String> {
    LOCAL_SERVERS
        .iter()
        .map(|(name, _, base)| format!("{name} at {base}"))
        .collect()
}

async fn probe() -> i32 {
    let answers = probe_local().await;
    let mut found = 0;
    for (name, provider, base, result) in &answers {
        if let Ok(models) = result {
            for m in models {
                found += 1;
                crate::stdout::println(&format!(
                    "{provider}/{:<40} ({name} at {base})",
                    crate::safe_text::visible_line(&m.id)
                ));
            }
            if models.is_empty() {
                crate::stdout::println(&format!("({name} at {base} answers but offers no models)"));
            }
        }
    }
    if answers.iter().any(|(_, _, _, r)| r.is_ok()) {
        if found > 0 {
            eprintln!(
                "\nUse one with --model, for example --model {}",
                first_model(&answers)
            );
        }
        return 0;
    }
    eprintln!("oi-tui: no model is configured, and no local model server answered. Probed:");
    for (name, _, base, _) in &answers {
        eprintln!("  {name:<17} {base}");
    }
    eprintln!(
        "Start one (for example `ollama serve`), or configure a provider: --model openai/NAME with OPENAI_API_KEY, --model anthropic/NAME with ANTHROPIC_API_KEY, or --api-base URL for another server."
    );
    1
}

/// What one local server answered: its name, API, base URL and models (or why not).
pub type Answer<'a> = (
    &'a str,
    ProviderKind,
    &'a str,
    Result<Vec<crate::llm::ModelInfo>, String>,
);

/// The first model any local server offers, as `provider/name`, with its base URL.
pub fn first_local_model(answers: &[Answer<'_>]) -> Option<(String, String)> {
    answers.iter().find_map(|(_, provider, base, r)| {
        r.as_ref()
            .ok()
            .and_then(|m| m.first())
            .map(|m| (format!("{provider}/{}", m.id), base.to_string()))
    })
}

fn first_model(answers: &[Answer<'_>]) -> String {
    first_local_model(answers)
        .map(|(m, _)| m)
        .unwrap_or_default()
}
