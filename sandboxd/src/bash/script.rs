//! The bash code sandboxd types into a shell: the line that frames a new shell and the probe
//! line that asks it, once it is verified idle at its prompt, for the state of the command
//! that just ended (docs/protocol.md §4.1; the markers are [`super::framing`]'s).
//!
//! Two functions carry the framing, both read-only so that no command can redefine or unset
//! them, and both writing to `/dev/tty` so that a closed or redirected stderr cannot silence
//! them:
//! - `__sbx_pc` (`PROMPT_COMMAND`) prints the prompt *hint*, which anyone can forge: it only
//!   makes sandboxd look at where bash is blocked.
//! - `__sbx_ack NONCE` prints the *acknowledgement* with the exit code, `$!`, user, host, cwd
//!   and `PATH`, tagged with a nonce that sandboxd makes up after the command ended and types
//!   only once bash is blocked in its own command reader: no command ever sees it.
//!
//! Both re-install the prompt variables every time, so a command that unsets or changes them
//! only affects itself. Line editing (readline) must stay off, for bash to read commands with
//! its plain reader; `set +o emacs` switches bash's input to the terminal, which is safe only
//! in a line read from the terminal (the set-up line, the probe, [`EDITING_OFF_LINE`]) and
//! would make a `PROMPT_COMMAND` read commands itself. So the hint says `E` instead of `P` when
//! a command turned editing on, and sandboxd answers with that line.

use std::path::Path;

use sandbox_common::shell_quote;

/// Sets the prompt variables: `PS0` prints the start marker (through a subshell writing to the
/// terminal when stderr is not the terminal), `PS1` and `PS2` are empty, `PROMPT_COMMAND` runs
/// the hint.
const REFRAME: &str = r#"if [[ -t 2 ]]; then PS0=$'\e_sbxS\e\\'; else PS0='$(builtin printf "\e_sbxS\e\\\\" >/dev/tty)'; fi; PS1=''; PS2=''; PROMPT_COMMAND=__sbx_pc"#;

/// Turns line editing off (see the module documentation for where this may run).
const EDITING_OFF: &str = "if [[ -o emacs || -o vi ]]; then builtin set +o emacs +o vi; fi";

/// The line sandboxd types when the hint says that line editing is on.
pub(crate) const EDITING_OFF_LINE: &str = " \\builtin set +o emacs +o vi\n";

/// The line that turns a fresh bash into a framed session: the two functions, no history
/// expansion, no history of the probe lines (they start with a space), no pagers, the
/// reference's git alias, and the working directory.
pub(crate) fn init_line(cwd: &Path) -> String {
    let cwd = shell_quote(&cwd.to_string_lossy());
    format!(
        "__sbx_pc() {{ {REFRAME}; builtin local __sbx_k=P; if [[ -o emacs || -o vi ]]; then __sbx_k=E; fi; \
         builtin printf '\\e_sbx%s\\e\\\\' \"$__sbx_k\" >/dev/tty; }}; \
         __sbx_ack() {{ builtin local __sbx_e=$? __sbx_u='\\u' __sbx_h='\\h'; {REFRAME}; {EDITING_OFF}; \
         builtin printf '\\e_sbxA%s\\037%s\\037%s\\037%s\\037%s\\037%s\\037%s\\e\\\\' \
         \"$1\" \"$__sbx_e\" \"${{!-}}\" \"${{__sbx_u@P}}\" \"${{__sbx_h@P}}\" \"$PWD\" \"$PATH\" >/dev/tty; \
         [[ $- == *e* ]] || builtin return \"$__sbx_e\"; }}; \
         builtin readonly -f __sbx_pc __sbx_ack; {REFRAME}; {EDITING_OFF}; \
         HISTCONTROL=\"${{HISTCONTROL:+$HISTCONTROL:}}ignorespace\"; set +H; unset HISTFILE; \
         alias git='git --no-pager'; export PAGER=cat GIT_PAGER=cat; cd -- {cwd}\n"
    )
}

/// The probe: acknowledges the command that ended with `nonce`. `\` keeps an alias from
/// replacing the function; `"$_"` as the last word keeps `$_` as the command left it; under
/// `set -e` the function returns 0 (a failing probe would end the shell), elsewhere the
/// command's own status, so that `$?` is the command's in the next command.
pub(crate) fn probe_line(nonce: &str) -> String {
    format!(" \\__sbx_ack {nonce} \"$_\"\n")
}

#[cfg(test)]
mod tests;
