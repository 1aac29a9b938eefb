//! What the non-text parts of a message cost: a documented estimate, never an exact count.
//!
//! Images follow OpenAI's published formula for vision input (by `detail` and by the image's
//! size, read from the PNG / JPEG / GIF / WebP header of base64 data); everything foldlog cannot
//! size gets a fixed figure. `docs/tokens.md` ("Non-text content") lists every figure. The same
//! figures serve every tokenizer family: providers do not publish per-family image costs, and a
//! model that cannot take a block type refuses it before sending anyway.
use serde_json::Value;

use super::chat::Counter;
use crate::event::media_ref;

/// `detail: "low"`: one fixed 512×512 rendering.
pub const IMAGE_LOW: usize = 85;
/// `detail: "high"` / `"auto"`: the base cost of every image…
pub const IMAGE_BASE: usize = 85;
/// …plus this per 512-px tile of the scaled image.
pub const IMAGE_PER_TILE: usize = 170;
/// An image whose size is unknown (a URL, or data whose header foldlog cannot read), at
/// `detail` high/auto: the most any image can cost after the scaling (768 × 2048 → 2 × 4 tiles),
/// so a context budget built on it is never exceeded by the image.
pub const IMAGE_UNKNOWN_SIZE: usize = IMAGE_BASE + 8 * IMAGE_PER_TILE;
/// An audio clip (`input_audio`): foldlog does not decode audio; a fixed figure of its own.
pub const AUDIO: usize = 1_000;
/// A file or document whose text foldlog cannot see (`file`, a base64 / URL `document`): a
/// fixed figure of its own.
pub const FILE: usize = 2_000;

/// At most this many bytes of an image are decoded to find its size (JPEG puts its size after
/// its metadata segments; everything else needs the first 30 bytes).
const HEADER_LIMIT: usize = 256 * 1024;

/// The cost of an image of `width`×`height` pixels at `detail`, by OpenAI's formula: `low` is
/// 85; otherwise the image is scaled to fit in 2048×2048, then so that its shorter side is at
/// most 768 px, and costs 85 + 170 per 512-px tile.
pub fn image_tokens(width: u32, height: u32, detail: Option<&str>) -> usize {
    if detail == Some("low") {
        return IMAGE_LOW;
    }
    let (mut w, mut h) = (f64::from(width), f64::from(height));
    let longer = w.max(h);
    if longer > 2048.0 {
        let s = 2048.0 / longer;
        (w, h) = (w * s, h * s);
    }
    let shorter = w.min(h);
    if shorter > 768.0 {
        let s = 768.0 / shorter;
        (w, h) = (w * s, h * s);
    }
    let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
    IMAGE_BASE + IMAGE_PER_TILE * tiles as usize
}

/// Tokens one non-text content block costs (always an estimate). `count` counts text exactly,
/// for the parts that are text after all (a text `document`, an unknown block's JSON).
pub fn block_tokens(block: &Value, count: Counter<'_>) -> usize {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "image_url" => {
            let image = block.get("image_url");
            // OpenAI's object form, or a bare URL string some clients send
            let url = image
                .and_then(|i| i.get("url").or(Some(i)))
                .and_then(Value::as_str);
            let detail = image.and_then(|i| i.get("detail")).and_then(Value::as_str);
            image_cost(stored_or(block, || url.and_then(data_url_size)), detail)
        }
        "input_image" => {
            let url = block.get("image_url").and_then(Value::as_str);
            let detail = block.get("detail").and_then(Value::as_str);
            image_cost(url.and_then(data_url_size), detail)
        }
        "image" => {
            let source = block.get("source");
            let size = stored_or(block, || {
                source
                    .filter(|s| s.get("type").and_then(Value::as_str) == Some("base64"))
                    .and_then(|s| s.get("data"))
                    .and_then(Value::as_str)
                    .and_then(base64_image_size)
            });
            image_cost(size, None)
        }
        "input_audio" => AUDIO,
        "file" | "input_file" => FILE,
        "document" => {
            let source = block.get("source");
            let text = source
                .filter(|s| s.get("type").and_then(Value::as_str) == Some("text"))
                .and_then(|s| s.get("data"))
                .and_then(Value::as_str);
            text.map_or(FILE, count)
        }
        // anything else: what its JSON text costs
        _ => count(&block.to_string()),
    }
}

/// The size of the image a block holds: the one its media reference records (the bytes are in
/// the media store, read when the image was stored: [`bytes_image_size`]), else `inline()`, read
/// from the block's own data. So a stored image costs what it cost inline.
fn stored_or(block: &Value, inline: impl FnOnce() -> Option<(u32, u32)>) -> Option<(u32, u32)> {
    if media_ref::is_reference(block) {
        media_ref::referenced_size(block)
    } else {
        inline()
    }
}

/// The size of an image from its bytes, read as a block's base64 data is (its first
/// [`HEADER_LIMIT`] bytes): what a media reference records for an image.
pub fn bytes_image_size(bytes: &[u8]) -> Option<(u32, u32)> {
    image_size(&bytes[..bytes.len().min(HEADER_LIMIT)])
}

fn image_cost(size: Option<(u32, u32)>, detail: Option<&str>) -> usize {
    match (size, detail) {
        (_, Some("low")) => IMAGE_LOW,
        (Some((w, h)), _) => image_tokens(w, h, detail),
        (None, _) => IMAGE_UNKNOWN_SIZE,
    }
}

/// The size of the image in a `data:<type>;base64,<data>` URL, when its header can be read.
pub fn data_url_size(url: &str) -> Option<(u32, u32)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    if !meta.ends_with(";base64") {
        return None;
    }
    base64_image_size(data)
}

/// The size of a base64-encoded PNG, JPEG, GIF or WebP image, from its header.
pub fn base64_image_size(data: &str) -> Option<(u32, u32)> {
    image_size(&decode_base64_prefix(data, HEADER_LIMIT))
}

/// Decodes standard or URL-safe base64 (whitespace skipped, padding optional) until `limit`
/// bytes are out or the input ends; stops at the first character outside the alphabet.
pub fn decode_base64_prefix(data: &str, limit: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(limit.min(data.len() / 4 * 3 + 3));
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in data.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b' ' | b'\t' | b'\r' | b'\n' => continue,
            _ => break, // `=` padding or anything else: the data ends here
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
            if out.len() >= limit {
                break;
            }
        }
    }
    out
}

/// `(width, height)` from the first bytes of a PNG, JPEG, GIF or WebP file.
pub fn image_size(b: &[u8]) -> Option<(u32, u32)> {
    let le16 = |i: usize| Some(u32::from(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    let le24 = |i: usize| {
        let s = b.get(i..i + 3)?;
        Some(u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16)
    };
    if b.starts_with(b"\x89PNG\r\n\x1a\n") && b.get(12..16) == Some(b"IHDR") {
        return Some((be32(16)?, be32(20)?));
    }
    if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        return Some((le16(6)?, le16(8)?));
    }
    if b.starts_with(b"RIFF") && b.get(8..12) == Some(b"WEBP") {
        return match b.get(12..16)? {
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            b"VP8L" if b.get(20) == Some(&0x2f) => {
                let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
                Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
            }
            b"VP8 " if b.get(23..26) == Some(&[0x9d, 0x01, 0x2a]) => {
                Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff))
            }
            _ => None,
        };
    }
    if b.starts_with(&[0xff, 0xd8]) {
        return jpeg_size(b);
    }
    None
}

/// Walks the JPEG segments to the first start-of-frame marker, which holds the size.
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    loop {
        // markers may be preceded by fill bytes 0xFF
        while *b.get(i)? == 0xff && *b.get(i + 1)? == 0xff {
            i += 1;
        }
        if *b.get(i)? != 0xff {
            return None;
        }
        let marker = *b.get(i + 1)?;
        i += 2;
        match marker {
            // standalone markers: no length
            0x01 | 0xd0..=0xd8 => continue,
            0xd9 | 0xda => return None, // end of image / start of scan before any frame
            _ => {}
        }
        let len = usize::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]));
        let is_frame = matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
        if is_frame {
            let h = u16::from_be_bytes([*b.get(i + 3)?, *b.get(i + 4)?]);
            let w = u16::from_be_bytes([*b.get(i + 5)?, *b.get(i + 6)?]);
            return Some((u32::from(w), u32::from(h)));
        }
        if len < 2 {
            return None;
        }
        i += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().fold(0u32, |acc, &b| acc << 8 | u32::from(b))
                << (8 * (3 - chunk.len()));
            for k in 0..=chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            }
        }
        while !out.len().is_multiple_of(4) {
            out.push('=');
        }
        out
    }

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    fn jpeg(w: u16, h: u16) -> Vec<u8> {
        let mut b = vec![0xff, 0xd8];
        // an APP1 (Exif-like) segment of 1,000 bytes before the frame, as cameras write
        b.extend([0xff, 0xe1, 0x03, 0xe8]);
        b.extend(vec![0u8; 998]);
        b.extend([0xff, 0xc2, 0x00, 0x11, 0x08]);
        b.extend(h.to_be_bytes());
        b.extend(w.to_be_bytes());
        b.extend([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
        b
    }

    #[test]
    fn sizes_are_read_from_every_header() {
        assert_eq!(image_size(&png(1024, 768)), Some((1024, 768)));
        assert_eq!(image_size(&jpeg(4032, 3024)), Some((4032, 3024)));
        let mut gif = b"GIF89a".to_vec();
        gif.extend([0x40, 0x01, 0xf0, 0x00, 0, 0, 0]);
        assert_eq!(image_size(&gif), Some((320, 240)));
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        vp8x.extend([0xff, 0x07, 0x00, 0x37, 0x04, 0x00]); // 2048 × 1080, each stored minus one
        assert_eq!(image_size(&vp8x), Some((2048, 1080)));
        let mut vp8l = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        let bits: u32 = (800 - 1) | ((600 - 1) << 14);
        vp8l.extend(bits.to_le_bytes());
        assert_eq!(image_size(&vp8l), Some((800, 600)));
        let mut vp8 = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x9d\x01\x2a".to_vec();
        vp8.extend(640u16.to_le_bytes());
        vp8.extend(480u16.to_le_bytes());
        assert_eq!(image_size(&vp8), Some((640, 480)));
        assert_eq!(image_size(b"not an image"), None);
        assert_eq!(
            image_size(&png(10, 10)[..20]),
            None,
            "a cut header is no size"
        );
    }

    #[test]
    fn base64_data_urls_are_decoded() {
        let url = format!("data:image/png;base64,{}", b64(&png(300, 200)));
        assert_eq!(data_url_size(&url), Some((300, 200)));
        let jpeg_url = format!("data:image/jpeg;base64,{}", b64(&jpeg(50, 60)));
        assert_eq!(data_url_size(&jpeg_url), Some((50, 60)));
        assert_eq!(data_url_size("data:image/png,rawbytes"), None);
        assert_eq!(data_url_size("https://example.com/a.png"), None);
        assert_eq!(decode_base64_prefix("aGVsbG8=", 100), b"hello");
        assert_eq!(decode_base64_prefix("aGVs\nbG8", 100), b"hello");
        assert_eq!(decode_base64_prefix("aGVsbG8=", 2), b"he");
    }

    #[test]
    fn openai_image_formula() {
        // the examples of OpenAI's vision guide
        assert_eq!(image_tokens(1024, 1024, Some("high")), 765);
        assert_eq!(image_tokens(2048, 4096, Some("high")), 1105);
        assert_eq!(image_tokens(4096, 8192, None), 1105);
        assert_eq!(image_tokens(4096, 8192, Some("low")), 85);
        assert_eq!(image_tokens(512, 512, Some("auto")), 255);
        assert_eq!(image_tokens(100, 100, None), 255);
        assert!(image_tokens(768, 2048, None) <= IMAGE_UNKNOWN_SIZE);
        assert_eq!(IMAGE_UNKNOWN_SIZE, 1445);
    }

    #[test]
    fn blocks_cost_their_documented_figure() {
        let count = |s: &str| s.len();
        let png_url = format!("data:image/png;base64,{}", b64(&png(1024, 1024)));
        let cases = [
            (
                json!({"type": "image_url", "image_url": {"url": png_url}}),
                765,
            ),
            (
                json!({"type": "image_url", "image_url": {"url": png_url, "detail": "low"}}),
                85,
            ),
            (
                json!({"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
                IMAGE_UNKNOWN_SIZE,
            ),
            (
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(&png(512, 512))}}),
                255,
            ),
            (
                json!({"type": "image", "source": {"type": "url", "url": "https://x"}}),
                IMAGE_UNKNOWN_SIZE,
            ),
            (
                json!({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}),
                AUDIO,
            ),
            (json!({"type": "file", "file": {"file_id": "file-1"}}), FILE),
            (
                json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}),
                FILE,
            ),
            (
                json!({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "twelve chars"}}),
                12,
            ),
        ];
        for (block, want) in cases {
            assert_eq!(block_tokens(&block, &count), want, "{block}");
        }
        let sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let stored = |extra: Value| {
            let mut media = json!({"sha256": sha, "mediaType": "image/png", "size": 33});
            for (k, v) in extra.as_object().unwrap() {
                media[k] = v.clone();
            }
            media
        };
        let url = format!("data:image/png;base64,foldlog-media:sha256:{sha}");
        let cases = [
            (
                json!({"type": "image_url", "image_url": {"url": url}, "media": stored(json!({"width": 1024, "height": 1024}))}),
                765,
            ),
            (
                json!({"type": "image_url", "image_url": {"url": url, "detail": "low"}, "media": stored(json!({"width": 1024, "height": 1024}))}),
                85,
            ),
            (
                json!({"type": "image_url", "image_url": {"url": url}, "media": stored(json!({}))}),
                IMAGE_UNKNOWN_SIZE,
            ),
            (
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": format!("foldlog-media:sha256:{sha}")}, "media": stored(json!({"width": 512, "height": 512}))}),
                255,
            ),
        ];
        for (block, want) in cases {
            assert_eq!(block_tokens(&block, &count), want, "{block}");
        }
        assert_eq!(bytes_image_size(&png(300, 200)), Some((300, 200)));
        let other = json!({"type": "video", "x": 1});
        assert_eq!(block_tokens(&other, &count), other.to_string().len());
    }
}
