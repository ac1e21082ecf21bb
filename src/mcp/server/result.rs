//! What a call to `execute` answers: one outcome of the engine (`CallOutcome`) as the text a
//! calling model reads and as structured content matching the tool's `outputSchema`. A block
//! that did not run is an error result (`isError: true`) whose structured content says why
//! (`denied`, `declined`, `skipped`, `cancelled`, `invalid`), so a client can tell a refusal
//! from a failing program (which ran, and is not an error of the tool).

use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::schemars::JsonSchema;
use serde::Serialize;

use crate::protocol::{CallOutcome, NotRun, RunResult, RunStatus};

/// The structured content of an `execute` result (its schema is the tool's `outputSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ExecuteOutput {
    /// Whether the code ran. When false, `status` says why not and `reason` explains.
    pub ran: bool,
    /// `ran`, `failed`, `interrupted`, `timed_out`, `unavailable` or `written` for code that
    /// ran; `denied`, `declined`, `skipped`, `cancelled` or `invalid` for code that did not.
    pub status: String,
    /// The output as text (escape sequences removed; the middle cut when long, head and
    /// tail kept).
    pub output: String,
    /// The exit status, when the code ended with one.
    pub exit_code: Option<i32>,
    /// The signal that ended the kernel, when one did (`SIGKILL`, ...).
    pub signal: Option<String>,
    /// Seconds it ran.
    pub duration_secs: Option<f64>,
    /// True when the kernel ended during this call: variables, imports and the working
    /// directory of this language are gone, and the next call starts a fresh kernel.
    pub state_lost: bool,
    /// True when a person edited the code before it ran: `code` is what ran.
    pub edited: bool,
    /// The code that ran (differs from the code sent when `edited`).
    pub code: Option<String>,
    /// Why the code did not run, and how to allow it, when it did not.
    pub reason: Option<String>,
    /// Lines cut from the middle of `output`, when some were.
    pub lines_cut: Option<u64>,
    /// Sentences about what happened beyond the exit status.
    pub notes: Vec<String>,
    /// The images the code made (figures it showed, image files it wrote), as kept on the
    /// server's machine; raster images also come as image content of the result.
    pub images: Vec<ImageOutput>,
}

/// One image the code made.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ImageOutput {
    /// Where the copy kept with the session is.
    pub path: String,
    /// `png`, `jpeg`, `gif`, `webp` or `svg`.
    pub format: String,
    pub bytes: u64,
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// `figure` for a figure the code showed, else the path of the file it wrote.
    pub origin: String,
}

/// Images sent as content, at most.
const MAX_IMAGE_CONTENT: usize = 4;

/// The name of a run status in `ExecuteOutput::status`.
pub fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Success => "ran",
        RunStatus::Failed => "failed",
        RunStatus::Interrupted => "interrupted",
        RunStatus::TimedOut => "timed_out",
        RunStatus::Unavailable => "unavailable",
        RunStatus::Written => "written",
    }
}

/// The name of a reason not to run in `ExecuteOutput::status`.
pub fn not_run_name(why: NotRun) -> &'static str {
    match why {
        NotRun::Denied => "denied",
        NotRun::Declined => "declined",
        NotRun::Skipped => "skipped",
        NotRun::Cancelled => "cancelled",
        NotRun::Invalid => "invalid",
    }
}

/// The structured form of an outcome.
pub fn output(outcome: &CallOutcome) -> ExecuteOutput {
    match outcome {
        CallOutcome::Ran {
            result,
            code,
            edited,
        } => ran(result, code, *edited),
        CallOutcome::NotRun { why, reason } => ExecuteOutput {
            ran: false,
            status: not_run_name(*why).to_string(),
            output: String::new(),
            exit_code: None,
            signal: None,
            duration_secs: None,
            state_lost: false,
            edited: false,
            code: None,
            reason: Some(reason.clone()),
            lines_cut: None,
            notes: Vec::new(),
            images: Vec::new(),
        },
    }
}

fn ran(result: &RunResult, code: &str, edited: bool) -> ExecuteOutput {
    ExecuteOutput {
        // (Unavailable: no kernel could take it, so it never started.)
        ran: result.status != RunStatus::Unavailable,
        status: status_name(result.status).to_string(),
        output: result.output.clone(),
        exit_code: result.exit_code,
        signal: result.signal.clone(),
        duration_secs: Some((result.duration.as_secs_f64() * 1000.0).round() / 1000.0),
        state_lost: result.state_lost,
        edited,
        code: Some(code.to_string()),
        reason: None,
        lines_cut: result.cut.map(|c| c.lines),
        notes: result.notes.clone(),
        images: result
            .images
            .iter()
            .map(|image| ImageOutput {
                path: image.path.display().to_string(),
                format: format!("{:?}", image.format).to_lowercase(),
                bytes: image.bytes,
                width: image.width,
                height: image.height,
                origin: image.origin(),
            })
            .collect(),
    }
}

/// The text a calling model reads: the output with a summary line, the code that ran when a
/// person edited it, and a warning when kernel state was lost.
pub fn text(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Ran {
            result,
            code,
            edited,
        } => {
            let mut text = String::new();
            if *edited {
                text.push_str(&format!(
                    "The user edited the code before it ran. This is what ran:\n```\n{}\n```\n",
                    code.trim_end()
                ));
            }
            text.push_str(&result.for_model());
            if result.state_lost
                && !result
                    .notes
                    .iter()
                    .any(|n| n.to_lowercase().contains("state"))
            {
                text.push_str(
                    "The kernel ended: its state (variables, imports, the working directory) is lost; the next call starts a fresh one.\n",
                );
            }
            text
        }
        CallOutcome::NotRun { why, reason } => {
            format!("Not run ({}). {}", not_run_name(*why), reason)
        }
    }
}

/// The raster images of a result as image content, the first few, encoded as a vision
/// model gets them (longest side at most 1568 px): each is listed in the text and in the
/// structured content either way.
fn image_content(result: &RunResult) -> Vec<ContentBlock> {
    result
        .images
        .iter()
        .filter(|image| image.format.is_raster())
        .take(MAX_IMAGE_CONTENT)
        .filter_map(|image| crate::llm::image_encode::encode(image).ok())
        .map(|part| ContentBlock::image(part.data.to_string(), part.media_type))
        .collect()
}

/// The MCP result of an outcome: text and structured content; an error when it did not run.
pub fn call_result(outcome: &CallOutcome) -> CallToolResult {
    let structured = serde_json::to_value(output(outcome)).unwrap_or_default();
    let mut result = CallToolResult::structured(structured);
    result.content = vec![ContentBlock::text(text(outcome))];
    if let CallOutcome::Ran { result: ran, .. } = outcome {
        result.content.extend(image_content(ran));
    }
    result.is_error = Some(match outcome {
        CallOutcome::NotRun { .. } => true,
        CallOutcome::Ran { result, .. } => result.status == RunStatus::Unavailable,
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Cut, Language};
    use std::time::Duration;

    fn result(status: RunStatus, output: &str) -> RunResult {
        RunResult {
            block_id: 1,
            language: Language::Python,
            status,
            exit_code: Some(if status == RunStatus::Success { 0 } else { 1 }),
            signal: None,
            duration: Duration::from_millis(1234),
            output: output.to_string(),
            cut: None,
            output_bytes: output.len() as u64,
            state_lost: false,
            notes: Vec::new(),
            file: None,
            images: Vec::new(),
        }
    }

    #[test]
    fn a_block_no_kernel_could_take_is_an_error_that_did_not_run() {
        let mut r = result(RunStatus::Unavailable, "");
        r.exit_code = None;
        r.notes = vec!["lab did not answer within 15 s; nothing was started there.".into()];
        let outcome = CallOutcome::Ran {
            result: Box::new(r),
            code: "hostname".into(),
            edited: false,
        };
        let call = call_result(&outcome);
        assert_eq!(call.is_error, Some(true));
        let s = serde_json::to_value(output(&outcome)).unwrap();
        assert_eq!(s["ran"], false);
        assert_eq!(s["status"], "unavailable");
        assert!(
            text(&outcome).contains("did not answer"),
            "{}",
            text(&outcome)
        );
    }

    #[test]
    fn a_run_has_output_status_duration_and_is_not_an_error() {
        let outcome = CallOutcome::Ran {
            result: Box::new(result(RunStatus::Success, "42\n")),
            code: "print(42)".into(),
            edited: false,
        };
        let r = call_result(&outcome);
        assert_eq!(r.is_error, Some(false));
        let s = r.structured_content.clone().unwrap_or_default();
        assert_eq!(s["ran"], true);
        assert_eq!(s["status"], "ran");
        assert_eq!(s["output"], "42\n");
        assert_eq!(s["exit_code"], 0);
        assert_eq!(s["duration_secs"], 1.234);
        assert_eq!(s["code"], "print(42)");
        let text = r.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default();
        assert!(text.starts_with("42\n"), "{text}");
        assert!(!text.contains("edited"), "{text}");
    }

    #[test]
    fn an_edited_run_says_so_and_shows_the_code_that_ran() {
        let mut res = result(RunStatus::Failed, "boom\n");
        res.state_lost = true;
        res.cut = Some(Cut {
            lines: 10,
            total_lines: 50,
            total_bytes: 900,
        });
        let outcome = CallOutcome::Ran {
            result: Box::new(res),
            code: "print('edited')".into(),
            edited: true,
        };
        let out = output(&outcome);
        assert!(out.edited && out.state_lost);
        assert_eq!(out.status, "failed");
        assert_eq!(out.lines_cut, Some(10));
        let t = text(&outcome);
        assert!(t.contains("The user edited the code"), "{t}");
        assert!(t.contains("print('edited')"), "{t}");
        assert!(t.contains("state"), "{t}");
        // A failing program is a result, not a tool error.
        assert_eq!(call_result(&outcome).is_error, Some(false));
    }

    #[test]
    fn images_come_as_content_and_in_the_structured_result() {
        use crate::protocol::{Image, ImageFormat, ImageSource};
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("1-1.png");
        image::RgbImage::new(4, 3).save(&png).unwrap();
        let svg = dir.path().join("1-2.svg");
        std::fs::write(&svg, "<svg/>").unwrap();
        let mut res = result(RunStatus::Success, "");
        res.images = vec![
            Image {
                path: png.clone(),
                format: ImageFormat::Png,
                bytes: 12,
                width: Some(4),
                height: Some(3),
                source: ImageSource::Figure,
            },
            Image {
                path: svg,
                format: ImageFormat::Svg,
                bytes: 6,
                width: None,
                height: None,
                source: ImageSource::File {
                    path: "/home/ada/project/plot.svg".into(),
                },
            },
        ];
        let outcome = CallOutcome::Ran {
            result: Box::new(res),
            code: "plot()".into(),
            edited: false,
        };
        let r = call_result(&outcome);
        // The text, then the PNG; an SVG is listed only.
        assert_eq!(r.content.len(), 2, "{:?}", r.content);
        let image = r.content[1].as_image().unwrap();
        assert_eq!(image.mime_type, "image/png");
        use base64::Engine as _;
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&image.data)
                .unwrap(),
            std::fs::read(&png).unwrap()
        );
        let s = r.structured_content.clone().unwrap_or_default();
        assert_eq!(s["images"][0]["width"], 4);
        assert_eq!(s["images"][0]["origin"], "figure");
        assert_eq!(s["images"][1]["format"], "svg");
        assert_eq!(s["images"][1]["origin"], "/home/ada/project/plot.svg");
        let text = r.content[0].as_text().unwrap().text.clone();
        assert!(
            text.contains("image 2: /home/ada/project/plot.svg, SVG"),
            "{text}"
        );
    }

    #[test]
    fn a_block_that_did_not_run_is_an_error_saying_why() {
        let outcome = CallOutcome::NotRun {
            why: NotRun::Denied,
            reason: "A deny rule matches: rm -rf.".into(),
        };
        let r = call_result(&outcome);
        assert_eq!(r.is_error, Some(true));
        let s = r.structured_content.clone().unwrap_or_default();
        assert_eq!(s["ran"], false);
        assert_eq!(s["status"], "denied");
        assert_eq!(s["reason"], "A deny rule matches: rm -rf.");
        let text = r.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default();
        assert!(
            text.contains("Not run (denied)") && text.contains("rm -rf"),
            "{text}"
        );
    }

    #[test]
    fn the_output_schema_lists_every_field() {
        let schema = rmcp::schemars::schema_for!(ExecuteOutput);
        let value = serde_json::to_value(&schema).unwrap_or_default();
        for field in [
            "ran",
            "status",
            "output",
            "exit_code",
            "state_lost",
            "edited",
        ] {
            assert!(value["properties"].get(field).is_some(), "{field}: {value}");
        }
    }
}
