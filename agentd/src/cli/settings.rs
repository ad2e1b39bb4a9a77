//! The settings `agentd run` and `agentd server` both make of their flags and the settings
//! file: the model (`[llm]`), the CodeAct agent with its condenser and delegates, the Docker
//! sandbox (`[docker]`), the iteration limit, the security analyzer and confirmation mode.

use agentd::docker::SandboxConfig;
use agentd::{AGENT_SERVICE, CONDENSER_SERVICE};
use agentd::{Agent, ScriptedAgent, SecretMask};
use agentd::{AgentFactory, CodeActAgent, CodeActConfig, ToolProfile, ToolSet};
use agentd::{AnalyzerKind, SecurityAnalyzer, SecurityConfig};
use agentd::{
    DEFAULT_BASE_URL, DEFAULT_MAX_ITERATIONS, FileConfig, LlmConfig, LlmRegistry, RetryNotice,
    ToolCalling,
};
use anyhow::Context;

use super::{DiskSize, parse_bytes, set};

/// The file's `[llm]` with the flags over it (they carry the environment, `LLM_MODEL`...,
/// which wins over the file).
pub(super) fn llm_config(
    file: &FileConfig,
    model: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    tool_calling: Option<ToolCalling>,
) -> LlmConfig {
    let mut llm = file
        .llm
        .clone()
        .unwrap_or_else(|| LlmConfig::new("", DEFAULT_BASE_URL));
    set(&mut llm.model, model);
    set(&mut llm.base_url, base_url);
    if api_key.is_some() {
        llm.api_key = api_key;
    }
    if tool_calling.is_some() {
        llm.tool_calling = tool_calling;
    }
    llm
}

/// The file's `[docker]` sandbox settings: limits, network, egress, host ports, read-only
/// root, disk.
pub(super) fn docker_settings(file: &FileConfig, docker: &mut SandboxConfig) -> anyhow::Result<()> {
    if let Some(memory) = &file.docker.memory {
        docker.limits.memory_bytes = Some(parse_bytes(memory).map_err(anyhow::Error::msg)?);
    }
    if let Some(cpus) = file.docker.cpus {
        docker.limits.cpus = Some(cpus);
    }
    if let Some(pids) = file.docker.pids {
        docker.limits.pids = Some(pids);
    }
    set(&mut docker.network, file.docker.network);
    if let Some(egress) = &file.docker.egress {
        docker.egress = egress
            .policy()
            .map_err(|e| anyhow::anyhow!("[docker] egress: {e}"))?;
    }
    set(&mut docker.host_ports, file.docker.host_ports.clone());
    set(&mut docker.egress_hosts, file.docker.egress_hosts.clone());
    set(&mut docker.read_only_root, file.docker.read_only);
    if let Some(DiskSize(bytes)) = DiskSize::from_flag_or_file(None, file.docker.disk.as_deref())? {
        docker.disk_bytes = bytes;
    }
    Ok(())
}

/// The CodeAct agent (or the `LocAgent` of `profile`) for `llm` and the file's `[condenser]`
/// and `[agent]`, reporting retries of the model's calls on stderr, and the agents it may
/// delegate to (on the same model). Its models come from `registry`: the agent's as `agent`,
/// and a condenser's that calls one as `condenser` (the same model, a client and metrics of
/// its own).
pub(super) fn codeact(
    registry: &LlmRegistry,
    llm: LlmConfig,
    file: &FileConfig,
    mask: SecretMask,
    profile: ToolProfile,
) -> anyhow::Result<(CodeActAgent, AgentFactory)> {
    // The file's system prompt is the CodeAct agent's.
    let system_prompt = match &file.agent.system_prompt_file {
        Some(path) if profile == ToolProfile::CodeAct => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?,
        ),
        _ => None,
    };
    let model = llm.model.clone();
    let retry_mask = mask.clone();
    let listener = std::sync::Arc::new(move |notice: &RetryNotice| {
        eprintln!(
            "agentd: the model's call failed (attempt {}/{}): {}; retrying in {:.1} s",
            notice.attempt,
            notice.max_attempts,
            retry_mask.mask(&notice.error),
            notice.wait.as_secs_f64()
        );
    });
    let condenser = file.condenser.clone().unwrap_or_default();
    let condenser_llm = if condenser.calls_model() {
        let llm = registry
            .get(CONDENSER_SERVICE, Some(&llm.for_service(CONDENSER_SERVICE)))
            .with_context(|| format!("cannot set up the condenser's model {model}"))?
            .with_secret_mask(mask.clone())
            .with_retry_listener(listener.clone());
        Some(llm)
    } else {
        None
    };
    let llm = registry
        .get(AGENT_SERVICE, Some(&llm))
        .with_context(|| format!("cannot set up the model {model}"))?
        .with_secret_mask(mask)
        .with_retry_listener(listener);
    let defaults = ToolSet::default();
    let config = CodeActConfig {
        tools: ToolSet {
            ipython: file.agent.ipython.unwrap_or(defaults.ipython),
            think: file.agent.think.unwrap_or(defaults.think),
            browser: file.agent.browsing.unwrap_or(defaults.browser),
            delegate: file.agent.delegation.unwrap_or(defaults.delegate),
            task_tracker: file.agent.task_tracker.unwrap_or(defaults.task_tracker),
            condensation_request: file
                .agent
                .condensation_request
                .unwrap_or(defaults.condensation_request),
        },
        system_prompt,
        condenser,
        condenser_llm,
        profile,
    };
    let delegate_llm = llm.clone();
    let factory: AgentFactory = std::sync::Arc::new(move |name: &str| -> Option<Box<dyn Agent>> {
        let profile = match name {
            "ReadOnlyAgent" => ToolProfile::ReadOnly,
            "LocAgent" => ToolProfile::Loc,
            "DummyAgent" => return Some(Box::new(ScriptedAgent::dummy())),
            // The reference's CodeAct hands web tasks to it (its sandbox must have Chromium).
            "BrowsingAgent" => {
                return Some(Box::new(agentd::BrowsingAgent::new(delegate_llm.clone())));
            }
            _ => return None,
        };
        let config = CodeActConfig {
            profile,
            ..CodeActConfig::default()
        };
        match CodeActAgent::new(delegate_llm.clone(), config) {
            Ok(agent) => Some(Box::new(agent)),
            Err(e) => {
                tracing::error!(error = %e, agent = name, "cannot set up the delegate");
                None
            }
        }
    });
    let agent = CodeActAgent::new(llm, config).context("cannot set up the agent")?;
    Ok((agent, factory))
}

/// The iteration limit of a run: the flag's, else the file's, else
/// [`DEFAULT_MAX_ITERATIONS`].
pub(super) fn max_iterations(flag: Option<u32>, file: &FileConfig) -> u32 {
    flag.or(file.max_iterations)
        .unwrap_or(DEFAULT_MAX_ITERATIONS)
}

/// The security settings of the flags (`--security-analyzer`, `--confirm`) and the file; `Err` says what is wrong (a rule that
/// does not compile).
pub(super) fn security_config(
    analyzer: Option<AnalyzerKind>,
    confirm: bool,
    file: &FileConfig,
) -> Result<SecurityConfig, String> {
    let section = &file.security;
    let analyzer = match analyzer.or(section.security_analyzer) {
        Some(kind) => Some(SecurityAnalyzer::new(kind, &section.rules).map_err(|e| e.to_string())?),
        None => None,
    };
    Ok(SecurityConfig {
        confirmation_mode: confirm || section.confirmation_mode.unwrap_or(false),
        analyzer,
        workspace: None,
    })
}
