//! `agentd image build|import`: make a base image a sandbox image, import a root filesystem as
//! a base image; and the progress of a sandbox image build, which `agentd sandbox up` shows too.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use agentd::docker::DockerHost;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Make a base image (any image with bash) a sandbox image; prints its tag.
    Build {
        /// The base image.
        #[arg(long, default_value = agentd::docker::DEFAULT_BASE_IMAGE)]
        base: String,
        #[command(flatten)]
        sandboxd: SandboxdArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Import a root filesystem tarball as an image (like `docker import`); prints its id.
    Import {
        /// `repository:tag` of the new image.
        #[arg(long)]
        tag: String,
        /// The tarball; `-` for standard input.
        #[arg(default_value = "-")]
        file: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct SandboxdArg {
    /// The sandboxd binary to put into images (default: AGENTD_SANDBOXD_BIN, else the
    /// `sandboxd` next to agentd). Build a portable one with images/build-sandboxd.sh.
    #[arg(long = "sandboxd", value_name = "PATH")]
    pub path: Option<PathBuf>,
}

pub async fn run(command: ImageCommand) -> anyhow::Result<u8> {
    let docker = DockerHost::connect()?;
    match command {
        ImageCommand::Build {
            base,
            sandboxd,
            json,
        } => build(&docker, &base, sandboxd, json).await,
        ImageCommand::Import { tag, file } => import(&docker, &tag, file).await,
    }
}

async fn build(
    docker: &DockerHost,
    base: &str,
    sandboxd: SandboxdArg,
    json: bool,
) -> anyhow::Result<u8> {
    let sandboxd = sandboxd.path.as_deref();
    let image = with_build_progress(json, async |progress| {
        agentd::docker::sandbox_image_for(docker.docker(), base, sandboxd, progress).await
    })
    .await?;
    if json {
        println!("{}", serde_json::to_string(&image)?);
    } else {
        println!("{}", image.tag);
    }
    Ok(0)
}

async fn import(docker: &DockerHost, tag: &str, file: PathBuf) -> anyhow::Result<u8> {
    let reader: Box<dyn tokio::io::AsyncRead + Send + Unpin> = if file.as_os_str() == "-" {
        if std::io::stdin().is_terminal() {
            bail!("refusing to read a tarball from a terminal; pass FILE or pipe one in");
        }
        Box::new(tokio::io::stdin())
    } else {
        Box::new(
            tokio::fs::File::open(&file)
                .await
                .with_context(|| format!("cannot open {}", file.display()))?,
        )
    };
    let stream = tokio_util::io::ReaderStream::new(reader);
    let id = agentd::docker::import_rootfs(docker.docker(), stream, tag).await?;
    println!("{id}");
    Ok(0)
}

/// Runs `make` (which may build a sandbox image) with the build's progress shown: on a
/// terminal (unless `quiet`) a spinner that appears with the build's first line, else log lines.
pub async fn with_build_progress<T>(
    quiet: bool,
    make: impl AsyncFnOnce(&mut dyn FnMut(&str)) -> T,
) -> T {
    let spinner = !quiet && std::io::stderr().is_terminal();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let made = make(&mut |line: &str| {
        if !spinner {
            tracing::info!(target: "agentd::build", "{line}");
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        bar.set_message(line.to_string());
    })
    .await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    made
}
