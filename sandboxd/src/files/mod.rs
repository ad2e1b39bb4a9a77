//! File actions: `read`, `write` and the `oh_aci` editor behind `edit` (docs/protocol.md §6–7),
//! answering with the reference's observations byte for byte.
//!
//! Everything here is blocking; the caller runs it on a blocking thread. No input makes these
//! functions panic or block on special files: FIFOs, sockets and devices are refused after a
//! `stat`, never opened for reading.

mod binary;
mod denied;
mod difflib;
mod editor;
mod encoding;
mod hash;
mod listing;
mod pycompat;
mod read_write;
#[cfg(test)]
mod tests;

use std::path::Path;

use protocol::Observation;
use protocol::action::{FileReadArgs, FileReadSource, FileWriteArgs};

use crate::observations;

pub(crate) use editor::Editor;
pub(crate) use hash::{content_hash, parse_expected};
pub(crate) use read_write::resolve;

/// Where file actions resolve paths and whom new files belong to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileContext<'a> {
    /// The bash shell's current directory: relative paths of `read`/`write` resolve here.
    pub(crate) cwd: &'a Path,
    /// `--working-dir`: used by the editor's "Maybe you meant {initial_dir}/{path}?" hint.
    pub(crate) initial_dir: &'a Path,
    /// `(uid, gid)` to chown new files to (when the daemon runs as root); `None` = leave as is.
    pub(crate) owner: Option<(u32, u32)>,
}

/// The `read` action. Both modes first sniff the file (resolved against `ctx.cwd`) and answer
/// `ERROR_BINARY_FILE` for binary content; `oh_aci` then runs the editor's `view` (a `read`
/// observation with the path as given), the default mode returns the selected lines.
pub(crate) fn read(args: &FileReadArgs, ctx: &FileContext, editor: &Editor) -> Observation {
    let abs = read_write::resolve(&args.path, ctx.cwd);
    if binary::is_binary_file(Path::new(&abs)) {
        return observations::error("ERROR_BINARY_FILE");
    }
    match args.impl_source {
        FileReadSource::OhAci => {
            let content = editor.view_for_read(&args.path, args.view_range.as_deref(), ctx);
            observations::read(&args.path, FileReadSource::OhAci, content)
        }
        FileReadSource::Default => read_write::read_default(args, &abs, ctx),
    }
}

/// The `write` action: replaces lines `[start, end)` of the file (the whole file by default)
/// with the content's lines, each followed by `\n`; creates the file and its parents if needed.
pub(crate) fn write(args: &FileWriteArgs, ctx: &FileContext) -> Observation {
    read_write::write(args, ctx)
}
