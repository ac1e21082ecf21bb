//! A block's image made ready for a vision model: read once, downscaled so that its longest
//! side is at most `MAX_SIDE` pixels (the aspect ratio kept), base64-encoded, and cached by
//! path, since the history goes again with every round.
//!
//! PNG and JPEG images that need no scaling go as their bytes; scaled ones are re-encoded
//! in their format (JPEG stays JPEG, the rest become PNG); GIF and WebP become PNG. SVG,
//! unreadable and oversized files are not sent: the reason is one line for the model.

use std::collections::HashMap;
use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat as Codec, imageops::FilterType};

use super::vision::ImagePart;
use crate::protocol::{Image, ImageFormat, human_bytes};

/// The longest side an image sent to a model may have, in pixels.
pub const MAX_SIDE: u32 = 1568;
/// Files larger than this are not read at all.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// The images encoded so far, by the path they are kept at.
#[derive(Default)]
pub struct ImageCache {
    encoded: HashMap<PathBuf, Result<ImagePart, String>>,
}

impl ImageCache {
    /// The image ready to send, or why it is not sent (both remembered).
    pub fn get(&mut self, image: &Image) -> Result<ImagePart, String> {
        self.encoded
            .entry(image.path.clone())
            .or_insert_with(|| encode(image))
            .clone()
    }
}

/// Reads and encodes one image (see the module's notes).
pub fn encode(image: &Image) -> Result<ImagePart, String> {
    if !image.format.is_raster() {
        return Err("it is an SVG drawing, and only pixel images are sent".to_string());
    }
    let size = std::fs::metadata(&image.path)
        .map_err(|e| format!("it cannot be read ({e})"))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "it is too large ({}; the most sent is {})",
            human_bytes(size),
            human_bytes(MAX_FILE_BYTES)
        ));
    }
    let bytes = std::fs::read(&image.path).map_err(|e| format!("it cannot be read ({e})"))?;
    encode_bytes(&bytes, image.format)
}

/// Encodes an image's bytes, downscaling it when its longest side is over `MAX_SIDE`.
pub fn encode_bytes(bytes: &[u8], format: ImageFormat) -> Result<ImagePart, String> {
    let codec = match format {
        ImageFormat::Png => Codec::Png,
        ImageFormat::Jpeg => Codec::Jpeg,
        ImageFormat::Gif => Codec::Gif,
        ImageFormat::Webp => Codec::WebP,
        ImageFormat::Svg => {
            return Err("it is an SVG drawing, and only pixel images are sent".to_string());
        }
    };
    let decoded = image::load_from_memory_with_format(bytes, codec)
        .map_err(|e| format!("it is not a readable {} image ({e})", format.label()))?;
    let (width, height) = (decoded.width(), decoded.height());
    let keep = width.max(height) <= MAX_SIDE;
    if keep && matches!(format, ImageFormat::Png | ImageFormat::Jpeg) {
        return Ok(part(bytes, format.mime(), width, height));
    }
    let scaled = if keep {
        decoded
    } else {
        decoded.resize(MAX_SIDE, MAX_SIDE, FilterType::Triangle)
    };
    let (bytes, mime) = reencode(&scaled, format == ImageFormat::Jpeg)?;
    Ok(part(&bytes, mime, scaled.width(), scaled.height()))
}

fn reencode(image: &DynamicImage, jpeg: bool) -> Result<(Vec<u8>, &'static str), String> {
    let mut out = Cursor::new(Vec::new());
    if jpeg {
        let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
        rgb.write_with_encoder(encoder)
            .map_err(|e| format!("it could not be encoded as JPEG ({e})"))?;
        return Ok((out.into_inner(), "image/jpeg"));
    }
    image
        .write_to(&mut out, Codec::Png)
        .map_err(|e| format!("it could not be encoded as PNG ({e})"))?;
    Ok((out.into_inner(), "image/png"))
}

fn part(bytes: &[u8], media_type: &'static str, width: u32, height: u32) -> ImagePart {
    ImagePart {
        media_type,
        data: Arc::from(base64::engine::general_purpose::STANDARD.encode(bytes)),
        width,
        height,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
            width,
            height,
            image::Rgb([200, 30, 30]),
        ));
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, Codec::Png).unwrap();
        out.into_inner()
    }

    fn decoded(part: &ImagePart) -> DynamicImage {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(part.data.as_bytes())
            .unwrap();
        image::load_from_memory(&bytes).unwrap()
    }

    #[test]
    fn small_images_go_as_their_bytes() {
        let bytes = png(400, 300);
        let part = encode_bytes(&bytes, ImageFormat::Png).unwrap();
        assert_eq!((part.width, part.height), (400, 300));
        assert_eq!(part.media_type, "image/png");
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(part.data.as_bytes())
                .unwrap(),
            bytes
        );
        assert!(
            part.data_uri()
                .starts_with("data:image/png;base64,iVBORw0KGgo")
        );
    }

    #[test]
    fn large_images_are_downscaled_keeping_the_aspect_ratio() {
        let part = encode_bytes(&png(3000, 1000), ImageFormat::Png).unwrap();
        assert_eq!((part.width, part.height), (1568, 523));
        let img = decoded(&part);
        assert_eq!((img.width(), img.height()), (1568, 523));
        let tall = encode_bytes(&png(500, 2000), ImageFormat::Png).unwrap();
        assert_eq!((tall.width, tall.height), (392, 1568));
        // Exactly the limit is not scaled.
        let edge = encode_bytes(&png(1568, 10), ImageFormat::Png).unwrap();
        assert_eq!((edge.width, edge.height), (1568, 10));
    }

    #[test]
    fn a_large_jpeg_stays_jpeg() {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
            2000,
            1600,
            image::Rgb([10, 120, 10]),
        ));
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, Codec::Jpeg).unwrap();
        let part = encode_bytes(&out.into_inner(), ImageFormat::Jpeg).unwrap();
        assert_eq!(part.media_type, "image/jpeg");
        assert_eq!((part.width, part.height), (1568, 1254));
        assert_eq!(decoded(&part).width(), 1568);
    }

    #[test]
    fn svg_unreadable_and_oversized_images_say_why() {
        assert!(
            encode_bytes(b"<svg/>", ImageFormat::Svg)
                .unwrap_err()
                .contains("SVG")
        );
        assert!(
            encode_bytes(b"not a png", ImageFormat::Png)
                .unwrap_err()
                .contains("not a readable PNG")
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.png");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_FILE_BYTES + 1).unwrap();
        let image = Image {
            path: path.clone(),
            format: ImageFormat::Png,
            bytes: MAX_FILE_BYTES + 1,
            width: None,
            height: None,
            source: crate::protocol::ImageSource::Figure,
        };
        assert!(encode(&image).unwrap_err().contains("too large"));
        let mut cache = ImageCache::default();
        assert!(cache.get(&image).is_err());
        // Cached: even once the file is fixed, the answer stands for this path.
        std::fs::write(&path, png(10, 10)).unwrap();
        assert!(cache.get(&image).is_err());
        assert!(encode(&image).is_ok());
    }
}
