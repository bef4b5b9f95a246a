#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn png(len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize(len.max(8), 0);
    bytes
}

fn encoded(bytes: &[u8], media_type: &str) -> Image {
    Image {
        media_type: media_type.to_owned(),
        data: STANDARD.encode(bytes),
    }
}

fn ctx(budget: usize) -> ToolCtx {
    let ws = tempfile::tempdir().unwrap();
    ToolCtx::new(ws.path(), budget).unwrap()
}

fn saved_path(note: &str) -> std::path::PathBuf {
    let at = note.find("saved at ").unwrap() + "saved at ".len();
    let end = note[at..].find(']').unwrap() + at;
    note[at..end].into()
}

#[test]
fn formats_are_read_from_the_magic_bytes() {
    assert_eq!(sniff(&png(20)), Some("image/png"));
    assert_eq!(sniff(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
    assert_eq!(sniff(b"GIF89a...."), Some("image/gif"));
    assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
    assert_eq!(sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
    assert_eq!(sniff(b"<svg xmlns=..."), None);
}

#[test]
fn an_image_that_fits_is_kept_with_the_type_its_bytes_say() {
    let ctx = ctx(20_000);
    let (text, images) = fit_images(&ctx, "t", "a shot", vec![encoded(&png(100), "image/jpeg")]);
    assert_eq!(text, "a shot");
    assert_eq!(images.len(), 1);
    assert_eq!(
        images[0].media_type, "image/png",
        "the bytes win over the label"
    );
}

#[test]
fn each_image_costs_its_share_and_the_rest_are_saved() {
    // Room for the text and two images, not three.
    let budget = 10 + 2 * IMAGE_COST_BYTES + 500;
    let ctx = ctx(budget);
    let shots = vec![encoded(&png(50), "image/png"); 3];
    let (text, images) = fit_images(&ctx, "t", "three shots", shots);
    assert_eq!(images.len(), 2, "{text}");
    assert!(text.starts_with("three shots\n[image: image/png, 50 bytes, not shown: this call's share of the turn's output budget has no room"), "{text}");
    assert_eq!(std::fs::read(saved_path(&text)).unwrap(), png(50));
    assert!(text.len() + images.len() * IMAGE_COST_BYTES <= budget);
}

#[test]
fn an_image_over_the_cap_is_saved_not_sent() {
    let ctx = ctx(20_000);
    let big = png(MAX_IMAGE_BYTES + 1);
    let (text, images) = fit_images(&ctx, "t", "", vec![encoded(&big, "image/png")]);
    assert!(images.is_empty());
    assert!(
        text.starts_with("[image: image/png, 5.0 MB, not shown: it is 5.0 MB, over the 5.0 MB cap for one image; saved at "),
        "{text}"
    );
    assert_eq!(std::fs::read(saved_path(&text)).unwrap().len(), big.len());
}

#[test]
fn a_model_without_images_gets_a_placeholder_that_says_so() {
    let ctx = ctx(20_000).with_images(false);
    let (text, images) = fit_images(&ctx, "t", "shot:", vec![encoded(&png(10), "image/png")]);
    assert!(images.is_empty());
    assert!(
        text.contains("not shown: the configured model does not take images"),
        "{text}"
    );
    assert!(text.contains("`images = false` in [provider]"), "{text}");
}

#[test]
fn data_that_is_no_image_format_is_never_sent_as_one() {
    let ctx = ctx(20_000);
    let (text, images) = fit_images(
        &ctx,
        "t",
        "",
        vec![
            encoded(b"<svg/>", "image/svg+xml"),
            Image {
                media_type: "image/png".into(),
                data: "not base64!".into(),
            },
        ],
    );
    assert!(images.is_empty());
    assert!(
        text.contains(
            "[image: image/svg+xml, 6 bytes, not shown: its data is not PNG, JPEG, GIF or WebP"
        ),
        "{text}"
    );
    assert!(
        text.contains("[image: image/png, not shown: its data is not valid base64]"),
        "{text}"
    );
}
