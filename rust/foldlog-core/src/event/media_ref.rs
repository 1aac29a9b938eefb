//! Media references: a content block whose bytes live in the session store's media store
//! (docs/log-format.md, "Media references"). The block keeps its type and shape, so every rule
//! keyed on a block's type (the wire mapping, a provider's content types, the attachments of a
//! tool result) holds for it unchanged; its payload string holds the reference text
//! `foldlog-media:sha256:<hash>` where the base64 data was (inside a data URL: in place of the
//! data after `;base64,`), and its `media` key says what the bytes are:
//! `{"sha256", "mediaType", "size", "width"?, "height"?}` (the size of an image, so that its
//! token count is that of the image itself, `crate::tokens::media`).
use serde_json::{Map, Value};

/// What stands where the base64 data was, followed by the 64 hex digits of the SHA-256 of the
/// bytes. `:` is outside both base64 alphabets: no real data contains it.
pub const MEDIA_REF_PREFIX: &str = "foldlog-media:sha256:";

/// The block types whose payload can be a reference, and whether their payload is a data URL.
fn payload_place(kind: &str) -> Option<(&'static str, &'static str, bool)> {
    match kind {
        "image_url" => Some(("image_url", "url", true)),
        "file" => Some(("file", "file_data", true)),
        "input_audio" => Some(("input_audio", "data", false)),
        "image" | "document" => Some(("source", "data", false)),
        _ => None,
    }
}

/// The payload string of a block that can carry a reference, with whether it is a data URL.
fn payload_of<'a>(kind: &str, obj: &'a Map<String, Value>) -> Option<(&'a str, bool)> {
    let (outer, key, data_url) = payload_place(kind)?;
    let holder = obj.get(outer)?.as_object()?;
    if outer == "source" && holder.get("type").and_then(Value::as_str) != Some("base64") {
        return None;
    }
    Some((holder.get(key)?.as_str()?, data_url))
}

/// Whether `s` is 64 lowercase hex digits.
fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The `(width, height)` a reference records for an image; `None` for anything else (a block
/// that is not a reference, or an image whose size could not be read).
pub fn referenced_size(block: &Value) -> Option<(u32, u32)> {
    let media = block.get("media")?;
    let dim = |k: &str| {
        media
            .get(k)
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
    };
    Some((dim("width")?, dim("height")?))
}

/// Whether `block` is a media reference (has a `media` key).
pub fn is_reference(block: &Value) -> bool {
    block.get("media").is_some()
}

/// The reference of a block of type `kind`, checked: `Ok(())` for a block that is none (no
/// `media` key and no reference text in its payload), else the problem as `(place, text)`
/// relative to the block (`media.sha256`, `must be 64 lowercase hex digits`).
pub fn check(kind: &str, obj: &Map<String, Value>) -> std::result::Result<(), (String, String)> {
    let payload = payload_of(kind, obj);
    let Some(media) = obj.get("media") else {
        return match payload {
            Some((text, _)) if text.contains(MEDIA_REF_PREFIX) => Err((
                String::new(),
                "holds a media reference without its \"media\" object".into(),
            )),
            _ => Ok(()),
        };
    };
    let fail = |place: &str, text: &str| Err((place.to_string(), text.to_string()));
    let Some(media) = media.as_object() else {
        return fail("media", "must be an object {sha256, mediaType, size}");
    };
    let Some((text, data_url)) = payload else {
        return fail(
            "media",
            "is only allowed on image_url, file, input_audio and base64 image/document blocks",
        );
    };
    let sha = match media.get("sha256").and_then(Value::as_str) {
        Some(s) if is_sha256(s) => s,
        _ => return fail("media.sha256", "must be 64 lowercase hex digits"),
    };
    let media_type = match media.get("mediaType").and_then(Value::as_str) {
        Some(s) if !s.is_empty() && !s.contains(',') => s,
        _ => return fail("media.mediaType", "must be a non-empty string without ','"),
    };
    if !media.get("size").is_some_and(Value::is_u64) {
        return fail("media.size", "must be a non-negative integer");
    }
    let positive = |k: &str| {
        media
            .get(k)
            .and_then(Value::as_u64)
            .is_some_and(|v| v > 0 && v <= u64::from(u32::MAX))
    };
    match (media.get("width"), media.get("height")) {
        (None, None) => {}
        (Some(_), Some(_)) if positive("width") && positive("height") => {
            if !matches!(kind, "image_url" | "image") {
                return fail("media.width", "is only recorded for images");
            }
        }
        _ => {
            return fail(
                "media.width",
                "and media.height must both be positive integers, or both absent",
            )
        }
    }
    let want = if data_url {
        format!("data:{media_type};base64,{MEDIA_REF_PREFIX}{sha}")
    } else {
        format!("{MEDIA_REF_PREFIX}{sha}")
    };
    if text != want {
        let (outer, key, _) = payload_place(kind).unwrap_or(("", "", false));
        return Err((
            format!("{outer}.{key}"),
            format!("must be the reference text {want:?} of its \"media\""),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn checked(block: Value) -> std::result::Result<(), (String, String)> {
        let kind = block["type"].as_str().unwrap().to_string();
        check(&kind, block.as_object().unwrap())
    }

    #[test]
    fn a_reference_names_its_bytes_where_the_data_was() {
        let url = format!("data:image/png;base64,{MEDIA_REF_PREFIX}{SHA}");
        let image = json!({"type": "image_url", "image_url": {"url": url},
            "media": {"sha256": SHA, "mediaType": "image/png", "size": 10, "width": 3, "height": 4}});
        assert_eq!(checked(image.clone()), Ok(()));
        assert_eq!(referenced_size(&image), Some((3, 4)));
        let audio = json!({"type": "input_audio", "input_audio": {"data": format!("{MEDIA_REF_PREFIX}{SHA}"), "format": "wav"},
            "media": {"sha256": SHA, "mediaType": "audio/wav", "size": 10}});
        assert_eq!(checked(audio.clone()), Ok(()));
        assert_eq!(referenced_size(&audio), None);
        let doc = json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
            "data": format!("{MEDIA_REF_PREFIX}{SHA}")}, "media": {"sha256": SHA, "mediaType": "application/pdf", "size": 0}});
        assert_eq!(checked(doc), Ok(()));
    }

    #[test]
    fn a_broken_reference_is_named() {
        let url = format!("data:image/png;base64,{MEDIA_REF_PREFIX}{SHA}");
        let place = |b: Value| checked(b).unwrap_err().0;
        assert_eq!(
            place(
                json!({"type": "image_url", "image_url": {"url": url}, "media": {"sha256": "AB", "mediaType": "image/png", "size": 1}})
            ),
            "media.sha256"
        );
        assert_eq!(
            place(
                json!({"type": "image_url", "image_url": {"url": url}, "media": {"sha256": SHA, "mediaType": "image/png", "size": -1}})
            ),
            "media.size"
        );
        assert_eq!(
            place(
                json!({"type": "image_url", "image_url": {"url": url}, "media": {"sha256": SHA, "mediaType": "image/png", "size": 1, "width": 3}})
            ),
            "media.width"
        );
        let other = "0".repeat(64);
        assert_eq!(
            place(
                json!({"type": "image_url", "image_url": {"url": url}, "media": {"sha256": other, "mediaType": "image/png", "size": 1}})
            ),
            "image_url.url"
        );
        assert_eq!(
            place(json!({"type": "image_url", "image_url": {"url": url}})),
            ""
        );
        assert_eq!(
            place(
                json!({"type": "text", "text": "x", "media": {"sha256": SHA, "mediaType": "text/plain", "size": 1}})
            ),
            "media"
        );
        // a block that is no reference is none of this rule's business
        assert_eq!(
            checked(json!({"type": "image_url", "image_url": {"url": "https://x/y.png"}})),
            Ok(())
        );
    }
}
