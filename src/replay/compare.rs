//! How a replayed block's result is compared with the recorded one, and the verdict in words
//! and as JSON.
//!
//! Output is compared in its text form, the one the store keeps as a block's `tail`: escape
//! sequences stripped, overwrites resolved. Both sides are normalised the same way (carriage
//! returns dropped, spaces at line ends and blank lines at the end ignored). A long output is
//! kept as its head and tail with a line saying what was cut from the middle; when either
//! side was cut, only what both kept is compared (the first lines both heads have, the last
//! lines both tails have, the line at each cut edge left out since it may be a part of a
//! line), and the total number of lines, which the cut line states, must match too. Status
//! means the status word and the exit code. Images are compared by count and pixel
//! dimensions, then by their pixels: a chart of other data has the same size but not the
//! same picture. A trace of change is allowed (anti-aliasing of a newer library).

use serde::Serialize;

use crate::protocol::{Image, RunResult};
use crate::store::StoredBlock;

/// Lines of a unified diff kept in a report; the rest is counted.
pub const DIFF_LINES: usize = 40;

/// One difference between the recording and the replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Difference {
    /// The status word or exit code changed: `exit 0` then, `exit 1` now.
    Status { was: String, now: String },
    /// The text output changed: a unified diff, recorded (`-`) against now (`+`).
    Output { diff: String },
    /// The images changed in count or pixel dimensions.
    Images { was: String, now: String },
}

/// What became of one replayed block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Same,
    Differs {
        differences: Vec<Difference>,
    },
    /// It did not run this time (skipped, denied, declined...), and why.
    NotRun {
        reason: String,
    },
}

impl Verdict {
    /// `same`, `output differs`, `status differs, images differ`, `not run`.
    pub fn words(&self) -> String {
        match self {
            Verdict::Same => "same".to_string(),
            Verdict::NotRun { .. } => "not run".to_string(),
            Verdict::Differs { differences } => differences
                .iter()
                .map(|d| match d {
                    Difference::Status { .. } => "status differs",
                    Difference::Output { .. } => "output differs",
                    Difference::Images { .. } => "images differ",
                })
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// Compares a block's recorded end with its replayed result.
pub fn compare(recorded: &StoredBlock, now: &RunResult) -> Verdict {
    let mut differences = Vec::new();
    let was = recorded_status(recorded);
    let now_status = status_words(now.status.label(), now.exit_code.map(i64::from));
    if was != now_status {
        differences.push(Difference::Status {
            was,
            now: now_status,
        });
    }
    let old = recorded.tail.as_deref().unwrap_or("");
    if let Some(diff) = output_diff(old, &now.output) {
        differences.push(Difference::Output { diff });
    }
    let (was, now_images) = (images_words(&recorded.images), images_words(&now.images));
    if was != now_images {
        differences.push(Difference::Images {
            was,
            now: now_images,
        });
    } else if let Some(changed) = pixels_changed(&recorded.images, &now.images) {
        differences.push(Difference::Images {
            was: format!("image {} as recorded", changed.0),
            now: format!(
                "image {} drawn differently ({:.1}% of its pixels changed)",
                changed.0, changed.1
            ),
        });
    }
    if differences.is_empty() {
        Verdict::Same
    } else {
        Verdict::Differs { differences }
    }
}

/// The recorded status in words: `ran · exit 0`; a block oi-tui stopped in the middle of
/// says so.
fn recorded_status(b: &StoredBlock) -> String {
    if b.interrupted {
        return crate::store::INTERRUPTED.to_string();
    }
    status_words(b.status.as_deref().unwrap_or("unknown"), b.exit_code)
}

fn status_words(label: &str, exit: Option<i64>) -> String {
    match exit {
        Some(code) => format!("{label} · exit {code}"),
        None => label.to_string(),
    }
}

/// The first image (numbered from 1) whose pixels changed by more than a trace, and the
/// share changed in percent: a chart of other data is the same size but not the same
/// picture. Pixels that differ only slightly (anti-aliasing) do not count, nor do images
/// that cannot be read (a recorded one deleted since).
fn pixels_changed(recorded: &[Image], now: &[Image]) -> Option<(usize, f64)> {
    /// A pixel counts as changed when a channel moved this much (of 255).
    const CHANNEL: u8 = 24;
    /// An image counts as changed when more than this share of its pixels did.
    const SHARE: f64 = 0.001;
    for (n, (a, b)) in recorded.iter().zip(now).enumerate() {
        if !a.format.is_raster() || !b.format.is_raster() {
            continue;
        }
        let (Ok(a), Ok(b)) = (image::open(&a.path), image::open(&b.path)) else {
            continue;
        };
        let (a, b) = (a.to_rgba8(), b.to_rgba8());
        if a.dimensions() != b.dimensions() {
            continue;
        }
        let total = (a.width() as u64 * a.height() as u64).max(1);
        let changed = a
            .pixels()
            .zip(b.pixels())
            .filter(|(p, q)| p.0.iter().zip(q.0).any(|(x, y)| x.abs_diff(y) > CHANNEL))
            .count() as f64;
        let share = changed / total as f64;
        if share > SHARE {
            return Some((n + 1, share * 100.0));
        }
    }
    None
}

/// `none`, or `2 images: 640×480 PNG, 100×100 SVG`.
fn images_words(images: &[Image]) -> String {
    if images.is_empty() {
        return "none".to_string();
    }
    let each: Vec<String> = images
        .iter()
        .map(|i| match (i.width, i.height) {
            (Some(w), Some(h)) => format!("{w}×{h} {}", i.format.label()),
            _ => i.format.label().to_string(),
        })
        .collect();
    format!(
        "{} image{}: {}",
        images.len(),
        if images.len() == 1 { "" } else { "s" },
        each.join(", ")
    )
}

/// A text output split at the line that says what was cut from its middle.
struct Kept {
    head: Vec<String>,
    /// The lines after the cut, when it was cut.
    tail: Option<Vec<String>>,
    /// Lines the whole output had (from the cut line when cut).
    total: u64,
}

fn kept(text: &str) -> Kept {
    let text = text.replace('\r', "");
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let cut = lines
        .iter()
        .position(|l| l.starts_with("[… ") && l.ends_with(" …]") && l.contains("cut from the"));
    match cut {
        None => Kept {
            total: lines.len() as u64,
            head: lines,
            tail: None,
        },
        Some(at) => {
            let tail = lines.split_off(at + 1);
            let marker = lines.pop().unwrap_or_default();
            Kept {
                total: total_lines(&marker).unwrap_or(0),
                head: lines,
                tail: Some(tail),
            }
        }
    }
}

/// `[… 90 of 100 lines (4.2 KB) cut from the middle …]` → 100.
fn total_lines(marker: &str) -> Option<u64> {
    let (_, rest) = marker.split_once(" of ")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// None when the outputs agree in what both kept; else a unified diff (capped).
pub fn output_diff(recorded: &str, now: &str) -> Option<String> {
    let (a, b) = (kept(recorded), kept(now));
    let (old, new, note) = match (&a.tail, &b.tail) {
        (None, None) => (a.head.join("\n"), b.head.join("\n"), None),
        _ => {
            let (a_head, a_tail) = edges(&a);
            let (b_head, b_tail) = edges(&b);
            let h = a_head.len().min(b_head.len());
            let t = a_tail.len().min(b_tail.len());
            let both = |head: &[String], tail: &[String]| {
                let mut lines = head[..h].to_vec();
                lines.push("[…]".to_string());
                lines.extend_from_slice(&tail[tail.len() - t..]);
                lines.join("\n")
            };
            let note = (a.total != b.total).then(|| {
                format!(
                    "(the output had {} lines then, {} now; compared the first {h} and last {t} lines, which both kept)",
                    a.total, b.total
                )
            });
            (both(&a_head, &a_tail), both(&b_head, &b_tail), note)
        }
    };
    if old == new && note.is_none() {
        return None;
    }
    let mut diff = unified(&old, &new);
    if let Some(note) = note {
        diff.push_str(&note);
        diff.push('\n');
    }
    Some(diff)
}

/// The whole lines at the start and at the end of an output: for a cut one, its head less
/// its last line and its tail less its first (either may be a piece of a line); for an
/// uncut one, all of it on both sides.
fn edges(k: &Kept) -> (Vec<String>, Vec<String>) {
    match &k.tail {
        None => (k.head.clone(), k.head.clone()),
        Some(tail) => {
            let head = k.head[..k.head.len().saturating_sub(1)].to_vec();
            let tail = tail.get(1..).unwrap_or_default().to_vec();
            (head, tail)
        }
    }
}

/// A unified diff of two texts, at most `DIFF_LINES` lines (the rest counted).
fn unified(old: &str, new: &str) -> String {
    let (old, new) = (format!("{old}\n"), format!("{new}\n"));
    let text = similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(2)
        .header("recorded", "now")
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines
        .iter()
        .take(DIFF_LINES)
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    if lines.len() > DIFF_LINES {
        out.push_str(&format!(
            "[… {} more lines of diff]\n",
            lines.len() - DIFF_LINES
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_ignores_line_end_spaces_and_carriage_returns() {
        assert_eq!(output_diff("a \r\nb\n\n", "a\nb"), None);
    }

    #[test]
    fn changed_line_is_a_unified_diff() {
        let diff = output_diff("one\ntwo\nthree\n", "one\n2\nthree\n").unwrap_or_default();
        assert!(diff.contains("--- recorded"), "{diff}");
        assert!(diff.contains("+++ now"), "{diff}");
        assert!(diff.contains("-two"), "{diff}");
        assert!(diff.contains("+2"), "{diff}");
    }

    fn long(n: usize, keep: usize) -> String {
        let all: Vec<String> = (0..n).map(|i| format!("line {i}")).collect();
        format!(
            "{}\n[… {} of {n} lines (9 KB) cut from the middle …]\n{}\n",
            all[..keep].join("\n"),
            n - 2 * keep,
            all[n - keep..].join("\n")
        )
    }

    #[test]
    fn cut_outputs_compare_what_both_kept() {
        // Recorded with a larger limit than now: the same output, cut differently.
        assert_eq!(output_diff(&long(1000, 50), &long(1000, 20)), None);
        // An uncut output against the cut recording of the same lines.
        let all: Vec<String> = (0..1000).map(|i| format!("line {i}")).collect();
        assert_eq!(output_diff(&long(1000, 50), &all.join("\n")), None);
        // More lines now: said, though head and tail agree.
        let diff = output_diff(&long(1000, 50), &long(1001, 50)).unwrap_or_default();
        assert!(diff.contains("1000 lines then, 1001 now"), "{diff}");
    }

    #[test]
    fn long_diffs_are_capped() {
        let old: String = (0..500).map(|i| format!("{i}\n")).collect();
        let new: String = (0..500).map(|i| format!("x{i}\n")).collect();
        let diff = output_diff(&old, &new).unwrap_or_default();
        assert!(diff.lines().count() <= DIFF_LINES + 1, "{diff}");
        assert!(diff.contains("more lines of diff"), "{diff}");
    }

    #[test]
    fn image_words_name_count_and_size() {
        let image = Image {
            path: "a.png".into(),
            format: crate::protocol::ImageFormat::Png,
            bytes: 10,
            width: Some(640),
            height: Some(480),
            source: crate::protocol::ImageSource::Figure,
        };
        assert_eq!(images_words(&[]), "none");
        assert_eq!(images_words(&[image]), "1 image: 640×480 PNG");
    }

    fn stored(tail: &str, exit: i64, images: Vec<Image>) -> StoredBlock {
        StoredBlock {
            block_id: 1,
            language: "python".into(),
            proposed_code: "print(1)".into(),
            edited_code: None,
            decision: "run".into(),
            status: Some(if exit == 0 { "ran" } else { "failed" }.into()),
            exit_code: Some(exit),
            signal: None,
            duration_ms: Some(10),
            output: None,
            created_at: 0,
            skip_reason: None,
            tail: Some(tail.into()),
            notes: Vec::new(),
            state_lost: false,
            after_message: None,
            dropped: false,
            interrupted: false,
            caller: None,
            images,
        }
    }

    fn result(output: &str, exit: i32, images: Vec<Image>) -> RunResult {
        RunResult {
            block_id: 7,
            language: crate::protocol::Language::Python,
            status: if exit == 0 {
                crate::protocol::RunStatus::Success
            } else {
                crate::protocol::RunStatus::Failed
            },
            exit_code: Some(exit),
            signal: None,
            duration: std::time::Duration::from_millis(20),
            output: output.into(),
            cut: None,
            output_bytes: output.len() as u64,
            state_lost: false,
            notes: Vec::new(),
            file: None,
            images,
        }
    }

    fn png(width: u32) -> Image {
        Image {
            path: "a.png".into(),
            format: crate::protocol::ImageFormat::Png,
            bytes: 10,
            width: Some(width),
            height: Some(480),
            source: crate::protocol::ImageSource::Figure,
        }
    }

    #[test]
    fn verdicts_name_each_difference() {
        // Durations and image sizes in bytes do not count.
        assert_eq!(
            compare(
                &stored("1\n", 0, vec![png(640)]),
                &result("1\n", 0, vec![png(640)])
            ),
            Verdict::Same
        );
        let verdict = compare(&stored("1\n", 0, vec![png(640)]), &result("2\n", 1, vec![]));
        assert_eq!(
            verdict.words(),
            "status differs, output differs, images differ"
        );
        let Verdict::Differs { differences } = verdict else {
            panic!("differs");
        };
        assert_eq!(
            differences[0],
            Difference::Status {
                was: "ran · exit 0".into(),
                now: "failed · exit 1".into()
            }
        );
        assert_eq!(
            differences[2],
            Difference::Images {
                was: "1 image: 640×480 PNG".into(),
                now: "none".into()
            }
        );
        // Same count, other pixel dimensions.
        let verdict = compare(
            &stored("", 0, vec![png(640)]),
            &result("", 0, vec![png(800)]),
        );
        assert_eq!(verdict.words(), "images differ");
    }

    #[test]
    fn a_chart_of_other_data_differs_and_a_trace_of_anti_aliasing_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let draw = |name: &str, line_at: u32, shade: u8| {
            let mut picture = image::RgbImage::from_pixel(100, 50, image::Rgb([255, 255, 255]));
            for x in 0..100 {
                picture.put_pixel(x, line_at, image::Rgb([shade, 0, 0]));
            }
            let path = dir.path().join(name);
            picture.save(&path).unwrap();
            Image {
                path,
                width: Some(100),
                height: Some(50),
                ..png(100)
            }
        };
        let was = draw("was.png", 10, 200);
        // The same line, a shade lighter: anti-aliasing, not a change.
        let shaded = draw("shaded.png", 10, 210);
        assert_eq!(
            compare(
                &stored("", 0, vec![was.clone()]),
                &result("", 0, vec![shaded])
            ),
            Verdict::Same
        );
        // The line elsewhere: other data.
        let moved = draw("moved.png", 40, 200);
        let verdict = compare(&stored("", 0, vec![was]), &result("", 0, vec![moved]));
        let Verdict::Differs { differences } = verdict else {
            panic!("a moved line differs");
        };
        assert_eq!(
            differences,
            [Difference::Images {
                was: "image 1 as recorded".into(),
                now: "image 1 drawn differently (4.0% of its pixels changed)".into()
            }]
        );
    }
}
