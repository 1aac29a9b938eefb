//! Content blocks as chat completions take them (the one place this mapping is done;
//! `docs/providers.md`): the importers' Anthropic-style `image` / `document` blocks become
//! `image_url` (a data URL) / `file` blocks, and a tool result holding anything but text keeps
//! its text (with a note) while the rest goes to a user message after the step's results.
use serde_json::{json, Value};

/// The text before the blocks a tool result could not carry, in the user message after the
/// step's results (followed by the result's call id and tool name).
pub const ATTACHMENTS_OF: &str = "Attachments of the tool result";

/// The block types that chat completions have no equivalent for and that are mapped.
fn mapped_type(block: &Value) -> bool {
    matches!(
        block.get("type").and_then(Value::as_str),
        Some("image") | Some("document")
    )
}

/// The blocks of `content` as chat completions take them, or `None` when nothing changes.
pub fn map_blocks(content: &Value) -> Option<Vec<Value>> {
    let Value::Array(blocks) = content else {
        return None;
    };
    if !blocks.iter().any(mapped_type) {
        return None;
    }
    Some(blocks.iter().map(map_block).collect())
}

/// One block for chat completions. Anthropic-style `image` (base64 or url source) becomes
/// `image_url`; `document` with a base64 source becomes a `file` with a data URL, with a text
/// source a `text` block. Anything else, or a shape not understood, is sent unchanged (a
/// provider that cannot take it says so before sending).
pub fn map_block(block: &Value) -> Value {
    let mut mapped = map_shape(block);
    // a media reference stays one: its `media` goes with the reference text into the new block
    if let (Some(media), Some(obj)) = (block.get("media"), mapped.as_object_mut()) {
        obj.entry("media").or_insert_with(|| media.clone());
    }
    mapped
}

fn map_shape(block: &Value) -> Value {
    let kind = block.get("type").and_then(Value::as_str);
    let source = block.get("source");
    let field = |k: &str| source.and_then(|s| s.get(k)).and_then(Value::as_str);
    match (kind, field("type")) {
        (Some("image"), Some("base64")) => match (field("media_type"), field("data")) {
            (Some(media), Some(data)) => {
                json!({"type": "image_url", "image_url": {"url": format!("data:{media};base64,{data}")}})
            }
            _ => block.clone(),
        },
        (Some("image"), Some("url")) => match field("url") {
            Some(url) => json!({"type": "image_url", "image_url": {"url": url}}),
            None => block.clone(),
        },
        (Some("document"), Some("base64")) => match (field("media_type"), field("data")) {
            (Some(media), Some(data)) => {
                let title = block.get("title").and_then(Value::as_str);
                let filename = match title {
                    Some(t) if !t.is_empty() => t.to_string(),
                    _ => default_filename(media),
                };
                json!({"type": "file", "file": {
                    "filename": filename,
                    "file_data": format!("data:{media};base64,{data}"),
                }})
            }
            _ => block.clone(),
        },
        (Some("document"), Some("text")) => match field("data") {
            Some(text) => json!({"type": "text", "text": text}),
            None => block.clone(),
        },
        _ => block.clone(),
    }
}

fn default_filename(media_type: &str) -> String {
    let ext = match media_type {
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        _ => "bin",
    };
    format!("document.{ext}")
}

/// A tool result's content split for chat completions: `None` when it is a string or only
/// text blocks (sent as it is); else its text (the text blocks joined by newlines, then a note
/// naming what follows) and the other blocks, mapped, for the user message after the results.
pub fn split_tool_content(content: Option<&Value>) -> Option<(String, Vec<Value>)> {
    let Some(Value::Array(blocks)) = content else {
        return None;
    };
    let is_text = |b: &Value| b.get("type").and_then(Value::as_str) == Some("text");
    if blocks.iter().all(is_text) {
        return None;
    }
    let mut texts: Vec<&str> = Vec::new();
    let mut moved: Vec<Value> = Vec::new();
    for b in blocks {
        if is_text(b) {
            texts.push(b.get("text").and_then(Value::as_str).unwrap_or(""));
        } else {
            moved.push(map_block(b));
        }
    }
    let kinds: Vec<&str> = moved
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("image_url") => "image",
            Some("input_audio") => "audio",
            Some(other) => other,
            None => "block",
        })
        .collect();
    let note = format!(
        "[this result also holds {} attachment(s) ({}); they follow in a user message]",
        moved.len(),
        kinds.join(", ")
    );
    let mut text = texts.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&note);
    Some((text, moved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_media_reference_stays_one_when_mapped() {
        let sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let media =
            json!({"sha256": sha, "mediaType": "image/png", "size": 9, "width": 2, "height": 3});
        let image = json!({"type": "image", "media": media,
            "source": {"type": "base64", "media_type": "image/png", "data": format!("foldlog-media:sha256:{sha}")}});
        assert_eq!(
            map_block(&image),
            json!({"type": "image_url", "media": media,
                "image_url": {"url": format!("data:image/png;base64,foldlog-media:sha256:{sha}")}})
        );
        let (text, moved) =
            split_tool_content(Some(&json!([{"type": "text", "text": "shot"}, image]))).unwrap();
        assert!(text.contains("1 attachment(s) (image)"), "{text}");
        assert_eq!(moved[0]["media"], media);
    }
}
