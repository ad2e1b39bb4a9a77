//! The text a model reads of the observations of the sandbox's tools (`run`, `run_ipython`,
//! `edit`): the CodeAct agent's conversation memory and sandboxd's MCP server show the same.

use protocol::observation::{CmdOutputExtras, FileEditExtras};

use crate::TRUNCATION_NOTICE;

/// The line that replaces an inline image in IPython output (the image itself is sent apart,
/// or not at all).
pub const IPYTHON_IMAGE_LINE: &str =
    "![image](data:image/png;base64, ...) already displayed to user";

/// `run`: prefix, output, suffix, then the working directory, the Python interpreter and the
/// exit code (once the command has finished), each on its own line when known.
pub fn render_run(extras: &CmdOutputExtras, content: &str) -> String {
    let meta = &extras.metadata;
    let mut text = format!("{}{content}{}", meta.prefix, meta.suffix);
    if let Some(dir) = meta.working_dir.as_deref().filter(|d| !d.is_empty()) {
        text.push_str(&format!("\n[Current working directory: {dir}]"));
    }
    if let Some(python) = meta
        .py_interpreter_path
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        text.push_str(&format!("\n[Python interpreter: {python}]"));
    }
    if meta.exit_code != -1 {
        text.push_str(&format!(
            "\n[Command finished with exit code {}]",
            meta.exit_code
        ));
    }
    // sandboxd keeps every command's whole output; when the observation shows only part of
    // it, say where the rest is.
    let cut = content.contains(OUTPUT_CUT) || meta.prefix.contains(SCROLLED_AWAY);
    if let Some(path) = extras.full_output_path.as_deref().filter(|_| cut) {
        text.push_str(&format!("\n[The whole output is in the file {path}]"));
    }
    text
}

/// What sandboxd puts where it cut the middle of a long output (the notice without its line
/// breaks).
const OUTPUT_CUT: &str = TRUNCATION_NOTICE.trim_ascii();
/// What sandboxd's prefix says when older lines of the output scrolled away.
const SCROLLED_AWAY: &str = "truncated";

/// `run_ipython`: the cell's output with every inline base64 image line replaced by
/// [`IPYTHON_IMAGE_LINE`] (the images go as parts of their own, when the model has vision).
pub fn render_ipython(content: &str) -> String {
    content
        .split('\n')
        .map(|line| {
            if line.contains("![image](data:image/png;base64,") {
                IPYTHON_IMAGE_LINE
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `edit`: the `oh_aci` editor's own text (its result, with a snippet of the edited file); for
/// another editor, the note that a new file was created, or the content.
pub fn render_edit(extras: &FileEditExtras, content: &str) -> String {
    if extras.impl_source == "oh_aci" || extras.prev_exist {
        return content.to_string();
    }
    format!(
        "[New file {} is created with the provided content.]\n",
        extras.path
    )
}

#[cfg(test)]
mod tests;
