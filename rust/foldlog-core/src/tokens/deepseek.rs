//! Loading DeepSeek V4's `tokenizer.json` (the Hugging Face `tokenizers` format) into our engine.
//!
//! We support exactly the shape that file has, and refuse anything else with a clear error
//! rather than count differently from `tokenizers`: no normalizer (or an empty `Sequence`), a
//! pre-tokenizer that is a `Sequence` of `Split` regexes with `Isolated` behaviour followed by
//! a `ByteLevel` step that does not split (`use_regex: false`), a byte-level BPE model without
//! dropout, unknown token or word affixes, and added tokens without `lstrip`/`rstrip`/
//! `single_word`.

use std::path::Path;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;
use rustc_hash::FxHashMap;
use serde_json::Value;

use super::bpe::{Bpe, Ranks};
use super::pretok;
use super::TokenError;

/// Added tokens, matched before pre-tokenization the way `tokenizers` does: first those not
/// subject to normalization, then (inside what is left) the normalized ones; each pass is a
/// leftmost-longest scan.
pub(crate) struct AddedTokens {
    pub(crate) passes: Vec<(AhoCorasick, Vec<u32>)>,
    pub(crate) by_content: FxHashMap<String, u32>,
}

pub(crate) struct Loaded {
    pub(crate) added: AddedTokens,
    pub(crate) splits: Vec<Regex>,
    pub(crate) bpe: Bpe,
}

/// GPT-2's reversible byte ↔ printable-character table used by `ByteLevel`.
fn byte_level_chars() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut extra = 0u32;
    for b in 0..=255u32 {
        let printable =
            (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b);
        table[b as usize] = if printable {
            char::from_u32(b).expect("latin-1 is valid")
        } else {
            extra += 1;
            char::from_u32(255 + extra).expect("small code point")
        };
    }
    table
}

fn malformed(what: impl Into<String>) -> TokenError {
    TokenError::Malformed(what.into())
}

fn field<'a>(v: &'a Value, key: &str, ctx: &str) -> Result<&'a Value, TokenError> {
    v.get(key)
        .ok_or_else(|| malformed(format!("{ctx}: missing `{key}`")))
}

fn check_normalizer(root: &Value) -> Result<(), TokenError> {
    match root.get("normalizer") {
        None | Some(Value::Null) => Ok(()),
        Some(n)
            if n["type"] == "Sequence"
                && n["normalizers"].as_array().is_some_and(|a| a.is_empty()) =>
        {
            Ok(())
        }
        Some(n) => Err(TokenError::Unsupported(format!("normalizer {n}"))),
    }
}

fn load_splits(root: &Value) -> Result<Vec<Regex>, TokenError> {
    let pre = field(root, "pre_tokenizer", "tokenizer.json")?;
    let steps = match pre["type"].as_str() {
        Some("Sequence") => pre["pretokenizers"].as_array().cloned().unwrap_or_default(),
        _ => vec![pre.clone()],
    };
    let mut splits = Vec::new();
    let mut saw_byte_level = false;
    for step in &steps {
        match step["type"].as_str() {
            Some("Split") if !saw_byte_level => {
                let pattern = step["pattern"]["Regex"].as_str().ok_or_else(|| {
                    TokenError::Unsupported(format!("Split without a Regex pattern: {step}"))
                })?;
                if step["behavior"] != "Isolated" || step["invert"] != false {
                    return Err(TokenError::Unsupported(format!("Split behaviour {step}")));
                }
                let rewritten = pretok::rewrite_lookahead(pattern).ok_or_else(|| {
                    TokenError::Unsupported(format!("look-around in pattern {pattern:?}"))
                })?;
                let re = Regex::new(&rewritten)
                    .map_err(|e| malformed(format!("pattern {pattern:?}: {e}")))?;
                splits.push(re);
            }
            Some("ByteLevel") if !saw_byte_level => {
                if step["use_regex"] != false || step["add_prefix_space"] != false {
                    return Err(TokenError::Unsupported(format!(
                        "ByteLevel settings {step}"
                    )));
                }
                saw_byte_level = true;
            }
            _ => {
                return Err(TokenError::Unsupported(format!(
                    "pre-tokenizer step {step}"
                )))
            }
        }
    }
    if !saw_byte_level {
        return Err(TokenError::Unsupported(
            "pre-tokenizer without a final ByteLevel step".into(),
        ));
    }
    Ok(splits)
}

fn load_bpe(root: &Value) -> Result<Bpe, TokenError> {
    let model = field(root, "model", "tokenizer.json")?;
    if model["type"] != "BPE" {
        return Err(TokenError::Unsupported(format!(
            "model type {}",
            model["type"]
        )));
    }
    for key in [
        "dropout",
        "unk_token",
        "continuing_subword_prefix",
        "end_of_word_suffix",
    ] {
        if !model.get(key).is_none_or(Value::is_null) {
            return Err(TokenError::Unsupported(format!(
                "BPE option `{key}` = {}",
                model[key]
            )));
        }
    }
    if model.get("ignore_merges").is_some_and(|v| v == true) {
        return Err(TokenError::Unsupported("BPE option `ignore_merges`".into()));
    }
    let table = byte_level_chars();
    let mut char_byte: FxHashMap<char, u8> = FxHashMap::default();
    for (b, c) in table.iter().enumerate() {
        char_byte.insert(*c, b as u8);
    }
    let vocab = field(model, "vocab", "model")?
        .as_object()
        .ok_or_else(|| malformed("model.vocab is not an object"))?;
    let mut ids: FxHashMap<&str, u32> = FxHashMap::default();
    ids.reserve(vocab.len());
    for (token, id) in vocab {
        let id = id.as_u64().and_then(|i| u32::try_from(i).ok());
        ids.insert(
            token.as_str(),
            id.ok_or_else(|| malformed(format!("vocab id of {token:?}")))?,
        );
    }
    let mut byte_ids = [0u32; 256];
    for (b, c) in table.iter().enumerate() {
        let mut buf = [0u8; 4];
        byte_ids[b] = *ids.get(&*c.encode_utf8(&mut buf)).ok_or_else(|| {
            malformed(format!(
                "vocab lacks the byte-level symbol of byte {b:#04x}"
            ))
        })?;
    }
    let merges = field(model, "merges", "model")?
        .as_array()
        .ok_or_else(|| malformed("model.merges is not a list"))?;
    let mut pairs: FxHashMap<u64, (u32, u32)> = FxHashMap::default();
    pairs.reserve(merges.len());
    let mut joined = String::new();
    for (rank, merge) in merges.iter().enumerate() {
        // two spellings exist: "a b" (legacy) and ["a", "b"]
        let (a, b) = match merge {
            Value::String(s) => s
                .split_once(' ')
                .ok_or_else(|| malformed(format!("merge {s:?}")))?,
            Value::Array(v) if v.len() == 2 => match (v[0].as_str(), v[1].as_str()) {
                (Some(a), Some(b)) => (a, b),
                _ => return Err(malformed(format!("merge {merge}"))),
            },
            _ => return Err(malformed(format!("merge {merge}"))),
        };
        joined.clear();
        joined.push_str(a);
        joined.push_str(b);
        let (Some(&ia), Some(&ib), Some(&im)) = (ids.get(a), ids.get(b), ids.get(joined.as_str()))
        else {
            return Err(malformed(format!(
                "merge {a:?} {b:?} names a token missing from the vocab"
            )));
        };
        // a repeated pair keeps its last rank, as `tokenizers` collecting into a map does
        pairs.insert(Bpe::pairs_key(ia, ib), (rank as u32, im));
    }
    Ok(Bpe::new(byte_ids, Ranks::Pairs(pairs)))
}

fn load_added(root: &Value) -> Result<AddedTokens, TokenError> {
    let list = root["added_tokens"].as_array().cloned().unwrap_or_default();
    let mut raw: (Vec<String>, Vec<u32>) = Default::default();
    let mut normalized: (Vec<String>, Vec<u32>) = Default::default();
    let mut by_content = FxHashMap::default();
    for tok in &list {
        let content = tok["content"]
            .as_str()
            .ok_or_else(|| malformed(format!("added token {tok}")))?;
        let id = tok["id"].as_u64().and_then(|i| u32::try_from(i).ok());
        let id = id.ok_or_else(|| malformed(format!("added token id {tok}")))?;
        for flag in ["lstrip", "rstrip", "single_word"] {
            if tok[flag] == true {
                return Err(TokenError::Unsupported(format!(
                    "added token with `{flag}`: {content:?}"
                )));
            }
        }
        let target = if tok["normalized"] == true {
            &mut normalized
        } else {
            &mut raw
        };
        target.0.push(content.to_owned());
        target.1.push(id);
        by_content.insert(content.to_owned(), id);
    }
    let mut passes = Vec::new();
    for (patterns, ids) in [raw, normalized] {
        if patterns.is_empty() {
            continue;
        }
        let ac = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .map_err(|e| malformed(format!("added tokens: {e}")))?;
        passes.push((ac, ids));
    }
    Ok(AddedTokens { passes, by_content })
}

/// Parses and checks a `tokenizer.json` held in memory.
pub(crate) fn load_json(text: &[u8]) -> Result<Loaded, TokenError> {
    let root: Value =
        serde_json::from_slice(text).map_err(|e| malformed(format!("not JSON: {e}")))?;
    check_normalizer(&root)?;
    Ok(Loaded {
        added: load_added(&root)?,
        splits: load_splits(&root)?,
        bpe: load_bpe(&root)?,
    })
}

pub(crate) fn load_path(path: &Path) -> Result<Loaded, TokenError> {
    let text = std::fs::read(path)
        .map_err(|e| TokenError::DataNotFound(format!("cannot read {}: {e}", path.display())))?;
    load_json(&text).map_err(|e| match e {
        TokenError::Malformed(m) => TokenError::Malformed(format!("{}: {m}", path.display())),
        other => other,
    })
}
