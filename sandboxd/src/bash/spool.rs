//! The full-output files of commands (`full_output_path`) and the budget they share.
//!
//! Every command's complete rendered output goes to a file of its own in the output directory,
//! which usually lives on a small `/tmp`. One noisy command could fill it, and every later file
//! would then be silently empty. So the files share a [`SpoolBudget`] (`--output-budget`):
//! when a file needs room, the oldest files of commands that have ended are emptied, oldest
//! first, each replaced by a line that says why (an earlier observation may name it); when only
//! running commands' files are left, the growing file stops and says so. A file also stops at
//! [`MAX_SPOOL_BYTES`], and when the disk refuses a write. Whenever output is not kept, the
//! command's observations say so ([`Spool::lost`]): nothing is lost without saying so.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// Bytes written to one file before it stops growing.
const MAX_SPOOL_BYTES: u64 = 512 * 1024 * 1024;

/// The bytes all full-output files may take together, shared by every shell of a sandboxd.
#[derive(Debug, Clone)]
pub(crate) struct SpoolBudget(Arc<Mutex<Ledger>>);

#[derive(Debug)]
struct Ledger {
    limit: u64,
    used: u64,
    next_id: u64,
    /// Oldest first.
    files: VecDeque<Entry>,
}

#[derive(Debug)]
struct Entry {
    id: u64,
    path: PathBuf,
    bytes: u64,
    /// Its command still writes to it.
    open: bool,
}

impl SpoolBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: u64) -> SpoolBudget {
        SpoolBudget(Arc::new(Mutex::new(Ledger {
            limit,
            used: 0,
            next_id: 0,
            files: VecDeque::new(),
        })))
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn register(&self, path: PathBuf) -> u64 {
        let mut ledger = self.ledger();
        ledger.next_id += 1;
        let id = ledger.next_id;
        ledger.files.push_back(Entry {
            id,
            path,
            bytes: 0,
            open: true,
        });
        id
    }

    /// Makes room for `bytes` more in file `id`, emptying the oldest ended commands' files;
    /// `Err` says why there is none.
    fn grow(&self, id: u64, bytes: u64) -> Result<(), String> {
        let mut ledger = self.ledger();
        let limit = ledger.limit;
        while ledger.used + bytes > limit {
            let Some(i) = ledger.files.iter().position(|e| !e.open && e.id != id) else {
                return Err(format!(
                    "the output files' budget of {limit} bytes (--output-budget) is full, and \
                     only running commands' files are left in it"
                ));
            };
            if let Some(old) = ledger.files.remove(i) {
                ledger.used -= old.bytes;
                empty(&old.path, limit);
            }
        }
        ledger.used += bytes;
        if let Some(entry) = ledger.files.iter_mut().find(|e| e.id == id) {
            entry.bytes += bytes;
        }
        Ok(())
    }

    fn close(&self, id: u64) {
        if let Some(entry) = self.ledger().files.iter_mut().find(|e| e.id == id) {
            entry.open = false;
        }
    }
}

/// Replaces an old full-output file by a line that says where its output went.
fn empty(path: &Path, limit: u64) {
    let note = format!(
        "[sandboxd: this command's output was removed to keep the output files within their \
         budget of {limit} bytes (--output-budget); newer output needed the room]\n"
    );
    if let Err(e) = std::fs::write(path, note) {
        tracing::warn!(path = %path.display(), error = %e, "cannot empty an old output file");
    }
}

/// The append-only file with one command's complete rendered output.
#[derive(Debug)]
pub(crate) struct Spool {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    written: u64,
    budget: SpoolBudget,
    id: u64,
    /// Why output stopped being kept, once it has.
    lost: Option<String>,
}

impl Spool {
    pub(crate) fn create(path: PathBuf, budget: SpoolBudget) -> Spool {
        let (file, lost) = match File::create(&path) {
            Ok(f) => (Some(BufWriter::new(f)), None),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot create the output file");
                (None, Some(format!("the file could not be created ({e})")))
            }
        };
        let id = budget.register(path.clone());
        Spool {
            path,
            file,
            written: 0,
            budget,
            id,
            lost,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Why the file does not hold the whole output, if it does not.
    pub(crate) fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    pub(crate) fn write_line(&mut self, line: &str) {
        if self.lost.is_some() {
            return;
        }
        let Some(file) = &mut self.file else { return };
        let bytes = line.len() as u64 + 1;
        let refused = if self.written + bytes > MAX_SPOOL_BYTES {
            Some(format!("a file keeps {MAX_SPOOL_BYTES} bytes at most"))
        } else {
            self.budget.grow(self.id, bytes).err()
        };
        if let Some(why) = refused {
            let _ = writeln!(
                file,
                "[sandboxd: output beyond this point was not kept: {why}]"
            );
            let _ = file.flush();
            self.lost = Some(why);
            return;
        }
        self.written += bytes;
        if let Err(e) = writeln!(file, "{line}") {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write the output file");
            self.lost = Some(format!("writing it failed ({e})"));
            self.file = None;
        }
    }

    pub(crate) fn flush(&mut self) {
        if let Some(file) = &mut self.file
            && let Err(e) = file.flush()
            && self.lost.is_none()
        {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write the output file");
            self.lost = Some(format!("writing it failed ({e})"));
            self.file = None;
        }
    }

    /// The command is over: its file may be emptied for newer ones.
    pub(crate) fn close(&mut self) {
        self.flush();
        self.budget.close(self.id);
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.budget.close(self.id);
    }
}

#[cfg(test)]
mod tests;
