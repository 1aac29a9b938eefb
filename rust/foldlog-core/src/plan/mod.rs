//! Compaction planning: which part of a history a fold summarises and what stays verbatim.
//!
//! The planner is a pure, deterministic function over per-message facts (token count, role,
//! a few flags and the call links between an assistant message and its tool results). It
//! never looks at text, so it runs over cached per-event counts: planning a 100k-message
//! history is a few linear passes over plain integers.
//!
//! The shape of a plan (`compaction.md`, "Planning"):
//!
//! ```text
//! [0, head)            pinned prefix: system, the first user turn if small, digests after them
//! [head, tail_start)   the region, partitioned into `kept` (verbatim) and `fold` (summarised)
//! [tail_start, len)    the recent tail, verbatim
//! ```
//!
//! After the fold the surface is `prefix + kept + digest + tail`.

use std::fmt;

/// The chat role of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// Parses the OpenAI chat role names (`system`, `user`, `assistant`, `tool`).
    pub fn parse(s: &str) -> Result<Self, PlanError> {
        match s {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(PlanError::UnknownRole(other.to_owned())),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// What the planner knows about one message of the surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanMessage {
    /// Token count of the message (exact where the tokenizer is known).
    pub tokens: u32,
    pub role: Role,
    /// A digest of an earlier compaction: a `user/message` whose surface op is a fold (known
    /// from the log, never from the text; see `input`).
    pub is_digest: bool,
    /// A user message starting with `[[keep]]`, `[keep]`, `<keep>` or `<!-- keep -->`.
    pub is_user_marked_keep: bool,
    /// A tool result starting with `error:` or `blocked:` (or recorded as failed).
    pub is_error_result: bool,
    /// A tool result already replaced by the prune placeholder.
    pub is_elided: bool,
    /// For a tool result: the index of the assistant message holding its call.
    /// `None` for every other role and for orphan results.
    pub caller: Option<u32>,
    /// Size of the content in bytes (what prune would drop).
    pub bytes: u32,
}

impl PlanMessage {
    /// A plain message with no flags and no call link.
    pub fn new(role: Role, tokens: u32) -> Self {
        PlanMessage {
            tokens,
            role,
            is_digest: false,
            is_user_marked_keep: false,
            is_error_result: false,
            is_elided: false,
            caller: None,
            bytes: 0,
        }
    }

    /// A tool result answering a call of the assistant message at `caller`.
    pub fn tool_result(tokens: u32, caller: usize) -> Self {
        PlanMessage {
            caller: Some(caller as u32),
            ..PlanMessage::new(Role::Tool, tokens)
        }
    }
}

/// Which messages of the region the keep policy protects (besides digests and small user turns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeepPolicy {
    /// Tool results starting with `error:` / `blocked:` after the latest digest.
    pub errors: bool,
    /// User messages marked `[[keep]]` / `[keep]` / `<keep>` / `<!-- keep -->` after the latest digest.
    pub user_marked: bool,
}

impl KeepPolicy {
    pub const NONE: KeepPolicy = KeepPolicy {
        errors: false,
        user_marked: false,
    };
    pub const ERRORS: KeepPolicy = KeepPolicy {
        errors: true,
        user_marked: false,
    };
    pub const USER_MARKED: KeepPolicy = KeepPolicy {
        errors: false,
        user_marked: true,
    };

    /// Parses `none`, `errors`, `user_marked`, or a comma-separated combination
    /// (`errors,user_marked`).
    pub fn parse(s: &str) -> Result<Self, PlanError> {
        let mut policy = KeepPolicy::NONE;
        for part in s.split(',').map(str::trim) {
            match part {
                "none" => {}
                "errors" => policy.errors = true,
                "user_marked" => policy.user_marked = true,
                _ => return Err(PlanError::UnknownKeepPolicy(s.to_owned())),
            }
        }
        Ok(policy)
    }
}

/// The planning constants (`compaction.md`, "Constants").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanConfig {
    /// The model's context window in tokens; 0 means unknown (no window-relative caps).
    pub context_window: u64,
    /// Verbatim recent tail budget, capped at half the window.
    pub tail_tokens: u64,
    /// The tail always keeps at least this many messages (at least 1).
    pub min_recent_keep: usize,
    /// The first user turn is pinned (and a later user turn kept) only if it is this small,
    /// and never above 15% of the window.
    pub pinned_user_turn_tokens: u64,
    /// A fold smaller than this is skipped unless forced.
    pub min_fold_tokens: u64,
    pub keep_policy: KeepPolicy,
    /// Skip the economics check.
    pub force: bool,
    /// Tool results at least this large in the fold may be elided by prune.
    pub prune_min_bytes: u64,
    /// The tokens the surface should hold at most after the fold, the digest aside (foldlog
    /// gives halfway between the soft notice and the trigger); 0: no target. When kept messages
    /// keep the plan above it, the oldest are folded too (`release.rs`, the kept-overflow rule).
    pub fold_target: u64,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            context_window: 0,
            tail_tokens: 16_384,
            min_recent_keep: 2,
            pinned_user_turn_tokens: 1_500,
            min_fold_tokens: 400,
            keep_policy: KeepPolicy::ERRORS,
            force: false,
            prune_min_bytes: 1_024,
            fold_target: 0,
        }
    }
}

impl PlanConfig {
    /// The defaults for a model with this context window.
    pub fn with_window(context_window: u64) -> Self {
        PlanConfig {
            context_window,
            ..PlanConfig::default()
        }
    }

    /// `min(tail_tokens, 0.5 × window)`.
    pub fn tail_budget(&self) -> u64 {
        if self.context_window == 0 {
            self.tail_tokens
        } else {
            self.tail_tokens.min(self.context_window / 2)
        }
    }

    /// The largest user message that is pinned (first turn) or kept (later turns):
    /// `min(pinned_user_turn_tokens, 15% of the window)`.
    pub fn small_user_limit(&self) -> u64 {
        if self.context_window == 0 {
            self.pinned_user_turn_tokens
        } else {
            self.pinned_user_turn_tokens
                .min(self.context_window * 15 / 100)
        }
    }
}

/// Why a plan folds nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The region between the pinned prefix and the tail is empty.
    TooFewMessages,
    /// Every message of the region is kept verbatim.
    NothingToFold,
    /// The fold is under `min_fold_tokens` and the plan is not forced.
    Uneconomic,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::TooFewMessages => "too-few-messages",
            SkipReason::NothingToFold => "nothing-to-fold",
            SkipReason::Uneconomic => "uneconomic",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of planning. Indices refer to the input slice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Length of the pinned prefix: messages `[0, head)` stay verbatim in front.
    pub head: usize,
    /// First message of the verbatim tail: `[tail_start, len)`.
    pub tail_start: usize,
    /// Region messages kept verbatim (ascending).
    pub kept: Vec<usize>,
    /// Region messages to summarise (ascending).
    pub fold: Vec<usize>,
    /// Tokens of the whole history.
    pub tokens_before: u64,
    /// Tokens without the fold (the digest is not counted: its size is not known yet).
    pub tokens_after: u64,
    /// Tokens of the fold.
    pub fold_tokens: u64,
    /// Set when the plan folds nothing; `kept`/`fold` still describe the region (prune uses it).
    pub skipped: Option<SkipReason>,
    /// Messages the partition kept that the kept-overflow rule folds (ascending; all in `fold`):
    /// empty unless kept messages held the plan above `fold_target`.
    pub released: Vec<usize>,
}

impl Plan {
    /// Whether the plan asks for a fold.
    pub fn should_fold(&self) -> bool {
        self.skipped.is_none()
    }
}

/// Invalid planner input. Every variant names the offending message or value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    UnknownRole(String),
    UnknownKeepPolicy(String),
    ZeroRecentKeep,
    TooManyMessages(usize),
    CallerOnNonTool {
        index: usize,
    },
    CallerNotBefore {
        index: usize,
        caller: usize,
    },
    CallerNotAssistant {
        index: usize,
        caller: usize,
    },
    /// A flag on a role it does not describe (e.g. a digest that is not a user message): the
    /// prefix and partition rules assume each flag's role, and would split a call group.
    FlagOnWrongRole {
        index: usize,
        flag: &'static str,
    },
    /// Token counts (or seqs) and messages of different lengths (`input::plan_messages`).
    CountsMismatch {
        messages: usize,
        counts: usize,
    },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::UnknownRole(r) => {
                write!(f, "unknown role {r:?} (expected system, user, assistant or tool)")
            }
            PlanError::UnknownKeepPolicy(p) => write!(
                f,
                "unknown keep policy {p:?} (expected none, errors, user_marked or errors,user_marked)"
            ),
            PlanError::ZeroRecentKeep => f.write_str("min_recent_keep must be at least 1"),
            PlanError::CountsMismatch { messages, counts } => write!(
                f,
                "{counts} token counts for {messages} messages: one count per message is needed"
            ),
            PlanError::TooManyMessages(n) => {
                write!(f, "{n} messages is more than the planner supports (u32 indices)")
            }
            PlanError::CallerOnNonTool { index } => {
                write!(f, "message {index} has a caller but is not a tool result")
            }
            PlanError::CallerNotBefore { index, caller } => write!(
                f,
                "tool result {index} names caller {caller}, which is not an earlier message"
            ),
            PlanError::CallerNotAssistant { index, caller } => write!(
                f,
                "tool result {index} names caller {caller}, which is not an assistant message"
            ),
            PlanError::FlagOnWrongRole { index, flag } => {
                let role = if *flag == "digest" || *flag == "user-marked" { "user" } else { "tool" };
                write!(f, "message {index} is flagged {flag}, which only a {role} message can be")
            }
        }
    }
}

impl std::error::Error for PlanError {}

fn validate(messages: &[PlanMessage], cfg: &PlanConfig) -> Result<(), PlanError> {
    if cfg.min_recent_keep == 0 {
        return Err(PlanError::ZeroRecentKeep);
    }
    if messages.len() > u32::MAX as usize {
        return Err(PlanError::TooManyMessages(messages.len()));
    }
    for (index, m) in messages.iter().enumerate() {
        let misflagged = if m.role != Role::User && m.is_digest {
            Some("digest")
        } else if m.role != Role::User && m.is_user_marked_keep {
            Some("user-marked")
        } else if m.role != Role::Tool && m.is_error_result {
            Some("error-result")
        } else if m.role != Role::Tool && m.is_elided {
            Some("elided")
        } else {
            None
        };
        if let Some(flag) = misflagged {
            return Err(PlanError::FlagOnWrongRole { index, flag });
        }
        if let Some(c) = m.caller {
            let caller = c as usize;
            if m.role != Role::Tool {
                return Err(PlanError::CallerOnNonTool { index });
            }
            if caller >= index {
                return Err(PlanError::CallerNotBefore { index, caller });
            }
            if messages[caller].role != Role::Assistant {
                return Err(PlanError::CallerNotAssistant { index, caller });
            }
        }
    }
    Ok(())
}

/// Length of the pinned prefix: the system message; the first user message if it is not a
/// digest and is small; any digests directly after those.
pub fn pinned_prefix_len(messages: &[PlanMessage], cfg: &PlanConfig) -> usize {
    let mut i = 0;
    if messages.first().is_some_and(|m| m.role == Role::System) {
        i += 1;
    }
    if let Some(m) = messages.get(i) {
        if m.role == Role::User && !m.is_digest && u64::from(m.tokens) <= cfg.small_user_limit() {
            i += 1;
        }
    }
    while messages.get(i).is_some_and(|m| m.is_digest) {
        i += 1;
    }
    i
}

/// Where the verbatim tail starts: walk back from the newest message adding token counts
/// until the next one would pass `budget`, keeping at least `floor` messages; then move back
/// so the tail neither starts on a tool result nor holds a result whose call is outside it.
fn tail_start(messages: &[PlanMessage], head: usize, budget: u64, floor: usize) -> usize {
    let n = messages.len();
    let mut start = n;
    let mut acc: u64 = 0;
    while start > head {
        let t = u64::from(messages[start - 1].tokens);
        if n - start >= floor && acc + t > budget {
            break;
        }
        acc += t;
        start -= 1;
    }
    // Align. `checked` marks how far down the tail has been scanned for callers, so the
    // whole alignment is linear however often the start moves.
    let mut checked = n;
    loop {
        let mut target = start;
        for m in &messages[start..checked] {
            if let Some(c) = m.caller {
                target = target.min(c as usize);
            }
        }
        checked = start;
        if target < start {
            start = target.max(head);
            continue;
        }
        // An orphan result (no call to move back to) still must not open the tail.
        if start > head && start < n && messages[start].role == Role::Tool {
            start -= 1;
            continue;
        }
        return start;
    }
}

/// Splits the region `[head, tail_start)` into kept and fold (both ascending).
fn partition(
    messages: &[PlanMessage],
    cfg: &PlanConfig,
    head: usize,
    tail: usize,
) -> (Vec<usize>, Vec<usize>) {
    let small = cfg.small_user_limit();
    let policy = cfg.keep_policy;
    // The keep policy only protects what came after the latest digest: older protected
    // messages were kept by the previous fold and may fold now, so kept never grows forever.
    let horizon = messages
        .iter()
        .rposition(|m| m.is_digest)
        .map_or(0, |d| d + 1);
    let len = tail - head;
    let mut keep = vec![false; len];
    // group_kept[k]: the assistant message at head + k keeps its whole call group.
    let mut group_kept = vec![false; len];
    for (k, m) in messages[head..tail].iter().enumerate() {
        let i = head + k;
        let after_digest = i >= horizon;
        let kept = m.is_digest
            || (m.role == Role::User && u64::from(m.tokens) <= small)
            || (after_digest && policy.errors && m.role == Role::Tool && m.is_error_result)
            || (after_digest
                && policy.user_marked
                && m.role == Role::User
                && m.is_user_marked_keep);
        if kept {
            keep[k] = true;
            // The tail alignment keeps every caller of a region result out of the tail, and
            // the prefix holds no assistant messages, so a caller at or after head is in the region.
            if let Some(c) = m.caller.map(|c| c as usize).filter(|&c| c >= head) {
                group_kept[c - head] = true;
            }
        }
    }
    let kept_count = keep.iter().filter(|&&k| k).count();
    let mut kept = Vec::with_capacity(kept_count * 2);
    let mut fold = Vec::with_capacity(len - kept_count);
    for (k, m) in messages[head..tail].iter().enumerate() {
        let in_kept_group = match (m.role, m.caller) {
            (Role::Assistant, _) => group_kept[k],
            (Role::Tool, Some(c)) if c as usize >= head => group_kept[c as usize - head],
            _ => false,
        };
        if keep[k] || in_kept_group {
            kept.push(head + k);
        } else {
            fold.push(head + k);
        }
    }
    (kept, fold)
}

/// Plans a compaction of `messages` (the current surface, oldest first).
pub fn plan(messages: &[PlanMessage], cfg: &PlanConfig) -> Result<Plan, PlanError> {
    validate(messages, cfg)?;
    let head = pinned_prefix_len(messages, cfg);
    let tokens_before: u64 = messages.iter().map(|m| u64::from(m.tokens)).sum();
    let budget = cfg.tail_budget();

    // The region should hold at least 2 messages; failing that a region of 1 is still
    // planned (a single huge message is worth folding). The tail floor is never lowered
    // below `min_recent_keep` for it.
    let start = tail_start(messages, head, budget, cfg.min_recent_keep);
    if start <= head {
        return Ok(Plan {
            head,
            tail_start: head.max(start),
            kept: Vec::new(),
            fold: Vec::new(),
            tokens_before,
            tokens_after: tokens_before,
            fold_tokens: 0,
            skipped: Some(SkipReason::TooFewMessages),
            released: Vec::new(),
        });
    }

    let (mut kept, mut fold) = partition(messages, cfg, head, start);
    let released = release::release_kept(
        messages,
        cfg.keep_policy,
        &mut kept,
        &mut fold,
        tokens_before,
        cfg.fold_target,
    );
    let fold_tokens: u64 = fold.iter().map(|&i| u64::from(messages[i].tokens)).sum();
    let skipped = if fold.is_empty() {
        Some(SkipReason::NothingToFold)
    } else if fold_tokens < cfg.min_fold_tokens && !cfg.force {
        Some(SkipReason::Uneconomic)
    } else {
        None
    };
    Ok(Plan {
        head,
        tail_start: start,
        kept,
        fold,
        tokens_before,
        tokens_after: tokens_before - fold_tokens,
        fold_tokens,
        skipped,
        released,
    })
}

/// Tool results of the plan's fold that prune may replace with the elision placeholder:
/// at least `prune_min_bytes` large and not already elided. Kept results (the keep policy)
/// are not in the fold, so they are never candidates. Works on skipped plans too: pruning is
/// what runs before (and sometimes instead of) a summary.
pub fn prune_candidates(messages: &[PlanMessage], plan: &Plan, cfg: &PlanConfig) -> Vec<usize> {
    plan.fold
        .iter()
        .copied()
        .filter(|&i| {
            let m = &messages[i];
            m.role == Role::Tool && !m.is_elided && u64::from(m.bytes) >= cfg.prune_min_bytes
        })
        .collect()
}

pub mod input;
mod release;
#[cfg(test)]
mod release_tests;
#[cfg(test)]
mod tests;
