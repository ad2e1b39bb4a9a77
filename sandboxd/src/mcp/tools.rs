//! sandboxd's own MCP server: the sandbox's actions as MCP tools, so that any MCP host (an IDE
//! agent, another framework) can use a sandbox with no code of ours. The tools are the CodeAct
//! agent's (`execute_bash`, `execute_ipython_cell`, `str_replace_editor`, from
//! `sandbox_common`: same names, schemas and argument checks), run through the executor as
//! `/execute_action` runs them, and answered with the text the agent's model would read; plus
//! `upload_file`, `download_file` (the transfer endpoints' semantics and messages) and
//! `read_full_output` (a piece of a command's full-output file).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use protocol::{Action, Observation, ObservationKind};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ResourceContents, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use sandbox_common::{ToolArgs, ToolCallError, render_edit, render_ipython, render_run};
use serde_json::{Value, json};

use crate::executor::Executor;
use crate::transfer;

/// `upload_file`: a file (or a zip to extract) into the sandbox.
const UPLOAD_FILE: &str = "upload_file";
/// `download_file`: a file, or a zip of a directory, out of the sandbox.
const DOWNLOAD_FILE: &str = "download_file";
/// `read_full_output`: lines of a command's full-output file.
const READ_FULL_OUTPUT: &str = "read_full_output";

/// The largest file `download_file` returns (8 MiB; base64 makes the answer a third larger).
/// Larger ones are refused with a message naming `GET /download_files`.
const MAX_DOWNLOAD_BYTES: u64 = 8 * 1024 * 1024;
/// Lines `read_full_output` returns when the caller names no end.
const DEFAULT_OUTPUT_LINES: usize = 500;

/// The MCP server behind `/mcp`: one per MCP session, all sharing the executor.
#[derive(Debug, Clone)]
pub(crate) struct SandboxTools {
    executor: Arc<Executor>,
}

impl SandboxTools {
    pub(crate) fn new(executor: Arc<Executor>) -> SandboxTools {
        SandboxTools { executor }
    }

    /// Every tool, in the order MCP hosts list them.
    fn tools() -> Vec<Tool> {
        let mut tools: Vec<Tool> = sandbox_common::sandbox_tools(true)
            .into_iter()
            .map(|spec| tool(spec.name, spec.description, spec.parameters))
            .collect();
        tools.extend([upload_file(), download_file(), read_full_output()]);
        tools
    }

    /// Runs one call; a call that cannot run is a tool error whose text says why.
    async fn call(&self, name: &str, arguments: JsonObject) -> CallToolResult {
        let args = ToolArgs::new(name, arguments);
        let outcome = match name {
            UPLOAD_FILE => self.upload(&args).await,
            DOWNLOAD_FILE => self.download(&args).await,
            READ_FULL_OUTPUT => self.read_output(&args).await,
            _ => match sandbox_common::sandbox_tool_action(name, &args) {
                Some(Ok(call)) => {
                    let mut action = Action::from(call.kind);
                    action.timeout = call.timeout;
                    Ok(observation_result(self.executor.execute(action).await))
                }
                Some(Err(e)) => Err(e),
                None => Err(ToolCallError(format!(
                    "Tool {name} is not registered. Please check the tool name and retry with an \
                     existing tool."
                ))),
            },
        };
        outcome.unwrap_or_else(|e| CallToolResult::error(vec![ContentBlock::text(e.0)]))
    }

    async fn upload(&self, args: &ToolArgs<'_>) -> Result<CallToolResult, ToolCallError> {
        let path = PathBuf::from(args.required_str("path")?);
        let content = args.required_str("content")?;
        let data = match args.optional_str("encoding")?.as_deref() {
            None | Some("utf-8") => content.into_bytes(),
            Some("base64") => base64::engine::general_purpose::STANDARD
                .decode(content.trim())
                .map_err(|e| args.invalid("content", &format!("is not base64 ({e})")))?,
            Some(_) => return Err(args.invalid("encoding", "must be `utf-8` or `base64`")),
        };
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(args.invalid("path", "must be an absolute path to a file"));
        };
        let (dir, name) = (dir.to_path_buf(), name.to_string_lossy().into_owned());
        let owner = self.executor.owner();
        let size = data.len();
        let stored = name.clone();
        blocking(move || {
            let spool = transfer::upload_spool(&dir, &name, false, owner)?;
            let mut spool = spool;
            std::io::Write::write_all(&mut spool, &data)?;
            std::io::Seek::rewind(&mut spool)?;
            transfer::store_upload(&dir, &name, spool, false, owner)
        })
        .await?;
        let what = if stored.ends_with(".zip") {
            format!(
                "Extracted the zip archive ({size} bytes) into {}",
                parent(&path)
            )
        } else {
            format!("Uploaded {size} bytes to {}", path.display())
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(what)]))
    }

    async fn download(&self, args: &ToolArgs<'_>) -> Result<CallToolResult, ToolCallError> {
        let path = PathBuf::from(args.required_str("path")?);
        let uri = format!("file://{}", path.display());
        let (bytes, mime) = blocking(move || {
            let meta = std::fs::metadata(&path).map_err(|_| transfer::TransferError::NotFound)?;
            if meta.is_file() {
                too_large(meta.len())?;
                return Ok((std::fs::read(&path)?, None));
            }
            let mut file = tempfile::tempfile()?;
            transfer::zip_tree(&path, &mut file)?;
            too_large(std::io::Seek::stream_position(&mut file)?)?;
            std::io::Seek::rewind(&mut file)?;
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut bytes)?;
            Ok((bytes, Some("application/zip")))
        })
        .await?;
        let contents = match (mime, String::from_utf8(bytes)) {
            (None, Ok(text)) => ResourceContents::text(text, uri),
            (mime, Err(e)) => blob(e.into_bytes(), mime, uri),
            (mime, Ok(text)) => blob(text.into_bytes(), mime, uri),
        };
        Ok(CallToolResult::success(vec![ContentBlock::resource(
            contents,
        )]))
    }

    async fn read_output(&self, args: &ToolArgs<'_>) -> Result<CallToolResult, ToolCallError> {
        let path = PathBuf::from(args.required_str("path")?);
        let first = line_number(args, "start_line")?.unwrap_or(1);
        let last = line_number(args, "end_line")?.unwrap_or(first + DEFAULT_OUTPUT_LINES - 1);
        if last < first {
            return Err(args.invalid("end_line", "must not be before start_line"));
        }
        let dir = self.executor.output_dir().to_path_buf();
        let text = blocking(move || read_lines(&dir, &path, first, last)).await?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }
}

impl ServerHandler for SandboxTools {
    fn get_info(&self) -> ServerConfig {
        let mut info = super::server_info("sandboxd");
        info.instructions = Some(
            "A sandbox: a persistent bash shell, an IPython kernel and a file editor on one \
             machine. Commands keep their working directory and environment between calls."
                .to_owned(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Self::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        Ok(self.call(&request.name, arguments).await.into())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        Self::tools().into_iter().find(|t| t.name == name)
    }
}

/// What an MCP host reads of an observation: the text the agent's model reads, the images of
/// a cell as image blocks, and `isError` for an `error` observation (or an editor error). A
/// command that exits non-zero is no tool error: the text says its exit code.
fn observation_result(obs: Observation) -> CallToolResult {
    let content = obs.content.as_str();
    let (text, images, failed) = match &obs.kind {
        ObservationKind::Run(extras) => (render_run(extras, content), Vec::new(), false),
        ObservationKind::RunIpython(extras) => (
            render_ipython(content),
            extras.image_urls.clone().unwrap_or_default(),
            false,
        ),
        ObservationKind::Edit(extras) => (
            render_edit(extras, content),
            Vec::new(),
            content.starts_with("ERROR:"),
        ),
        ObservationKind::Read(_) => (
            content.to_owned(),
            Vec::new(),
            content.starts_with("ERROR:"),
        ),
        ObservationKind::Error(_) => (content.to_owned(), Vec::new(), true),
        _ => (content.to_owned(), Vec::new(), false),
    };
    let mut blocks = vec![ContentBlock::text(text)];
    blocks.extend(images.iter().filter_map(|url| data_url_image(url)));
    if failed {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    }
}

/// `data:image/png;base64,AAAA` as an image block.
fn data_url_image(url: &str) -> Option<ContentBlock> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    let mime = head.strip_suffix(";base64")?;
    Some(ContentBlock::image(data, mime))
}

fn blob(bytes: Vec<u8>, mime: Option<&str>, uri: String) -> ResourceContents {
    let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
    ResourceContents::blob(blob, uri).with_mime_type(mime.unwrap_or("application/octet-stream"))
}

fn too_large(size: u64) -> Result<(), transfer::TransferError> {
    if size > MAX_DOWNLOAD_BYTES {
        return Err(transfer::TransferError::Io(std::io::Error::other(format!(
            "it is {size} bytes, more than the {MAX_DOWNLOAD_BYTES} bytes `download_file` \
             returns; use GET /download_files for it"
        ))));
    }
    Ok(())
}

fn parent(path: &Path) -> String {
    path.parent()
        .map_or_else(|| "/".to_owned(), |p| p.display().to_string())
}

fn line_number(args: &ToolArgs<'_>, name: &str) -> Result<Option<usize>, ToolCallError> {
    match args.number(name)? {
        None => Ok(None),
        Some(n) if n >= 1.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => Ok(Some(n as usize)),
        Some(_) => Err(args.invalid(name, "must be a line number, counted from 1")),
    }
}

/// Lines `first..=last` of the full-output file `path`, which must be in `dir`, under a line
/// that says which lines of how many they are.
fn read_lines(
    dir: &Path,
    path: &Path,
    first: usize,
    last: usize,
) -> Result<String, transfer::TransferError> {
    let not_ours = || {
        transfer::TransferError::Io(std::io::Error::other(format!(
            "{} is not a full-output file of this sandbox (they are in {})",
            path.display(),
            dir.display()
        )))
    };
    let real = path.canonicalize().map_err(|_| not_ours())?;
    let real_dir = dir.canonicalize()?;
    if real.parent() != Some(real_dir.as_path()) {
        return Err(not_ours());
    }
    let bytes = std::fs::read(&real)?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let shown: Vec<&str> = lines
        .iter()
        .skip(first - 1)
        .take(last - first + 1)
        .copied()
        .collect();
    let end = first - 1 + shown.len();
    let heading = if shown.is_empty() {
        format!(
            "[{} has {total} lines; none from line {first} on.]",
            path.display()
        )
    } else {
        format!("[Lines {first}-{end} of {total} of {}]", path.display())
    };
    let shown = shown.join("\n");
    let body = sandbox_common::truncate_middle(&shown, sandbox_common::MAX_OBSERVATION_CHARS);
    Ok(format!("{heading}\n{body}"))
}

/// Runs transfer work on a blocking thread; its error is the tool's error text.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, transfer::TransferError> + Send + 'static,
) -> Result<T, ToolCallError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(ToolCallError(e.to_string())),
        Err(e) => {
            tracing::error!(error = %e, "an MCP transfer failed");
            Err(ToolCallError(
                "ERROR: the transfer failed unexpectedly.".to_owned(),
            ))
        }
    }
}

fn tool(name: &'static str, description: &'static str, parameters: Value) -> Tool {
    let schema = match parameters {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(
        Cow::Borrowed(name),
        Cow::Borrowed(description),
        Arc::new(schema),
    )
}

fn upload_file() -> Tool {
    tool(
        UPLOAD_FILE,
        "Write a file into the sandbox, replacing one that exists (its directory is created). \
         `content` is the file's text, or with `encoding` = `base64` its bytes in base64. A \
         file whose name ends in `.zip` is extracted into the directory instead.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute path of the file to write."},
                "content": {"type": "string", "description": "The file's content."},
                "encoding": {
                    "type": "string",
                    "enum": ["utf-8", "base64"],
                    "description": "How `content` is given. Default `utf-8`."
                }
            },
            "required": ["path", "content"]
        }),
    )
}

fn download_file() -> Tool {
    tool(
        DOWNLOAD_FILE,
        "Read a file out of the sandbox as an embedded resource: text when it is UTF-8, else \
         base64. A directory comes as a zip of its tree. At most 8 MiB.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute path of the file or directory."}
            },
            "required": ["path"]
        }),
    )
}

fn read_full_output() -> Tool {
    tool(
        READ_FULL_OUTPUT,
        "Read lines of a command's whole output. A long output is cut in the middle, and the \
         result then names the file that keeps all of it (`[The whole output is in the file \
         ...]`); this reads a range of its lines (500 from `start_line` unless `end_line` says \
         otherwise).",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The full-output file, as named in a result."},
                "start_line": {"type": "integer", "description": "First line, counted from 1. Default 1."},
                "end_line": {"type": "integer", "description": "Last line. Default: 499 lines after `start_line`."}
            },
            "required": ["path"]
        }),
    )
}

#[cfg(test)]
mod tests;
