//! Observation masking: the stub a `mask` surface op puts in the place of a tool result
//! (docs/log-format.md, "mask"). The call stays on the surface; the result stays in the log.

/// Starts every stub, so the planner knows a masked result (nothing left to prune or mask).
pub const MASKED_PREFIX: &str = "[masked: tool result of ";

/// Characters of the call's arguments the stub quotes.
const ARGS_CHARS: usize = 80;

/// Characters of a failed result's first line the stub keeps (the error probes' answer is at
/// most this long: docs/compaction-benchmark.md, `error`).
const FAILURE_CHARS: usize = 120;

/// Identifiers of the result the stub keeps, and the characters of each: ids, URLs, versions and
/// keys are what a fold loses first and what a later step asks for by name, and a few fit in a
/// line (the caller picks them by its identifier rule; the latest mentions first is its choice).
const IDS_KEPT: usize = 8;
const ID_CHARS: usize = 100;

/// `text` on one line (whitespace runs as one space), cut to `limit` characters (`…` when cut).
fn one_line(text: &str, limit: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= limit {
        return flat;
    }
    let mut cut: String = flat.chars().take(limit).collect();
    cut.push('…');
    cut
}

/// The call's arguments on one line, cut to [`ARGS_CHARS`] characters (`…` when cut).
pub fn short_args(arguments: &str) -> String {
    one_line(arguments, ARGS_CHARS)
}

/// The stub of the tool result at `seq`: what was there (the call, its size in the session's
/// tokens) and where it is in the log. `failure`: for a result that failed, what failed (its
/// first line, as the caller's error rule reads it) — kept on the surface, cut to
/// [`FAILURE_CHARS`] characters, so masking never hides that a call failed, nor how. `ids`: the
/// result's identifiers, of which the first [`IDS_KEPT`] are kept (each on one line, cut to
/// [`ID_CHARS`] characters; empty ones skipped).
pub fn stub(
    name: &str,
    arguments: &str,
    tokens: u64,
    seq: u64,
    failure: Option<&str>,
    ids: &[&str],
) -> String {
    let name = if name.is_empty() { "tool" } else { name };
    let failed = match failure.map(|f| one_line(f, FAILURE_CHARS)) {
        Some(line) if !line.is_empty() => format!("; it failed: {line}"),
        _ => String::new(),
    };
    let kept: Vec<String> = ids
        .iter()
        .map(|id| one_line(id, ID_CHARS))
        .filter(|id| !id.is_empty())
        .take(IDS_KEPT)
        .collect();
    let named = if kept.is_empty() {
        String::new()
    } else {
        format!("; ids: {}", kept.join(", "))
    };
    format!(
        "{MASKED_PREFIX}{name}({}), {tokens} tokens, seq {seq} in the log{failed}{named}]",
        short_args(arguments)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_names_the_call_its_size_and_its_seq() {
        let s = stub(
            "read_file",
            "{\"path\":\n \"src/a.rs\"}",
            1234,
            17,
            None,
            &[],
        );
        assert_eq!(
            s,
            "[masked: tool result of read_file({\"path\": \"src/a.rs\"}), 1234 tokens, seq 17 in the log]"
        );
        assert!(s.starts_with(MASKED_PREFIX));
    }

    #[test]
    fn long_arguments_are_cut_on_a_character() {
        let args = "é".repeat(200);
        let s = short_args(&args);
        assert_eq!(s.chars().count(), ARGS_CHARS + 1);
        assert!(s.ends_with('…'));
        assert_eq!(
            stub("", "", 0, 0, None, &[]),
            "[masked: tool result of tool(), 0 tokens, seq 0 in the log]"
        );
    }

    #[test]
    fn a_failed_result_keeps_its_first_line_on_one_line_and_bounded() {
        let s = stub("bash", "{}", 9, 4, Some("Exit code 1\tno  matches"), &[]);
        assert_eq!(
            s,
            "[masked: tool result of bash({}), 9 tokens, seq 4 in the log; it failed: Exit code 1 no matches]"
        );
        let long = "x".repeat(500);
        let s = stub("bash", "{}", 9, 4, Some(&long), &[]);
        let kept = s.split("; it failed: ").nth(1).unwrap();
        assert_eq!(kept.chars().count(), FAILURE_CHARS + 2, "{kept}"); // the line, `…` and `]`
                                                                       // an empty failure line adds nothing
        assert_eq!(
            stub("bash", "{}", 9, 4, Some(" "), &[]),
            stub("bash", "{}", 9, 4, None, &[])
        );
    }

    #[test]
    fn a_stub_keeps_the_first_ids_on_one_line() {
        let many: Vec<String> = (0..12).map(|k| format!("PROJ-{k}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let s = stub("Bash", "{}", 900, 3, Some("Exit code 1"), &refs);
        assert_eq!(
            s,
            "[masked: tool result of Bash({}), 900 tokens, seq 3 in the log; it failed: Exit code 1; \
             ids: PROJ-0, PROJ-1, PROJ-2, PROJ-3, PROJ-4, PROJ-5, PROJ-6, PROJ-7]"
        );
        let long = "x".repeat(300);
        let s = stub("t", "", 1, 1, None, &["", "a\nb", &long]);
        assert!(s.contains("; ids: a b, xxx") && s.ends_with("…]"));
    }
}
