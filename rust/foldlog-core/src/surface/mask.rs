//! Observation masking: the stub a `mask` surface op puts in the place of a tool result
//! (docs/log-format.md, "mask"). The call stays on the surface; the result stays in the log.

/// Starts every stub, so the planner knows a masked result (nothing left to prune or mask).
pub const MASKED_PREFIX: &str = "[masked: tool result of ";

/// Characters of the call's arguments the stub quotes.
const ARGS_CHARS: usize = 80;

/// The call's arguments on one line, cut to [`ARGS_CHARS`] characters (`…` when cut).
pub fn short_args(arguments: &str) -> String {
    let flat: String = arguments.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= ARGS_CHARS {
        return flat;
    }
    let mut cut: String = flat.chars().take(ARGS_CHARS).collect();
    cut.push('…');
    cut
}

/// The stub of the tool result at `seq`: what was there (the call, its size in the session's
/// tokens) and where it is in the log.
pub fn stub(name: &str, arguments: &str, tokens: u64, seq: u64) -> String {
    let name = if name.is_empty() { "tool" } else { name };
    format!(
        "{MASKED_PREFIX}{name}({}), {tokens} tokens, seq {seq} in the log]",
        short_args(arguments)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_names_the_call_its_size_and_its_seq() {
        let s = stub("read_file", "{\"path\":\n \"src/a.rs\"}", 1234, 17);
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
            stub("", "", 0, 0),
            "[masked: tool result of tool(), 0 tokens, seq 0 in the log]"
        );
    }
}
