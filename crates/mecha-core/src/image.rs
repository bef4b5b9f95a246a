//! Images in tool results: what a model may be sent, what one costs of the
//! turn budget, and the placeholder that stands in for one it cannot have.
//!
//! A tool hands back images as they came (an MCP server's base64, a file's
//! bytes); [`fit_images`] is the one place that decides, per call, which of
//! them reach the model. An image is sent only when its bytes really are
//! PNG, JPEG, GIF or WebP (the media type is read from the magic bytes,
//! never taken from the tool: the APIs refuse an image whose declared type
//! does not match its data), when it is within [`MAX_IMAGE_BYTES`], when the
//! model takes images at all, and when the call's share of the turn budget
//! has room for [`IMAGE_COST_BYTES`]. Any other image is saved to the spill
//! directory and replaced by a line that says why and where it is.

use std::io::Write;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::ToolCtx;
use crate::budget::MIN_CALL_SHARE;

/// An image in a tool result: its media type and its data, base64-encoded
/// (the form every wire format and a session file carry it in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub media_type: String,
    pub data: String,
}

impl Image {
    /// The image in `bytes`, if they are one of the formats a model reads.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        sniff(bytes).map(|media_type| Self {
            media_type: media_type.to_owned(),
            data: STANDARD.encode(bytes),
        })
    }
}

/// The most decoded bytes one image may have: the Anthropic API's limit per
/// image (OpenAI's is larger), so an image mecha sends is never refused for
/// its size, and a single tool result cannot put megabytes more on the wire.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// What one image costs of the turn budget, in the budget's bytes: about
/// 1,600 tokens at the budget's three bytes a token. The model pays for an
/// image by its pixels, not its encoding: Anthropic scales an image down to
/// about 1.15 megapixels, which costs at most about 1,600 tokens, and
/// OpenAI's high-detail tiling of the same stays below that. Counting the
/// base64 instead would charge a 100 KB screenshot 130 KB, more than most
/// whole turn budgets, for what costs the model the same as 5 KB of text.
pub const IMAGE_COST_BYTES: usize = 1600 * 3;

/// The formats a model reads, by their magic bytes.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The reason an image over the cap is not sent.
pub fn over_cap(bytes: u64) -> String {
    format!(
        "it is {}, over the {} cap for one image",
        human_size(bytes),
        human_size(MAX_IMAGE_BYTES as u64)
    )
}

/// The line that stands in for an image the model does not get: what it
/// was, why it is not shown, and where it is (or why it is nowhere).
pub fn placeholder(media_type: &str, bytes: u64, reason: &str, location: &str) -> String {
    format!(
        "[image: {media_type}, {}, not shown: {reason}; {location}]",
        human_size(bytes)
    )
}

/// A size the way a person reads it.
pub fn human_size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    if b >= KB * KB {
        format!("{:.1} MB", b / (KB * KB))
    } else if b >= KB {
        format!("{:.1} KB", b / KB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Why the model does not take images, said where it applies.
const NO_IMAGES: &str = "the configured model does not take images (a text-only provider, or \
                         `images = false` in [provider])";

/// Splits a call's share between its images and its text, and fits both:
/// the images the model may have stay in `images` (each costing
/// [`IMAGE_COST_BYTES`] of `share`), every other one becomes a placeholder
/// after the text, and the text is fitted (spilled if need be) into what
/// is left. The text keeps at least what it needs up to [`MIN_CALL_SHARE`],
/// so an image never crowds out a short answer that came with it.
pub(crate) fn fit_images(
    ctx: &ToolCtx,
    tool: &str,
    text: &str,
    images: Vec<Image>,
) -> (String, Vec<Image>) {
    if images.is_empty() {
        return (ctx.fit(tool, text), images);
    }
    let keep_for_text = text.len().min(MIN_CALL_SHARE);
    let mut room = ctx.call_budget_bytes.saturating_sub(keep_for_text);
    let mut kept = Vec::new();
    let mut notes = String::new();
    for image in images {
        match judge(ctx, tool, image, room) {
            Ok(image) => {
                room -= IMAGE_COST_BYTES;
                kept.push(image);
            }
            Err(note) => {
                room = room.saturating_sub(note.len() + 1);
                notes.push('\n');
                notes.push_str(&note);
            }
        }
    }
    let used = kept.len() * IMAGE_COST_BYTES + notes.len();
    let text_budget = ctx.call_budget_bytes.saturating_sub(used);
    let mut content = ctx.with_call_budget(text_budget).fit(tool, text);
    content.push_str(if content.is_empty() {
        notes.trim_start_matches('\n')
    } else {
        &notes
    });
    (content, kept)
}

/// The image as it may be sent (its media type read from its bytes), or
/// the placeholder that replaces it.
fn judge(ctx: &ToolCtx, tool: &str, image: Image, room: usize) -> Result<Image, String> {
    let Ok(bytes) = STANDARD.decode(image.data.trim()) else {
        return Err(format!(
            "[image: {}, not shown: its data is not valid base64]",
            shown_type(&image.media_type)
        ));
    };
    let size = bytes.len() as u64;
    let Some(media_type) = sniff(&bytes) else {
        let declared = shown_type(&image.media_type);
        let reason = format!(
            "its data is not PNG, JPEG, GIF or WebP, the formats a model reads (declared as \
             {declared})"
        );
        return Err(placeholder(
            &declared,
            size,
            &reason,
            &save(ctx, tool, &bytes, "bin"),
        ));
    };
    let ext = media_type.trim_start_matches("image/");
    let reason = if bytes.len() > MAX_IMAGE_BYTES {
        over_cap(size)
    } else if !ctx.accepts_images() {
        NO_IMAGES.to_owned()
    } else if room < IMAGE_COST_BYTES {
        format!(
            "this call's share of the turn's output budget has no room for it (an image counts \
             as {IMAGE_COST_BYTES} bytes); read the saved copy with fs_read in a turn with fewer \
             calls"
        )
    } else {
        return Ok(Image {
            media_type: media_type.to_owned(),
            data: image.data,
        });
    };
    Err(placeholder(
        media_type,
        size,
        &reason,
        &save(ctx, tool, &bytes, ext),
    ))
}

/// Saves an image the model does not get to the spill directory, and says
/// where it went. A failed save says so: the placeholder never names a file
/// that does not exist.
fn save(ctx: &ToolCtx, tool: &str, bytes: &[u8], ext: &str) -> String {
    if bytes.len() as u64 > ctx.spill().max_file_bytes() {
        return "it is larger than a spill file may be, so it was not saved".to_owned();
    }
    match ctx.spill_file(tool, ext).and_then(|(path, mut file)| {
        file.write_all(bytes)?;
        Ok(path)
    }) {
        Ok(path) => format!("saved at {}", path.display()),
        Err(e) => {
            tracing::warn!(error = %e, "could not save an image to the spill directory");
            format!("it could not be saved ({e})")
        }
    }
}

/// A tool-chosen media type, short enough for a placeholder.
fn shown_type(declared: &str) -> String {
    let declared = declared.trim();
    match declared.char_indices().nth(100) {
        Some((at, _)) => format!("{}…", &declared[..at]),
        None if declared.is_empty() => "no media type".to_owned(),
        None => declared.to_owned(),
    }
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;
