//! The kept-overflow rule (`compaction.md`, "Kept messages that outgrow the window").
//!
//! Small user turns and earlier digests are kept verbatim by every fold, whatever their age, so
//! over many folds they pile up; left alone, a fold would at some point no longer get the surface
//! under the trigger and the session would compact on every step. When the plan's surface after
//! the fold (the digest aside) is above `fold_target`, those kept messages are folded too, oldest
//! first, until it is not (or none are left). What the keep policy protects (error results with
//! their call group, user-marked turns) is protected only since the latest digest, so it cannot
//! pile up and stays kept. The released messages are named in `Plan::released`, so the fold is
//! reported.

use super::{KeepPolicy, PlanMessage, Role};

/// Moves the oldest kept user turns and digests into `fold` while the surface after the fold is
/// above `target`; returns the indices moved (ascending). `target` 0: no target, nothing moves.
pub(super) fn release_kept(
    messages: &[PlanMessage],
    policy: KeepPolicy,
    kept: &mut Vec<usize>,
    fold: &mut Vec<usize>,
    tokens_before: u64,
    target: u64,
) -> Vec<usize> {
    if target == 0 || kept.is_empty() {
        return Vec::new();
    }
    let tokens = |i: usize| u64::from(messages[i].tokens);
    let mut after = tokens_before - fold.iter().map(|&i| tokens(i)).sum::<u64>();
    if after <= target {
        return Vec::new();
    }
    // the keep policy's horizon, as the partition draws it
    let horizon = messages
        .iter()
        .rposition(|m| m.is_digest)
        .map_or(0, |d| d + 1);
    let mut released = Vec::new();
    for &i in kept.iter() {
        if after <= target {
            break;
        }
        let m = &messages[i];
        let protected = i >= horizon && policy.user_marked && m.is_user_marked_keep;
        if m.role == Role::User && !protected {
            after -= tokens(i);
            released.push(i);
        }
    }
    kept.retain(|i| released.binary_search(i).is_err());
    fold.extend(&released);
    fold.sort_unstable();
    released
}
