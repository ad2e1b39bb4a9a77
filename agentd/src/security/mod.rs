//! The security analyzer and the confirmation policy (OpenHands V0's `SecurityAnalyzer` and
//! `confirmation_mode`): every runnable action the agent asks for gets a risk
//! (`security_risk`: −1 unknown, 0 low, 1 medium, 2 high) from the analyzer, and in
//! confirmation mode the ones that are not low wait for the user.
//!
//! Two analyzers, chosen by `[security] security_analyzer`:
//! - `llm`: the risk the model declared in the tool call's `security_risk` parameter (the
//!   CodeAct tools ask for it); anything else is unknown.
//! - `rules`: a table of patterns over commands and cells, file paths and URLs ([`rules`]),
//!   extended by `[[security.rules]]` in the settings file. Its answer does not depend on what
//!   the model says.
//!
//! With confirmation mode on (`--confirm`, `[security] confirmation_mode`), a runnable action
//! of any type (MCP calls and file writes included, which the reference lets through) waits
//! when there is no analyzer or its risk is not low; a low one is confirmed automatically.

pub(crate) mod rules;

use protocol::Action;
use protocol::action::SecurityRisk;
use serde::Deserialize;

use rules::RuleSet;
pub use rules::{RuleSetting, RuleTarget, RulesError};

/// A risk level (the wire's `security_risk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Not known (−1).
    Unknown,
    /// Low (0).
    Low,
    /// Medium (1).
    Medium,
    /// High (2).
    High,
}

impl Risk {
    /// The wire value.
    pub const fn as_i64(self) -> SecurityRisk {
        match self {
            Risk::Unknown => -1,
            Risk::Low => 0,
            Risk::Medium => 1,
            Risk::High => 2,
        }
    }

    /// The level of a wire value (other values are unknown).
    pub const fn from_i64(value: SecurityRisk) -> Risk {
        match value {
            0 => Risk::Low,
            1 => Risk::Medium,
            2 => Risk::High,
            _ => Risk::Unknown,
        }
    }

    /// The level a model names in a tool call's `security_risk` (`LOW`, `MEDIUM`, `HIGH`, in
    /// any case); `None` for anything else.
    pub(crate) fn from_label(label: &str) -> Option<Risk> {
        match label.trim().to_ascii_uppercase().as_str() {
            "LOW" => Some(Risk::Low),
            "MEDIUM" => Some(Risk::Medium),
            "HIGH" => Some(Risk::High),
            _ => None,
        }
    }

    /// The name people read (`low`...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Risk::Unknown => "unknown",
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// `[security] security_analyzer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AnalyzerKind {
    /// The risk the model declared.
    Llm,
    /// The rule table.
    Rules,
}

/// `[security]` of the settings file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecuritySection {
    /// Hold runnable actions that are not low-risk for the user's confirmation.
    pub confirmation_mode: Option<bool>,
    /// Which analyzer judges actions.
    pub security_analyzer: Option<AnalyzerKind>,
    /// Rules added to the `rules` analyzer's table.
    #[serde(default)]
    pub rules: Vec<RuleSetting>,
}

/// What judges actions.
#[derive(Debug, Clone)]
pub enum SecurityAnalyzer {
    /// The model's own `security_risk`.
    Llm,
    /// The rule table.
    Rules(RuleSet),
}

impl SecurityAnalyzer {
    /// The analyzer of `kind`; `extra` rules extend the `rules` analyzer's table (and are
    /// checked even for `llm`, so that a bad pattern is reported whichever is chosen).
    pub fn new(kind: AnalyzerKind, extra: &[RuleSetting]) -> Result<SecurityAnalyzer, RulesError> {
        let rules = RuleSet::with_defaults(extra)?;
        Ok(match kind {
            AnalyzerKind::Llm => SecurityAnalyzer::Llm,
            AnalyzerKind::Rules => SecurityAnalyzer::Rules(rules),
        })
    }

    /// The risk of `action`.
    pub(crate) fn analyze(&self, action: &Action, workspace: Option<&str>) -> Risk {
        match self {
            SecurityAnalyzer::Llm => action
                .kind
                .security_risk()
                .map_or(Risk::Unknown, Risk::from_i64),
            SecurityAnalyzer::Rules(rules) => rules.risk(&action.kind, workspace),
        }
    }
}

/// The run's security settings.
#[derive(Debug, Clone, Default)]
pub struct SecurityConfig {
    /// Hold actions for the user's confirmation.
    pub confirmation_mode: bool,
    /// The analyzer, if any.
    pub analyzer: Option<SecurityAnalyzer>,
    /// The sandbox's workspace directory (for "writes outside the workspace"), once known.
    pub workspace: Option<String>,
}

impl SecurityConfig {
    /// Gives `action` (the agent's, about to be recorded) its risk and says whether it must
    /// wait for the user's confirmation. Only runnable actions are judged.
    pub(crate) fn judge(&self, action: &mut Action) -> bool {
        if !action.kind.is_runnable() {
            return false;
        }
        let risk = match &self.analyzer {
            Some(analyzer) => analyzer.analyze(action, self.workspace.as_deref()),
            // The reference: without an analyzer, confirmation mode trusts no declared risk.
            None if self.confirmation_mode => Risk::Unknown,
            None => return false,
        };
        action.kind.set_security_risk(risk.as_i64());
        tracing::debug!(
            action = action.kind.action_type().as_str(),
            risk = risk.as_str(),
            "risk"
        );
        self.confirmation_mode && (self.analyzer.is_none() || risk != Risk::Low)
    }
}

#[cfg(test)]
mod tests;
