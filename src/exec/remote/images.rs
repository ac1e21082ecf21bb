//! The images a remote block made, brought back over the session's connection: the helper
//! lists the figures its driver saved and the image files written under the working
//! directory since the block began; each (up to the limit) is fetched into a private local
//! directory and kept like a local one.

use std::path::{Path, PathBuf};

use crate::protocol::{ImageFormat, ImageSource, human_bytes};

use super::super::images::{Gathered, MAX_BYTES, MAX_IMAGES, keep_found};
use super::{Link, sh_quote};

/// Gathers what the block `block` of the kernel `kernel` made into `keep`.
pub(crate) async fn gather(
    link: &Link,
    kernel: &str,
    block: u64,
    extension: &str,
    keep: &Path,
) -> Gathered {
    let mut gathered = Gathered::default();
    let workdir = sh_quote(&link.info.workdir);
    let listed = link
        .call(|seq| format!("oi_images {seq} {kernel} {block} {extension} {workdir}\n"))
        .await;
    let reply = match listed {
        Ok(reply) => reply,
        Err(e) => {
            gathered.notes.push(format!(
                "The images this block made on {} could not be listed: {e}.",
                link.target.name
            ));
            return gathered;
        }
    };
    let mut listed: Vec<(String, bool)> = Vec::new();
    for (word, path) in &reply.lines {
        let figure = match word.as_str() {
            "FIGURE" => true,
            "FILE" => false,
            _ => continue,
        };
        if ImageFormat::from_path(Path::new(path)).is_some() {
            listed.push((path.to_string(), figure));
        }
    }
    if listed.is_empty() {
        return gathered;
    }
    let staging = match super::super::tempdirs::create_named(
        &std::env::temp_dir(),
        super::super::tempdirs::IMAGES,
    ) {
        Ok(dir) => dir,
        Err(e) => {
            gathered.notes.push(format!(
                "The images this block made on {} could not be fetched: no private directory here ({e}).",
                link.target.name
            ));
            return gathered;
        }
    };
    let mut found: Vec<(PathBuf, ImageSource)> = Vec::new();
    for (n, (path, figure)) in listed.iter().enumerate() {
        let source = if *figure {
            ImageSource::Figure
        } else {
            ImageSource::File {
                path: PathBuf::from(path),
            }
        };
        let extension = Path::new(path)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("png")
            .to_ascii_lowercase();
        let local = staging.path().join(format!("{n}.{extension}"));
        // Past the limit only the names count (the keeping names them in a note).
        if found.len() < MAX_IMAGES {
            let quoted = sh_quote(path);
            match link
                .call(|seq| format!("oi_get {seq} {MAX_BYTES} {quoted}\n"))
                .await
            {
                Ok(reply) if reply.values("TOOBIG").next().is_some() => {
                    let bytes = reply
                        .values("TOOBIG")
                        .next()
                        .and_then(|n| n.trim().parse().ok())
                        .unwrap_or(MAX_BYTES);
                    gathered.notes.push(format!(
                        "The image {} on {} ({}) is larger than {} and was not kept.",
                        if *figure { "a figure" } else { path.as_str() },
                        link.target.name,
                        human_bytes(bytes),
                        human_bytes(MAX_BYTES)
                    ));
                    continue;
                }
                Ok(reply) => {
                    if let Err(e) = std::fs::write(&local, &reply.data) {
                        gathered.notes.push(format!(
                            "The image {path} from {} could not be written here: {e}.",
                            link.target.name
                        ));
                        continue;
                    }
                }
                Err(e) => {
                    gathered.notes.push(format!(
                        "The image {path} could not be fetched from {}: {e}.",
                        link.target.name
                    ));
                    continue;
                }
            }
        }
        found.push((local, source));
    }
    // The driver's figures there are taken: they go.
    for (path, figure) in &listed {
        if *figure {
            let quoted = sh_quote(path);
            link.send(|seq| format!("oi_rm {seq} {quoted}\n"));
        }
    }
    let kept = keep_found(found, keep, block);
    gathered.images = kept.images;
    gathered.notes.extend(kept.notes);
    gathered
}
