use super::*;
use proptest::prelude::*;

pub(super) fn sys(t: u32) -> PlanMessage {
    PlanMessage::new(Role::System, t)
}
pub(super) fn user(t: u32) -> PlanMessage {
    PlanMessage::new(Role::User, t)
}
pub(super) fn asst(t: u32) -> PlanMessage {
    PlanMessage::new(Role::Assistant, t)
}
pub(super) fn tool(t: u32, caller: usize) -> PlanMessage {
    PlanMessage::tool_result(t, caller)
}
pub(super) fn digest(t: u32) -> PlanMessage {
    PlanMessage {
        is_digest: true,
        ..user(t)
    }
}
pub(super) fn error_result(t: u32, caller: usize) -> PlanMessage {
    PlanMessage {
        is_error_result: true,
        ..tool(t, caller)
    }
}
fn marked(t: u32) -> PlanMessage {
    PlanMessage {
        is_user_marked_keep: true,
        ..user(t)
    }
}

/// A small window so the default constants bite: tail budget 500, small user ≤ 150.
fn cfg() -> PlanConfig {
    PlanConfig {
        tail_tokens: 500,
        ..PlanConfig::with_window(1_000)
    }
}

fn run(msgs: &[PlanMessage], c: &PlanConfig) -> Plan {
    plan(msgs, c).expect("valid input")
}

#[test]
fn pinned_prefix_system_small_first_user_and_digests() {
    let c = cfg();
    assert_eq!(
        pinned_prefix_len(&[sys(10), user(100), digest(300), digest(50), asst(5)], &c),
        4
    );
    // a first user turn above min(1500, 15% of 1000 = 150) is not pinned, nor digests after it
    assert_eq!(pinned_prefix_len(&[sys(10), user(151), digest(300)], &c), 1);
    // a digest in first-user position is pinned as a digest
    assert_eq!(pinned_prefix_len(&[sys(10), digest(900), user(5)], &c), 2);
    // no system message
    assert_eq!(pinned_prefix_len(&[user(10), asst(10)], &c), 1);
    assert_eq!(pinned_prefix_len(&[asst(10), user(10)], &c), 0);
    assert_eq!(pinned_prefix_len(&[], &c), 0);
    // without a window the absolute limit applies
    let no_window = PlanConfig::default();
    assert_eq!(pinned_prefix_len(&[sys(1), user(1_500)], &no_window), 2);
    assert_eq!(pinned_prefix_len(&[sys(1), user(1_501)], &no_window), 1);
}

#[test]
fn tail_budget_is_capped_at_half_the_window() {
    assert_eq!(PlanConfig::with_window(1_000_000).tail_budget(), 16_384);
    assert_eq!(PlanConfig::with_window(10_000).tail_budget(), 5_000);
    assert_eq!(PlanConfig::default().tail_budget(), 16_384);
    assert_eq!(PlanConfig::with_window(1_000_000).small_user_limit(), 1_500);
    assert_eq!(PlanConfig::with_window(2_000).small_user_limit(), 300);
}

#[test]
fn tail_walks_back_until_the_budget() {
    // budget 500: 200 + 200 fit, the next 200 would pass it
    let msgs = [
        sys(10),
        user(10),
        asst(200),
        user(100),
        asst(200),
        user(200),
        asst(200),
    ];
    let p = run(&msgs, &cfg());
    assert_eq!(p.head, 2);
    assert_eq!(p.tail_start, 5);
    assert_eq!(p.kept, vec![3]); // the small user turn
    assert_eq!(p.fold, vec![2, 4]);
    assert_eq!(p.tokens_before, 920);
    assert_eq!(p.fold_tokens, 400);
    assert_eq!(p.tokens_after, 520);
    assert_eq!(p.skipped, None);
}

#[test]
fn tail_keeps_min_recent_even_over_budget() {
    let msgs = [
        sys(10),
        user(10),
        asst(900),
        asst(900),
        asst(900),
        asst(900),
    ];
    let p = run(&msgs, &cfg());
    assert_eq!(p.tail_start, 4);
    assert_eq!(p.fold, vec![2, 3]);
    let c = PlanConfig {
        min_recent_keep: 3,
        ..cfg()
    };
    assert_eq!(run(&msgs, &c).tail_start, 3);
}

#[test]
fn tail_never_starts_on_a_tool_result() {
    // the budget would start the tail at the second tool result: move back to the call
    let msgs = [
        sys(10),
        user(10),
        asst(300),
        asst(50),
        tool(100, 3),
        tool(100, 3),
        asst(200),
    ];
    let p = run(&msgs, &cfg());
    assert_eq!(p.tail_start, 3);
    assert_eq!(p.fold, vec![2]);
    // results separated from their call by another message still pull the call in
    let msgs = [
        sys(10),
        user(10),
        asst(600),
        asst(50),
        user(400),
        tool(100, 3),
        asst(10),
    ];
    assert_eq!(run(&msgs, &cfg()).tail_start, 3);
    // an orphan result cannot open the tail either
    let msgs = [
        sys(10),
        user(10),
        asst(600),
        asst(600),
        PlanMessage::new(Role::Tool, 10),
        asst(10),
    ];
    assert_eq!(run(&msgs, &cfg()).tail_start, 3);
}

#[test]
fn a_region_of_one_message_is_still_folded() {
    // a single huge message between the prefix and the tail floor
    let msgs = [sys(10), user(10), asst(5_000), asst(10), user(10)];
    let p = run(&msgs, &cfg());
    assert_eq!((p.tail_start, p.fold.clone()), (3, vec![2]));
    assert_eq!(p.skipped, None);
    // the tail floor is never lowered to find a region
    let msgs = [sys(10), user(5_000), asst(10)];
    let p = run(&msgs, &cfg());
    assert_eq!((p.head, p.tail_start), (1, 1));
    assert_eq!(p.skipped, Some(SkipReason::TooFewMessages));
    assert!(p.fold.is_empty() && p.kept.is_empty());
    assert_eq!(p.tokens_after, p.tokens_before);
    let one = PlanConfig {
        min_recent_keep: 1,
        ..cfg()
    };
    assert_eq!(run(&msgs, &one).fold, vec![1]);
}

#[test]
fn earlier_digests_and_small_user_turns_are_kept() {
    let msgs = [
        sys(10),
        user(10),
        asst(300),
        digest(800), // not directly after the prefix: in the region, kept as it is
        user(150),   // small (≤ 150): kept
        user(151),   // not small: folds
        asst(300),
        asst(300),
        user(10),
    ];
    let p = run(&msgs, &cfg());
    assert_eq!(p.tail_start, 7);
    assert_eq!(p.kept, vec![3, 4]);
    assert_eq!(p.fold, vec![2, 5, 6]);
}

#[test]
fn keep_errors_after_the_latest_digest_with_their_call_group() {
    let msgs = [
        sys(10),
        user(10),
        asst(50),             // 2: calls 3 and 4
        error_result(300, 2), // 3: before the digest: folds
        tool(300, 2),         // 4
        digest(100),          // 5
        asst(50),             // 6: calls 7 and 8
        tool(300, 6),         // 7: folds with its failing sibling? no: kept as part of the group
        error_result(300, 6), // 8: after the digest: kept, and the whole group with it
        asst(300),            // 9
        asst(300),            // 10: tail
        user(10),             // 11: tail
    ];
    let p = run(&msgs, &cfg());
    assert_eq!(p.tail_start, 10);
    assert_eq!(p.kept, vec![5, 6, 7, 8]);
    assert_eq!(p.fold, vec![2, 3, 4, 9]);
    // with policy none the errors fold too
    let none = PlanConfig {
        keep_policy: KeepPolicy::NONE,
        ..cfg()
    };
    let p = run(&msgs, &none);
    assert_eq!(p.kept, vec![5]);
    assert_eq!(p.fold, vec![2, 3, 4, 6, 7, 8, 9]);
}

#[test]
fn keep_user_marked_after_the_latest_digest() {
    let msgs = [
        sys(10),
        user(10),
        marked(400),
        digest(50),
        marked(400),
        asst(300),
        asst(300),
        user(10),
    ];
    let policy = PlanConfig {
        keep_policy: KeepPolicy::USER_MARKED,
        ..cfg()
    };
    let p = run(&msgs, &policy);
    assert_eq!(p.tail_start, 6);
    assert_eq!(p.kept, vec![3, 4]);
    assert_eq!(p.fold, vec![2, 5]);
    // the default policy (errors) does not protect marked turns
    assert_eq!(run(&msgs, &cfg()).kept, vec![3]);
}

#[test]
fn a_folded_call_never_leaves_a_result_behind() {
    let msgs = [
        sys(10),
        user(10),
        asst(50),
        tool(2_000, 2),
        tool(2_000, 2),
        asst(300),
        user(10),
    ];
    let p = run(&msgs, &cfg());
    assert_eq!(p.fold, vec![2, 3, 4]);
    assert!(p.kept.is_empty());
}

#[test]
fn economics_skip_small_folds_unless_forced() {
    let msgs = [sys(10), user(10), asst(199), asst(200), asst(300), user(10)];
    let p = run(&msgs, &cfg());
    assert_eq!(p.fold, vec![2, 3]);
    assert_eq!(p.fold_tokens, 399);
    assert_eq!(p.skipped, Some(SkipReason::Uneconomic));
    assert!(!p.should_fold());
    let forced = PlanConfig {
        force: true,
        ..cfg()
    };
    assert_eq!(run(&msgs, &forced).skipped, None);
    // everything kept: nothing to fold, even when forced
    let msgs = [sys(10), user(10), user(100), user(100), asst(300), user(10)];
    assert_eq!(run(&msgs, &forced).skipped, Some(SkipReason::NothingToFold));
}

#[test]
fn prune_candidates_are_large_unelided_folded_results() {
    let mut msgs = vec![
        sys(10),
        user(10),
        asst(50),
        tool(600, 2),
        tool(600, 2),
        tool(600, 2),
        asst(50),
        error_result(600, 6),
        asst(300),
        user(10),
    ];
    msgs[3].bytes = 4_000;
    msgs[4].bytes = 1_023;
    msgs[5].bytes = 4_000;
    msgs[5].is_elided = true;
    msgs[7].bytes = 9_000; // kept by the errors policy: protected
    let c = cfg();
    let p = run(&msgs, &c);
    assert_eq!(p.kept, vec![6, 7]);
    assert_eq!(prune_candidates(&msgs, &p, &c), vec![3]);
    let lower = PlanConfig {
        prune_min_bytes: 1_000,
        ..cfg()
    };
    assert_eq!(prune_candidates(&msgs, &p, &lower), vec![3, 4]);
}

#[test]
fn invalid_input_is_named() {
    let e = plan(&[user(1), tool(1, 0)], &cfg()).unwrap_err();
    assert_eq!(
        e,
        PlanError::CallerNotAssistant {
            index: 1,
            caller: 0
        }
    );
    assert!(e.to_string().contains("not an assistant"));
    let e = plan(&[asst(1), tool(1, 1)], &cfg()).unwrap_err();
    assert_eq!(
        e,
        PlanError::CallerNotBefore {
            index: 1,
            caller: 1
        }
    );
    let bad = PlanMessage {
        caller: Some(0),
        ..user(1)
    };
    assert_eq!(
        plan(&[asst(1), bad], &cfg()).unwrap_err(),
        PlanError::CallerOnNonTool { index: 1 }
    );
    let zero = PlanConfig {
        min_recent_keep: 0,
        ..cfg()
    };
    assert_eq!(plan(&[], &zero).unwrap_err(), PlanError::ZeroRecentKeep);
    // a digest that is not a user message would pin or keep an assistant without its results
    let bad = [
        user(5),
        PlanMessage {
            is_digest: true,
            ..asst(10)
        },
        tool(5, 1),
    ];
    let err = plan(&bad, &cfg()).unwrap_err();
    assert_eq!(
        err,
        PlanError::FlagOnWrongRole {
            index: 1,
            flag: "digest"
        }
    );
    assert_eq!(
        err.to_string(),
        "message 1 is flagged digest, which only a user message can be"
    );
    let bad = [
        user(5),
        PlanMessage {
            is_error_result: true,
            ..user(10)
        },
    ];
    assert_eq!(
        plan(&bad, &cfg()).unwrap_err(),
        PlanError::FlagOnWrongRole {
            index: 1,
            flag: "error-result"
        }
    );
    assert!(Role::parse("developer")
        .unwrap_err()
        .to_string()
        .contains("developer"));
    assert!(KeepPolicy::parse("erors").is_err());
    assert_eq!(
        KeepPolicy::parse("errors,user_marked").unwrap(),
        KeepPolicy {
            errors: true,
            user_marked: true
        }
    );
    assert_eq!(KeepPolicy::parse("none").unwrap(), KeepPolicy::NONE);
}

// --- properties ----------------------------------------------------------------------------

/// One step of a generated history.
#[derive(Clone, Debug)]
enum Step {
    User {
        tokens: u32,
        marked: bool,
    },
    Digest(u32),
    Reply(u32),
    Calls {
        call: u32,
        results: Vec<(u32, bool)>,
        interleave_user: bool,
    },
    Orphan(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1u32..3_000, any::<bool>()).prop_map(|(tokens, marked)| Step::User { tokens, marked }),
        1 => (10u32..2_000).prop_map(Step::Digest),
        3 => (1u32..3_000).prop_map(Step::Reply),
        5 => (1u32..500, prop::collection::vec((1u32..5_000, any::<bool>()), 0..4), prop::bool::weighted(0.1))
            .prop_map(|(call, results, interleave_user)| Step::Calls { call, results, interleave_user }),
        1 => (1u32..500).prop_map(Step::Orphan),
    ]
}

pub(super) fn history() -> impl Strategy<Value = Vec<PlanMessage>> {
    (any::<bool>(), prop::collection::vec(step(), 0..60)).prop_map(|(with_system, steps)| {
        let mut msgs = Vec::new();
        if with_system {
            msgs.push(sys(100));
        }
        for s in steps {
            match s {
                Step::User { tokens, marked: m } => {
                    msgs.push(if m { marked(tokens) } else { user(tokens) })
                }
                Step::Digest(t) => msgs.push(digest(t)),
                Step::Reply(t) => msgs.push(asst(t)),
                Step::Orphan(t) => msgs.push(PlanMessage::new(Role::Tool, t)),
                Step::Calls {
                    call,
                    results,
                    interleave_user,
                } => {
                    let c = msgs.len();
                    msgs.push(asst(call));
                    for (k, (t, failed)) in results.into_iter().enumerate() {
                        if interleave_user && k == 1 {
                            msgs.push(user(20));
                        }
                        let mut r = if failed {
                            error_result(t, c)
                        } else {
                            tool(t, c)
                        };
                        r.bytes = t * 4;
                        msgs.push(r);
                    }
                }
            }
        }
        msgs
    })
}

pub(super) fn config() -> impl Strategy<Value = PlanConfig> {
    (
        prop_oneof![Just(0u64), 500u64..200_000],
        100u64..20_000,
        1usize..5,
        0u64..2_000,
        0u64..1_000,
        0u8..4,
        any::<bool>(),
    )
        .prop_map(
            |(window, tail, keep, pin, min_fold, policy, force)| PlanConfig {
                context_window: window,
                tail_tokens: tail,
                min_recent_keep: keep,
                pinned_user_turn_tokens: pin,
                min_fold_tokens: min_fold,
                keep_policy: KeepPolicy {
                    errors: policy & 1 != 0,
                    user_marked: policy & 2 != 0,
                },
                force,
                prune_min_bytes: 1_024,
                fold_target: 0,
            },
        )
}

/// 0 prefix, 1 kept, 2 fold, 3 tail.
pub(super) fn classes(p: &Plan, n: usize) -> Vec<u8> {
    let mut class = vec![0u8; n];
    for c in class.iter_mut().take(n).skip(p.tail_start) {
        *c = 3;
    }
    for &i in &p.kept {
        class[i] = 1;
    }
    for &i in &p.fold {
        class[i] = 2;
    }
    class
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn plans_keep_the_invariants(msgs in history(), c in config()) {
        let p = plan(&msgs, &c).unwrap();
        let n = msgs.len();
        prop_assert!(p.head <= p.tail_start && p.tail_start <= n);
        prop_assert_eq!(p.head, pinned_prefix_len(&msgs, &c));

        // kept and fold partition the region exactly, in order
        let mut region: Vec<usize> = p.kept.iter().chain(&p.fold).copied().collect();
        region.sort_unstable();
        if p.skipped == Some(SkipReason::TooFewMessages) {
            prop_assert!(region.is_empty());
        } else {
            prop_assert_eq!(region, (p.head..p.tail_start).collect::<Vec<_>>());
        }
        prop_assert!(p.kept.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(p.fold.windows(2).all(|w| w[0] < w[1]));

        let class = classes(&p, n);
        for (i, m) in msgs.iter().enumerate() {
            // no tool result is ever separated from its call
            if let Some(c) = m.caller {
                prop_assert_eq!(class[i], class[c as usize], "result {} vs call {}", i, c);
            }
            // digests are never re-summarised
            if m.is_digest {
                prop_assert_ne!(class[i], 2);
            }
        }
        // the tail never opens on a tool result and keeps its floor
        if p.tail_start < n {
            prop_assert!(msgs[p.tail_start].role != Role::Tool || p.tail_start == p.head);
            prop_assert!(n - p.tail_start >= c.min_recent_keep.min(n - p.head));
        }
        // token accounting
        let fold_tokens: u64 = p.fold.iter().map(|&i| u64::from(msgs[i].tokens)).sum();
        prop_assert_eq!(p.fold_tokens, fold_tokens);
        prop_assert_eq!(p.tokens_after + p.fold_tokens, p.tokens_before);
        if p.skipped.is_none() {
            prop_assert!(!p.fold.is_empty());
            prop_assert!(c.force || p.fold_tokens >= c.min_fold_tokens);
        }
        // prune only touches folded tool results
        for i in prune_candidates(&msgs, &p, &c) {
            prop_assert_eq!(class[i], 2);
            prop_assert_eq!(msgs[i].role, Role::Tool);
        }
        // deterministic
        prop_assert_eq!(plan(&msgs, &c).unwrap(), p);
    }

    #[test]
    fn refolding_the_new_surface_keeps_the_invariants(msgs in history(), c in config()) {
        // apply the plan like compaction does (prefix + kept + digest + tail) and plan again
        let p = plan(&msgs, &c).unwrap();
        prop_assume!(p.should_fold());
        let mut order: Vec<usize> = (0..p.head).chain(p.kept.iter().copied()).collect();
        let digest_at = order.len();
        order.extend(p.tail_start..msgs.len());
        let mut remap = vec![u32::MAX; msgs.len()];
        for (new, &old) in order.iter().enumerate() {
            remap[old] = if new >= digest_at { new as u32 + 1 } else { new as u32 };
        }
        let mut next: Vec<PlanMessage> = Vec::new();
        for (k, &old) in order.iter().enumerate() {
            if k == digest_at {
                next.push(digest(200));
            }
            let mut m = msgs[old].clone();
            m.caller = m.caller.map(|c| remap[c as usize]);
            prop_assert!(m.caller.is_none_or(|c| c != u32::MAX), "a result lost its call");
            next.push(m);
        }
        if digest_at == order.len() {
            next.push(digest(200));
        }
        let q = plan(&next, &c).unwrap();
        let class = classes(&q, next.len());
        for (i, m) in next.iter().enumerate() {
            if m.is_digest {
                prop_assert_ne!(class[i], 2);
            }
        }
    }
}
