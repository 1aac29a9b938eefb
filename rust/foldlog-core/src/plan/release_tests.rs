//! The kept-overflow rule: kept messages that hold a fold above its target are folded too.
use super::tests::{asst, classes, config, digest, history, sys, tool, user};
use super::*;
use proptest::prelude::*;

/// Window 1,000: tail budget 500, small user turns ≤ 150.
fn cfg(target: u64) -> PlanConfig {
    PlanConfig {
        tail_tokens: 500,
        fold_target: target,
        ..PlanConfig::with_window(1_000)
    }
}

#[test]
fn kept_user_turns_above_the_target_fold_oldest_first() {
    let msgs = [
        sys(10),
        user(100), // pinned
        user(150), // 2: small, kept
        asst(100),
        user(150), // 4
        asst(100),
        user(150), // 6
        asst(100),
        user(150), // 8
        asst(100),
        asst(400), // 10: the tail
        user(50),
    ];
    let free = plan(&msgs, &cfg(0)).unwrap();
    assert_eq!(free.kept, vec![2, 4, 6, 8]);
    assert_eq!(free.tokens_after, 1_160); // above a trigger of 800, because of the kept turns
    assert!(free.released.is_empty());

    let p = plan(&msgs, &cfg(800)).unwrap();
    // 1,160 → 1,010 → 860 → 710: three turns released, the newest kept
    assert_eq!(p.released, vec![2, 4, 6]);
    assert_eq!(p.kept, vec![8]);
    assert_eq!(p.fold, vec![2, 3, 4, 5, 6, 7, 9]);
    assert_eq!(p.tokens_after, 710);
    assert!(p.should_fold());
    // under the target nothing is released
    assert!(plan(&msgs, &cfg(1_200)).unwrap().released.is_empty());
}

#[test]
fn what_the_keep_policy_protects_stays_kept() {
    let mut error = tool(200, 2);
    error.is_error_result = true;
    let mut marked = user(100);
    marked.is_user_marked_keep = true;
    let msgs = [
        sys(10),
        user(100),
        asst(50), // 2: its error result keeps the group (after the latest digest)
        error,
        tool(100, 2),
        marked,    // 5: user-marked, protected by `user_marked`
        user(100), // 6: a small turn: released
        asst(300),
        asst(400), // the tail
        user(50),
    ];
    let c = PlanConfig {
        keep_policy: KeepPolicy::parse("errors,user_marked").unwrap(),
        ..cfg(300)
    };
    assert_eq!(
        plan(
            &msgs,
            &PlanConfig {
                fold_target: 0,
                ..c.clone()
            }
        )
        .unwrap()
        .kept,
        vec![2, 3, 4, 5, 6]
    );
    let p = plan(&msgs, &c).unwrap();
    assert_eq!(p.released, vec![6]);
    assert_eq!(p.kept, vec![2, 3, 4, 5]);
    assert!(p.tokens_after > 300); // above the target, but nothing more may fold
}

/// Applies a plan as compaction does: prefix + kept + a digest of `digest_tokens` + tail.
fn fold(msgs: &[PlanMessage], p: &Plan, digest_tokens: u32) -> Vec<PlanMessage> {
    let mut next: Vec<PlanMessage> = msgs[..p.head].to_vec();
    next.extend(p.kept.iter().map(|&i| msgs[i].clone()));
    next.push(digest(digest_tokens));
    next.extend(msgs[p.tail_start..].iter().cloned());
    next
}

/// A session of many turns (a small user message, then the assistant's work) folded each time
/// it passes the trigger; returns the largest surface a fold left behind (its digest included)
/// and how many messages the rule released.
fn session_of_folds(target: u64) -> (u64, usize) {
    let trigger = 800;
    let mut msgs = vec![sys(10), user(100)];
    let (mut worst, mut released) = (0, 0);
    for _ in 0..60 {
        msgs.extend([user(60), asst(120), asst(120)]);
        let total: u64 = msgs.iter().map(|m| u64::from(m.tokens)).sum();
        if total < trigger {
            continue;
        }
        let p = plan(&msgs, &cfg(target)).unwrap();
        if !p.should_fold() {
            continue; // too small a fold yet: the next turns add to it
        }
        released += p.released.len();
        msgs = fold(&msgs, &p, 40);
        worst = worst.max(msgs.iter().map(|m| u64::from(m.tokens)).sum());
    }
    (worst, released)
}

#[test]
fn repeated_folds_stay_under_the_trigger() {
    // without the rule every fold keeps each user turn and digest: the surface grows past the
    // trigger and at last nothing can be folded at all
    let (grown, none) = session_of_folds(0);
    assert!(grown > 800, "{grown}");
    assert_eq!(none, 0);
    // with it, every fold leaves the surface (its new digest included) under the trigger
    let (worst, released) = session_of_folds(760);
    assert!(worst < 800, "{worst}");
    assert!(released > 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn released_messages_are_only_what_the_target_needs(
        msgs in history(),
        c in config(),
        target in prop_oneof![Just(0u64), 100u64..100_000],
    ) {
        let base = plan(&msgs, &c).unwrap();
        let cfg = PlanConfig { fold_target: target, ..c };
        let p = plan(&msgs, &cfg).unwrap();
        prop_assert!(p.released.windows(2).all(|w| w[0] < w[1]));
        if target == 0 || base.tokens_after <= target {
            prop_assert_eq!(&p, &base);
        }
        for i in &p.released {
            prop_assert!(p.fold.binary_search(i).is_ok() && base.kept.binary_search(i).is_ok());
        }
        let mut region: Vec<usize> = p.kept.iter().chain(&p.fold).copied().collect();
        region.sort_unstable();
        let mut base_region: Vec<usize> = base.kept.iter().chain(&base.fold).copied().collect();
        base_region.sort_unstable();
        prop_assert_eq!(region, base_region);
        prop_assert_eq!(p.tokens_after + p.fold_tokens, p.tokens_before);
        let horizon = msgs.iter().rposition(|m| m.is_digest).map_or(0, |d| d + 1);
        for &i in &p.released {
            prop_assert_eq!(msgs[i].role, Role::User);
            prop_assert!(!(i >= horizon && cfg.keep_policy.user_marked && msgs[i].is_user_marked_keep));
        }
        if target > 0 && p.tokens_after > target {
            // only what the keep policy protects is left
            for &i in &p.kept {
                let m = &msgs[i];
                let protected = m.role != Role::User
                    || (i >= horizon && cfg.keep_policy.user_marked && m.is_user_marked_keep);
                prop_assert!(protected, "kept message {} left above the target", i);
            }
        }
        let class = classes(&p, msgs.len());
        for (i, m) in msgs.iter().enumerate() {
            if let Some(c) = m.caller {
                prop_assert_eq!(class[i], class[c as usize], "result {} vs call {}", i, c);
            }
            if m.is_digest && class[i] == 2 {
                prop_assert!(p.released.contains(&i), "digest {} folded without the rule", i);
            }
        }
    }
}
