//! OpenAI's `cl100k_base` and `o200k_base` ranks, taken from the copies of OpenAI's rank files
//! that the `tiktoken-rs` crate embeds (no download, ever). We use only that data: encoding
//! runs through our own pre-tokenizer and BPE loop, checked against `tiktoken` by the tests.

use rustc_hash::FxHashMap;
use tiktoken_rs::CoreBPE;

use super::bpe::{Bpe, Ranks};
use super::TokenError;

pub(crate) struct Loaded {
    pub(crate) bpe: Bpe,
    /// Token bytes by rank (for decoding and for checking the data against tiktoken's hash).
    pub(crate) tokens: Vec<Box<[u8]>>,
}

/// Reads the ordinary ranks (0, 1, … up to the first gap or special token) out of `core`.
fn ranks_of(core: &CoreBPE, first_special: u32) -> Result<Vec<Box<[u8]>>, TokenError> {
    let tokens: Vec<Box<[u8]>> = (0..first_special)
        .map_while(|rank| core.decode_bytes(&[rank]).ok().map(Vec::into_boxed_slice))
        .collect();
    if tokens.len() < 256 {
        return Err(TokenError::Malformed(format!(
            "embedded rank file has only {} ranks",
            tokens.len()
        )));
    }
    Ok(tokens)
}

pub(crate) fn load(o200k: bool) -> Result<Loaded, TokenError> {
    let (core, first_special) = if o200k {
        (tiktoken_rs::o200k_base(), 199_999)
    } else {
        (tiktoken_rs::cl100k_base(), 100_256)
    };
    let core = core.map_err(|e| TokenError::Malformed(format!("embedded rank file: {e}")))?;
    let tokens = ranks_of(&core, first_special)?;
    let mut map: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
    map.reserve(tokens.len());
    let mut byte_ids = [u32::MAX; 256];
    for (rank, bytes) in tokens.iter().enumerate() {
        if bytes.len() == 1 {
            byte_ids[bytes[0] as usize] = rank as u32;
        }
        map.insert(bytes.clone(), rank as u32);
    }
    if byte_ids.contains(&u32::MAX) {
        return Err(TokenError::Malformed(
            "embedded rank file lacks a single-byte token".into(),
        ));
    }
    Ok(Loaded {
        bpe: Bpe::new(byte_ids, Ranks::Bytes(map)),
        tokens,
    })
}
