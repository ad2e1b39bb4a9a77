//! `agentd server`: the conversation server (docs/conversations.md): agents as a service, with a
//! REST API, live events and a web page. Prints `agentd server listening on http://ADDR` on
//! stdout once it answers, and on stderr the page's address (with the key in its fragment when
//! the key was generated); stops on SIGTERM or Ctrl-C, detaching every run (the next start
//! resumes those that were running).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentd::{
    AgentRequest, AnalyzerKind, MakeAgent, RemoteApiConfig, RuntimeConfig, RuntimeKind,
    ServerConfig, ToolCalling,
};
use anyhow::Context;
use clap::Args;

use super::{USAGE, set, stop_signal};

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address to listen on (port 0 picks a free one; the bound address is printed).
    #[arg(long, env = "AGENTD_SERVER_LISTEN", default_value = "127.0.0.1:3030")]
    listen: SocketAddr,
    /// A key callers must send (repeatable; AGENTD_SERVER_API_KEYS takes several,
    /// comma-separated). Without one, a key is generated and printed with the page's address.
    #[arg(
        long = "api-key",
        env = "AGENTD_SERVER_API_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    api_keys: Vec<String>,
    /// Where conversations are kept (default: $XDG_STATE_HOME/agentd/server).
    #[arg(long, env = "AGENTD_SERVER_DATA", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Settings file (TOML: [llm], [agent], [condenser], [docker], [mcp]...); flags and
    /// environment variables override it.
    #[arg(long, env = "AGENTD_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// The CodeAct agent's default model (a conversation may choose another).
    #[arg(long, env = "LLM_MODEL")]
    model: Option<String>,
    /// The model's OpenAI-compatible endpoint (`.../v1`; default OpenAI's).
    #[arg(long, env = "LLM_BASE_URL", value_name = "URL")]
    base_url: Option<String>,
    /// The endpoint's API key.
    #[arg(long, env = "LLM_API_KEY", hide_env_values = true)]
    llm_api_key: Option<String>,
    /// Tool calling: native or prompted; default by model name.
    #[arg(long, value_enum)]
    tool_calling: Option<ToolCalling>,
    /// Where sandboxes run unless a conversation says otherwise.
    #[arg(long, env = "AGENTD_RUNTIME", value_enum)]
    runtime: Option<RuntimeKind>,
    /// The sandboxd binary (local runtime, and for images).
    #[arg(long = "sandboxd", env = "AGENTD_SANDBOXD_BIN", value_name = "PATH")]
    sandboxd: Option<PathBuf>,
    /// Docker runtime: the sandbox or base image.
    #[arg(long, env = "AGENTD_IMAGE")]
    image: Option<String>,
    /// A runtime API service (`agentd serve`) for conversations with runtime `remote`.
    #[arg(long, env = "SANDBOX_REMOTE_RUNTIME_API_URL")]
    remote_api_url: Option<String>,
    /// That service's key.
    #[arg(long, env = "SANDBOX_API_KEY", hide_env_values = true)]
    sandbox_api_key: Option<String>,
    /// Iteration limit of a conversation, and the most one may ask for (default 500).
    #[arg(long, env = "AGENTD_MAX_ITERATIONS")]
    max_iterations: Option<u32>,
    /// Budget limit in USD of a conversation, and the most one may ask for.
    #[arg(long, env = "AGENTD_MAX_BUDGET")]
    max_budget: Option<f64>,
    /// Hold risky actions for confirmation unless a conversation says otherwise (also
    /// `[security] confirmation_mode`).
    #[arg(long)]
    confirm: bool,
    /// Which security analyzer gives actions their risk: `llm` or `rules`; default:
    /// `[security] security_analyzer`, else none.
    #[arg(long, value_enum)]
    security_analyzer: Option<AnalyzerKind>,
    /// Seconds a conversation that waits for the user keeps its sandbox (default 600).
    #[arg(long, env = "AGENTD_SERVER_IDLE_RELEASE", value_parser = parse_seconds)]
    idle_release: Option<Duration>,
    /// How many conversations may hold a sandbox at once (default 8); beyond, creating or
    /// restarting one is refused with 429.
    #[arg(long, env = "AGENTD_SERVER_MAX_RUNNING", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_running: Option<u32>,
    /// Print the listening line as JSON (`{"listening": "http://ADDR"}`).
    #[arg(long)]
    json: bool,
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(secs.is_finite() && secs > 0.0 && secs <= 365.0 * 86_400.0) {
        return Err(format!("{text:?}: give seconds between 0 and a year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub async fn run(args: ServerArgs) -> anyhow::Result<u8> {
    let file = super::settings(args.config.as_deref())?;
    let llm = super::settings::llm_config(
        &file,
        args.model,
        args.base_url,
        args.llm_api_key,
        args.tool_calling,
    );
    if llm.model.trim().is_empty() {
        eprintln!(
            "agentd server: no model: pass --model (or set LLM_MODEL, or [llm] model in --config)"
        );
        return Ok(USAGE);
    }
    let make_agent: MakeAgent = {
        let file = file.clone();
        Arc::new(move |request: &AgentRequest| {
            let mut llm = llm.clone();
            if let Some(settings) = &request.llm {
                if let Some(model) = &settings.model {
                    if model.trim().is_empty() {
                        return Err("llm.model is empty".to_string());
                    }
                    llm.model = model.clone();
                }
                if let Some(temperature) = settings.temperature {
                    if !(0.0..=2.0).contains(&temperature) {
                        return Err(format!("llm.temperature {temperature} is not in 0..=2"));
                    }
                    llm.set_temperature(temperature);
                }
            }
            let registry = agentd::LlmRegistry::default();
            let (agent, delegates) = super::settings::codeact(
                &registry,
                llm,
                &file,
                request.mask.clone(),
                agentd::ToolProfile::CodeAct,
            )
            .map_err(|e| format!("{e:#}"))?;
            Ok(agentd::MadeAgent {
                agent: Box::new(agent),
                delegates: Some(delegates),
                llms: Some(registry),
            })
        })
    };

    let mut runtime = RuntimeConfig {
        kind: args.runtime.or(file.runtime).unwrap_or_default(),
        sandboxd_binary: args.sandboxd.or(file.sandboxd.clone()),
        ..RuntimeConfig::default()
    };
    set(
        &mut runtime.docker.image,
        args.image.or(file.docker.image.clone()),
    );
    super::settings::docker_settings(&file, &mut runtime.docker)?;
    if let Some(url) = args.remote_api_url.or(file.remote.api_url.clone()) {
        let Some(api_key) = args.sandbox_api_key.or(file.remote.service_api_key.clone()) else {
            eprintln!(
                "agentd server: the runtime API needs its key: --sandbox-api-key or SANDBOX_API_KEY"
            );
            return Ok(USAGE);
        };
        runtime.remote_api = Some(RemoteApiConfig {
            url,
            api_key,
            session_id: String::new(),
            image: runtime.docker.image.clone(),
            environment: Default::default(),
            plugins: Vec::new(),
            keep: false,
        });
    }
    if runtime.kind == RuntimeKind::Remote && runtime.remote_api.is_none() {
        eprintln!("agentd server: --runtime remote needs --remote-api-url");
        return Ok(USAGE);
    }

    let mut api_keys: Vec<String> = args
        .api_keys
        .into_iter()
        .filter(|k| !k.trim().is_empty())
        .collect();
    let generated = api_keys.is_empty();
    if generated {
        api_keys.push(sandbox_common::random_hex(24).context("cannot make an API key")?);
    }
    let page_key = api_keys[0].clone();
    let data_dir = args.data_dir.unwrap_or_else(|| {
        agentd::default_sessions_dir()
            .parent()
            .map(|p| p.join("server"))
            .unwrap_or_else(|| PathBuf::from(".agentd/server"))
    });
    let config = ServerConfig {
        data_dir,
        api_keys,
        runtime,
        max_iterations: super::settings::max_iterations(args.max_iterations, &file),
        max_budget: args.max_budget.or(file.max_budget),
        security: match super::settings::security_config(
            args.security_analyzer,
            args.confirm,
            &file,
        ) {
            Ok(security) => security,
            Err(message) => {
                eprintln!("agentd server: {message}");
                return Ok(USAGE);
            }
        },
        idle_release: args.idle_release.unwrap_or(Duration::from_secs(600)),
        max_running: args.max_running.unwrap_or(8) as usize,
        mcp: file
            .mcp
            .clone()
            .unwrap_or_default()
            .settings()
            .map_err(|e| anyhow::anyhow!("[mcp]: {e}"))?,
        make_agent,
        connections: http_guard::Limits::default(),
        max_body_bytes: 1024 * 1024,
        max_zip_bytes: 1024 * 1024 * 1024,
    };

    let listener = match super::listen("agentd server", args.listen).await {
        Ok(listener) => listener,
        Err(status) => return Ok(status),
    };
    let shutdown = stop_signal()?;
    let json = args.json;
    agentd::serve_conversations(config, listener, shutdown, |addr| {
        super::print_listening("agentd server", &format!("http://{addr}"), json);
        if generated {
            eprintln!("agentd server: open http://{addr}/#key={page_key}");
        } else {
            eprintln!("agentd server: open http://{addr}/ and give one of the server's keys");
        }
    })
    .await
    .context("agentd server")?;
    Ok(0)
}
