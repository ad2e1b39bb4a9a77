//! `sbx`: a command-line client for sandboxd (argument parsing and printing; the work is done by
//! the `client` library).
#![allow(clippy::print_stdout, reason = "printing results is this binary's job")]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{ArgGroup, Parser, Subcommand, ValueEnum};
use client::protocol::action::{CmdRunArgs, FileEditArgs, FileReadArgs, FileWriteArgs};
use client::protocol::{Action, ActionKind, Observation};
use client::{ClientError, DEFAULT_ACTION_TIMEOUT, ObservationExt, SandboxClient, exit_status};

const AFTER_HELP: &str = "\
Examples:
  sbx alive --wait 30
  sbx --url unix:/run/sandbox/sandboxd.sock alive
  sbx run 'ls -la /workspace'
  sbx run 'make test' --timeout 600
  sbx run 'python3 -i' ; sbx run 'print(1)' --input ; sbx run C-c --input
  sbx read /workspace/README.md --start 0 --end 20
  sbx write /workspace/notes.txt --content 'hello'
  sbx edit /workspace/a.py str_replace --old-str 'x = 1' --new-str 'x = 2'
  sbx upload ./project /workspace --recursive
  sbx download /workspace/project out.zip
  sbx attach ; sbx attach -- htop ; sbx attach term-1a2b3c4d
  echo '{\"action\":\"run\",\"args\":{\"command\":\"pwd\"},\"timeout\":30}' | sbx exec-json
  SANDBOX_REMOTE_RUNTIME_API_URL=http://host:3000 SANDBOX_API_KEY=k sbx runtime start my-session --wait 60
  sbx runtime ls ; sbx runtime status my-session ; sbx runtime stop RUNTIME_ID

Exit status:
  0    success
  N    `run`: the command's exit code (0-255)
  124  `run`: the command did not finish in time (exit code -1)
  1    connection or HTTP error, or an error observation
  2    usage error";

/// Talk to a sandboxd: run commands, read/write/edit files, move files in and out.
#[derive(Debug, Parser)]
#[command(name = "sbx", version, after_help = AFTER_HELP)]
struct Cli {
    /// Where the sandboxd is: its base URL (http://HOST:PORT), or unix:/PATH for one started
    /// with --unix-socket PATH
    #[arg(
        long,
        global = true,
        env = "SANDBOX_URL",
        default_value = "http://127.0.0.1:8000"
    )]
    url: String,

    /// Session API key, sent as X-Session-API-Key
    #[arg(long, global = true, env = "SESSION_API_KEY", hide_env_values = true)]
    key: Option<String>,

    /// Print the raw JSON answer instead of human-readable text
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start, find, pause, resume and stop sandboxes through a runtime API service
    /// (`agentd serve`; OpenHands' RemoteRuntime control plane)
    #[command(subcommand)]
    Runtime(RuntimeCommand),

    /// Check that the server is ready (GET /alive)
    Alive {
        /// Keep polling for up to SECS seconds until it is
        #[arg(long, value_name = "SECS")]
        wait: Option<f64>,
    },

    /// Show uptime, idle time and resource use (GET /server_info)
    Info,

    /// Attach to a terminal in the sandbox, interactively (Ctrl-] detaches). Without an id, a
    /// new terminal runs COMMAND (a login bash when none) and is closed when it ends; the exit
    /// status is its program's
    Attach {
        /// A terminal made earlier (`POST /terminals`, or a detached `sbx attach`)
        id: Option<String>,

        /// The program of a new terminal and its arguments (after `--`)
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },

    /// Run a command in the sandbox's persistent bash session
    ///
    /// Prints the output and the exit-code notice; exits with the command's exit code. Without
    /// --timeout the action gets the stock 120 s hard limit and the server's no-output timeout
    /// (10 s by default) also applies; an explicit --timeout makes it blocking (only the hard
    /// limit applies). An empty CMD fetches more output of a still-running command.
    Run {
        /// The command line (quote it as one argument); with --input, text or a key such as C-c
        #[arg(value_name = "CMD")]
        command: String,

        /// Hard time limit in seconds (implies --blocking)
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,

        /// Send CMD as input to the running program instead of running it
        #[arg(long)]
        input: bool,

        /// Disable the no-output timeout; only the hard limit applies
        #[arg(long)]
        blocking: bool,
    },

    /// Read a file's lines (`read` action)
    Read {
        /// File path; relative paths resolve against the shell's working directory
        path: String,

        /// First line, 0-based
        #[arg(long, default_value_t = 0, value_name = "N")]
        start: i64,

        /// End line, exclusive; -1 reads to the end
        #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "N")]
        end: i64,
    },

    /// Replace a file's content, creating it and its directories (`write` action)
    #[command(group(ArgGroup::new("source").required(true).args(["content", "from_file"])))]
    Write {
        /// File path
        path: String,

        /// The new content
        #[arg(long, value_name = "TEXT")]
        content: Option<String>,

        /// Take the new content from a local UTF-8 file ('-' for stdin)
        #[arg(long, value_name = "FILE")]
        from_file: Option<PathBuf>,
    },

    /// Run a file-editor command (`edit` action, oh_aci editor)
    Edit {
        /// Absolute path of the file (or directory, for view)
        path: String,

        /// Editor command
        #[arg(value_enum)]
        command: EditCommand,

        /// Text to replace (str_replace)
        #[arg(long, value_name = "TEXT")]
        old_str: Option<String>,

        /// Replacement (str_replace) or inserted text (insert)
        #[arg(long, value_name = "TEXT")]
        new_str: Option<String>,

        /// Content of the new file (create)
        #[arg(long, value_name = "TEXT")]
        file_text: Option<String>,

        /// Line after which to insert, 0 for the top (insert)
        #[arg(long, value_name = "N")]
        insert_line: Option<i64>,

        /// First and last line to show, 1-based; -1 as LAST means to the end (view)
        #[arg(long, num_args = 2, value_names = ["FIRST", "LAST"], allow_negative_numbers = true)]
        view_range: Option<Vec<i64>>,
    },

    /// List a sandbox directory: directories first, with a trailing '/' (POST /list_files)
    Ls {
        /// Directory; default the initial working directory, relative paths are joined to it
        path: Option<String>,
    },

    /// Copy a local file, or with --recursive a directory, into a sandbox directory
    ///
    /// DEST is an absolute directory in the sandbox, created if missing. A directory arrives as
    /// DEST/<its name>/...; a file as DEST/<its name> (a file named *.zip is extracted there).
    Upload {
        /// Local file or directory
        local: PathBuf,

        /// Absolute destination directory in the sandbox
        dest: String,

        /// Upload a directory (sent as a zip and extracted)
        #[arg(long, short)]
        recursive: bool,
    },

    /// Download a sandbox directory as a zip ('-' writes it to stdout)
    Download {
        /// Absolute path in the sandbox
        path: String,

        /// Local zip file to write
        #[arg(value_name = "OUT.zip")]
        out: PathBuf,
    },

    /// Send the action JSON read from stdin; print the observation JSON
    ///
    /// Accepts a bare action ({"action": "run", "args": {...}, "timeout": 30}) or the request
    /// body ({"action": {...}}). The action is sent unchecked, so unknown types reach the server.
    ExecJson,
}

/// Commands of the file editor.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum EditCommand {
    /// Show a file with line numbers, or a directory's tree
    View,
    /// Create a new file with --file-text
    Create,
    /// Replace --old-str (must occur once) with --new-str
    #[value(name = "str_replace")]
    StrReplace,
    /// Insert --new-str after --insert-line
    Insert,
    /// Revert the last edit of the file
    #[value(name = "undo_edit")]
    UndoEdit,
}

impl EditCommand {
    fn wire_name(self) -> &'static str {
        match self {
            EditCommand::View => "view",
            EditCommand::Create => "create",
            EditCommand::StrReplace => "str_replace",
            EditCommand::Insert => "insert",
            EditCommand::UndoEdit => "undo_edit",
        }
    }
}

/// Where the runtime API is and its key.
#[derive(Debug, clap::Args)]
struct RuntimeApi {
    /// The runtime API service's base URL
    #[arg(long = "api-url", env = "SANDBOX_REMOTE_RUNTIME_API_URL")]
    url: String,
    /// The service's key, sent as X-API-Key
    #[arg(long = "api-key", env = "SANDBOX_API_KEY", hide_env_values = true)]
    key: String,
}

#[derive(Debug, Subcommand)]
enum RuntimeCommand {
    /// Start a sandbox for a session (or find its running one); prints its id, URL and key
    Start {
        #[command(flatten)]
        api: RuntimeApi,
        /// The session id
        session: String,
        /// Image to ask for (the service maps images it does not have onto its default)
        #[arg(long, default_value = "")]
        image: String,
        /// Multiplier of the service's CPU and memory limits
        #[arg(long, default_value_t = 1.0)]
        resource_factor: f64,
        /// Environment of the sandbox, KEY=VALUE (repeatable)
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// Wait up to SECS seconds until the sandbox is ready
        #[arg(long, value_name = "SECS")]
        wait: Option<f64>,
    },
    /// Show a session's sandbox (GET /sessions/SESSION) and its pod status
    Status {
        #[command(flatten)]
        api: RuntimeApi,
        /// The session id
        session: String,
    },
    /// Stop and remove a sandbox
    Stop {
        #[command(flatten)]
        api: RuntimeApi,
        /// The runtime id
        runtime_id: String,
    },
    /// Pause a sandbox (its workspace and processes are kept)
    Pause {
        #[command(flatten)]
        api: RuntimeApi,
        /// The runtime id
        runtime_id: String,
    },
    /// Resume a paused sandbox
    Resume {
        #[command(flatten)]
        api: RuntimeApi,
        /// The runtime id
        runtime_id: String,
    },
    /// List this key's sandboxes and the warm pools
    Ls {
        #[command(flatten)]
        api: RuntimeApi,
    },
}

async fn runtime_command(command: RuntimeCommand, json: bool) -> anyhow::Result<u8> {
    use client::RuntimeApiClient;
    use client::protocol::runtime_api::StartRequest;
    let connect = |api: &RuntimeApi| RuntimeApiClient::new(&api.url, &api.key);
    match command {
        RuntimeCommand::Start {
            api,
            session,
            image,
            resource_factor,
            env,
            wait,
        } => {
            let client = connect(&api)?;
            let mut environment = std::collections::BTreeMap::new();
            for kv in env {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| UsageError(format!("--env wants KEY=VALUE, not {kv:?}")))?;
                environment.insert(k.to_owned(), v.to_owned());
            }
            let started = client
                .start(&StartRequest {
                    image,
                    command: Vec::new(),
                    working_dir: None,
                    environment,
                    session_id: session,
                    resource_factor,
                    runtime_class: None,
                })
                .await?;
            if let Some(secs) = wait {
                let deadline = Duration::try_from_secs_f64(secs).map_err(|_| {
                    UsageError(format!("--wait must be a non-negative number, not {secs}"))
                })?;
                if let Err(status) = client
                    .wait_until_ready(&started.access.runtime_id, deadline)
                    .await?
                {
                    anyhow::bail!(
                        "runtime {} is not ready: {status:?}",
                        started.access.runtime_id
                    );
                }
            }
            print_out(json, &started, || {
                format!(
                    "runtime_id: {}\nurl:        {}\nkey:        {}",
                    started.access.runtime_id,
                    started.access.url,
                    started.access.session_api_key.as_deref().unwrap_or("-")
                )
            })?;
        }
        RuntimeCommand::Status { api, session } => {
            let client = connect(&api)?;
            let found = client.session(&session).await?;
            let pod = client.runtime(&found.access.runtime_id).await?;
            let both = serde_json::json!({"session": &found, "runtime": &pod});
            print_out(json, &both, || {
                format!(
                    "runtime_id: {}\nstatus:     {:?}\npod:        {:?}\nurl:        {}",
                    found.access.runtime_id, found.status, pod.pod_status, found.access.url
                )
            })?;
        }
        RuntimeCommand::Stop { api, runtime_id } => {
            let answer = connect(&api)?.stop(&runtime_id).await?;
            print_out(json, &answer, || format!("{runtime_id} stopped"))?;
        }
        RuntimeCommand::Pause { api, runtime_id } => {
            let answer = connect(&api)?.pause(&runtime_id).await?;
            print_out(json, &answer, || format!("{runtime_id} paused"))?;
        }
        RuntimeCommand::Resume { api, runtime_id } => {
            let answer = connect(&api)?.resume(&runtime_id).await?;
            print_out(json, &answer, || format!("{runtime_id} running"))?;
        }
        RuntimeCommand::Ls { api } => {
            let list = connect(&api)?.list().await?;
            print_out(json, &list, || {
                let mut text = format!(
                    "{:<20} {:<24} {:<8} {:<8} URL",
                    "RUNTIME", "SESSION", "STATUS", "POD"
                );
                for r in &list.runtimes {
                    text.push_str(&format!(
                        "\n{:<20} {:<24} {:<8} {:<8} {}",
                        r.runtime_id,
                        r.session_id,
                        format!("{:?}", r.status).to_lowercase(),
                        format!("{:?}", r.pod_status).to_lowercase(),
                        r.url
                    ));
                }
                for (image, n) in &list.warm {
                    text.push_str(&format!("\nwarm: {n} of {image}"));
                }
                text
            })?;
        }
    }
    Ok(exit_status::SUCCESS)
}

/// A problem with the command line or the input, reported with exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("sbx: cannot start the async runtime: {err}");
            return ExitCode::from(exit_status::FAILURE);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(status) => ExitCode::from(status),
        Err(err) => {
            eprintln!("sbx: {err}");
            ExitCode::from(error_status(&err))
        }
    }
}

/// Exit status for a failure: 2 for usage problems (including a bad URL or key), else 1.
fn error_status(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<UsageError>().is_some() {
        return exit_status::USAGE;
    }
    match err.downcast_ref::<ClientError>() {
        Some(ClientError::InvalidUrl { .. } | ClientError::InvalidApiKey) => exit_status::USAGE,
        _ => exit_status::FAILURE,
    }
}

async fn run(cli: Cli) -> anyhow::Result<u8> {
    let json = cli.json;
    if let Command::Runtime(command) = cli.command {
        return runtime_command(command, json).await;
    }
    let sandbox = SandboxClient::new(&cli.url, cli.key)?;
    match cli.command {
        Command::Runtime(_) => Ok(exit_status::SUCCESS),
        Command::Attach { id, command } => attach::attach(&sandbox, id, command).await,
        Command::Alive { wait } => {
            match wait {
                Some(secs) => {
                    let deadline = Duration::try_from_secs_f64(secs).map_err(|_| {
                        UsageError(format!("--wait must be a non-negative number, not {secs}"))
                    })?;
                    sandbox.wait_until_alive(deadline).await?;
                }
                None => sandbox.alive().await?,
            }
            print_out(json, &serde_json::json!({"status": "ok"}), || {
                "ok".to_owned()
            })?;
            Ok(exit_status::SUCCESS)
        }
        Command::Info => {
            let info = sandbox.server_info().await?;
            print_out(json, &info, || {
                let r = &info.resources;
                format!(
                    "uptime      {:.1} s\nidle        {:.1} s\ncpu         {:.1} %\n\
                     memory      {} rss, {} vms ({:.1} %)\n\
                     disk        {} used of {}, {} free ({:.1} %)\n\
                     io          {} read, {} written",
                    info.uptime,
                    info.idle_time,
                    r.cpu_percent,
                    human_bytes(r.memory.rss),
                    human_bytes(r.memory.vms),
                    r.memory.percent,
                    human_bytes(r.disk.used),
                    human_bytes(r.disk.total),
                    human_bytes(r.disk.free),
                    r.disk.percent,
                    human_bytes(r.io.read_bytes),
                    human_bytes(r.io.write_bytes),
                )
            })?;
            Ok(exit_status::SUCCESS)
        }
        Command::Run {
            command,
            timeout,
            input,
            blocking,
        } => {
            let mut args = CmdRunArgs::new(command);
            args.is_input = input;
            args.blocking = blocking || timeout.is_some();
            let mut action = Action::from(ActionKind::Run(args));
            action.timeout = Some(timeout.unwrap_or(DEFAULT_ACTION_TIMEOUT));
            execute(&sandbox, &serde_json::to_value(&action)?, json).await
        }
        Command::Read { path, start, end } => {
            let mut args = FileReadArgs::new(path);
            args.start = start;
            args.end = end;
            execute_action(&sandbox, ActionKind::Read(args), json).await
        }
        Command::Write {
            path,
            content,
            from_file,
        } => {
            let content = match (content, from_file) {
                (Some(content), _) => content,
                (None, Some(file)) => read_local_text(&file)?,
                (None, None) => {
                    return Err(UsageError("give --content or --from-file".into()).into());
                }
            };
            execute_action(
                &sandbox,
                ActionKind::Write(FileWriteArgs::new(path, content)),
                json,
            )
            .await
        }
        Command::Edit {
            path,
            command,
            old_str,
            new_str,
            file_text,
            insert_line,
            view_range,
        } => {
            let mut args = FileEditArgs::new(path, command.wire_name());
            args.old_str = old_str;
            args.new_str = new_str;
            args.file_text = file_text;
            args.insert_line = insert_line.map(serde_json::Value::from);
            args.view_range = view_range;
            execute_action(&sandbox, ActionKind::Edit(args), json).await
        }
        Command::Ls { path } => {
            let names = sandbox.list_files(path.as_deref()).await?;
            print_out(json, &names, || names.join("\n"))?;
            Ok(exit_status::SUCCESS)
        }
        Command::Upload {
            local,
            dest,
            recursive,
        } => {
            let answer = sandbox.upload_file(&local, &dest, recursive).await?;
            print_out(json, &answer, || {
                format!("uploaded {} to {}", local.display(), answer.destination)
            })?;
            Ok(exit_status::SUCCESS)
        }
        Command::Download { path, out } => {
            let data = sandbox.download_files(&path).await?;
            if out.as_os_str() == "-" {
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(&data)?;
                stdout.flush()?;
            } else {
                std::fs::write(&out, &data)
                    .with_context(|| format!("cannot write {}", out.display()))
                    .map_err(|err| anyhow::anyhow!("{err:#}"))?;
                let summary = serde_json::json!({"path": path, "out": out, "bytes": data.len()});
                print_out(json, &summary, || {
                    format!("wrote {} bytes to {}", data.len(), out.display())
                })?;
            }
            Ok(exit_status::SUCCESS)
        }
        Command::ExecJson => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|err| UsageError(format!("cannot read stdin: {err}")))?;
            let value: serde_json::Value = serde_json::from_str(&input)
                .map_err(|err| UsageError(format!("stdin is not JSON: {err}")))?;
            let action = match value {
                serde_json::Value::Object(mut map)
                    if map.get("action").is_some_and(|a| a.is_object()) =>
                {
                    map.remove("action").unwrap_or_default()
                }
                serde_json::Value::Object(map) => serde_json::Value::Object(map),
                _ => return Err(UsageError("stdin must hold a JSON object".into()).into()),
            };
            execute(&sandbox, &action, true).await
        }
    }
}

/// Sends an action with the stock default timeout.
async fn execute_action(
    sandbox: &SandboxClient,
    kind: ActionKind,
    json: bool,
) -> anyhow::Result<u8> {
    let mut action = Action::from(kind);
    action.timeout = Some(DEFAULT_ACTION_TIMEOUT);
    execute(sandbox, &serde_json::to_value(&action)?, json).await
}

/// Sends an action, prints the observation (the server's JSON as sent, or text), returns the
/// exit status.
async fn execute(
    sandbox: &SandboxClient,
    action: &serde_json::Value,
    json: bool,
) -> anyhow::Result<u8> {
    let raw = sandbox.execute_raw(action).await?;
    let observation = serde_json::from_str::<Observation>(&raw);
    if json {
        println!("{}", raw.trim_end());
        return Ok(observation.map_or(exit_status::FAILURE, |o| o.cli_status()));
    }
    let observation = observation.map_err(|err| ClientError::Decode {
        endpoint: "/execute_action",
        reason: err.to_string(),
    })?;
    let text = observation.display_text();
    let text = text.trim_end_matches('\n');
    if observation.is_error() {
        eprintln!("{text}");
    } else if !text.is_empty() {
        println!("{text}");
    }
    Ok(observation.cli_status())
}

/// Prints `value` as pretty JSON, or the human text.
fn print_out<T: serde::Serialize>(
    json: bool,
    value: &T,
    human: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        let text = human();
        if !text.is_empty() {
            println!("{text}");
        }
    }
    Ok(())
}

fn read_local_text(path: &std::path::Path) -> anyhow::Result<String> {
    let mut text = String::new();
    let result = if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).map(drop)
    } else {
        std::fs::File::open(path).and_then(|mut f| f.read_to_string(&mut text).map(drop))
    };
    result.map_err(|err| UsageError(format!("cannot read {}: {err}", path.display())))?;
    Ok(text)
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

mod attach;

#[cfg(test)]
mod tests;
