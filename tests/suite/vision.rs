//! Images to vision models: a plot a real Python kernel makes reaches the scripted model
//! server as an image part in each of the three APIs, with its pixel dimensions; a large
//! image arrives downscaled; a server that refuses images gets the request again without
//! them, once, and the refusal is remembered for the model; `--vision off` sends none and
//! `--vision on` sends to a model whose name is unknown.

use std::time::Duration;

use base64::Engine as _;
use oi_tui::engine::{self, EngineConfig};
use oi_tui::llm::vision::VisionMode;
use oi_tui::protocol::{Event, Op};

use super::model_server::{ModelServer, Reply, Request};

const PLOT: &str = "import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\nprint('plotted')";
const WIDE: &str = "from PIL import Image\nImage.new('RGB', (3000, 1000), (0, 90, 200)).save('wide.png')\nprint('saved')";
const SMALL: &str = "from PIL import Image\nImage.new('RGB', (64, 48), (200, 0, 0)).save('small.png')\nprint('saved')";

/// An engine on `spec` at the server, in `dir`, whose kernels find the test venv's Python
/// (with matplotlib and Pillow) first on their PATH.
fn config(
    spec: &str,
    server: &ModelServer,
    dir: &std::path::Path,
    vision: VisionMode,
) -> EngineConfig {
    let provider = spec.split('/').next().unwrap_or_default();
    let mut config = super::support::engine_config(spec, Some(server.base(provider)), dir);
    let venv_bin = super::support::mcp_python()
        .parent()
        .expect("the venv's bin")
        .to_path_buf();
    let path = std::env::var("PATH").unwrap_or_default();
    config.kernels.env = vec![(
        "PATH".into(),
        format!("{}:{path}", venv_bin.display()).into(),
    )];
    config.kernels.image_dir = Some(dir.join("images"));
    config.vision = vision;
    config
}

/// Sends one message and returns the events up to the turn's end.
async fn turn(config: EngineConfig) -> Vec<Event> {
    let mut handle = engine::spawn(config).expect("engine");
    handle
        .ops
        .send(Op::UserMessage {
            text: "make the chart".into(),
        })
        .expect("send");
    let mut events = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(120), handle.events.recv())
            .await
            .expect("an event in time")
            .expect("the engine runs");
        let done = matches!(event, Event::TurnFinished { .. });
        events.push(event);
        if done {
            break;
        }
    }
    let _ = handle.ops.send(Op::Shutdown);
    let _ = tokio::time::timeout(Duration::from_secs(30), handle.task).await;
    events
}

/// The images of a request: media type, decoded format and pixel dimensions.
fn decoded(request: &Request) -> Vec<(String, image::ImageFormat, u32, u32)> {
    request
        .images()
        .into_iter()
        .map(|(media, data)| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.as_bytes())
                .expect("base64");
            let format = image::guess_format(&bytes).expect("an image format");
            let img = image::load_from_memory(&bytes).expect("an image");
            (media, format, img.width(), img.height())
        })
        .collect()
}

fn notices(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn result_images(events: &[Event]) -> Vec<oi_tui::protocol::Image> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ExecFinished { result, .. } => Some(result.images.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matplotlib_plot_reaches_the_model_as_an_image_in_each_protocol() {
    for spec in [
        "openai/gpt-4o",
        "ollama/llava:7b",
        "anthropic/claude-3-5-sonnet-20241022",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let server = ModelServer::start(vec![
            Reply::tool("python", PLOT),
            Reply::text("A rising curve."),
        ])
        .await;
        let events = turn(config(spec, &server, dir.path(), VisionMode::Auto)).await;
        let images = result_images(&events);
        assert_eq!(images.len(), 1, "{spec}: {events:#?}");
        assert_eq!((images[0].width, images[0].height), (Some(400), Some(300)));
        let chats = server.chats();
        assert_eq!(chats.len(), 2, "{spec}");
        assert!(
            decoded(&chats[0]).is_empty(),
            "no image before the block ran"
        );
        let sent = decoded(&chats[1]);
        assert_eq!(
            sent,
            vec![("image/png".to_string(), image::ImageFormat::Png, 400, 300)],
            "{spec}"
        );
        let body = &chats[1].body;
        let messages = body["messages"].as_array().unwrap();
        match spec.split('/').next().unwrap() {
            "openai" => {
                // After the tool message, a user message holds the image part.
                let last = messages.last().unwrap();
                assert_eq!(last["role"], "user");
                assert_eq!(last["content"][1]["type"], "image_url");
                assert!(
                    last["content"][0]["text"]
                        .as_str()
                        .unwrap()
                        .contains("call_0")
                );
                assert_eq!(messages[messages.len() - 2]["role"], "tool");
                assert!(
                    messages[messages.len() - 2]["content"]
                        .as_str()
                        .unwrap()
                        .contains("image 1: figure, 400×300 PNG")
                );
            }
            "anthropic" => {
                let result = &messages.last().unwrap()["content"][0];
                assert_eq!(result["type"], "tool_result");
                assert_eq!(result["content"][1]["type"], "image");
                assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
            }
            _ => {
                let last = messages.last().unwrap();
                assert_eq!(last["role"], "user");
                assert_eq!(last["images"].as_array().unwrap().len(), 1);
                assert!(!last["images"][0].as_str().unwrap().starts_with("data:"));
                assert_eq!(messages[messages.len() - 2]["role"], "tool");
            }
        }
        // The server took them: remembered for the model.
        let memory = std::fs::read_to_string(dir.path().join("data/vision.json")).unwrap();
        assert!(memory.contains(spec) && memory.contains("true"), "{memory}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_image_arrives_downscaled_with_fenced_results() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        Reply::text(&format!("Here:\n```python\n{WIDE}\n```\n")),
        Reply::text("A wide blue image."),
    ])
    .await;
    let mut cfg = config("openai/gpt-4.1-mini", &server, dir.path(), VisionMode::Auto);
    cfg.tools = false;
    let events = turn(cfg).await;
    let images = result_images(&events);
    assert_eq!(images.len(), 1, "{events:#?}");
    assert_eq!(
        (images[0].width, images[0].height),
        (Some(3000), Some(1000))
    );
    let chats = server.chats();
    assert_eq!(chats.len(), 2);
    assert_eq!(
        decoded(&chats[1]),
        vec![("image/png".to_string(), image::ImageFormat::Png, 1568, 523)]
    );
    // Fenced results are a user message: the image parts are added to it.
    let last = chats[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("saved")
    );
    assert_eq!(last["content"][1]["type"], "image_url");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_refuses_images_gets_the_request_again_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        Reply::tool("python", SMALL),
        Reply::text("Done without seeing it."),
    ])
    .await;
    server.refuse_images(
        400,
        r#"{"error":{"message":"image input is not supported by this model"}}"#,
    );
    let events = turn(config(
        "openai/gpt-4o",
        &server,
        dir.path(),
        VisionMode::Auto,
    ))
    .await;
    assert!(
        events.iter().any(
            |e| matches!(e, Event::AssistantMessage { text } if text == "Done without seeing it.")
        ),
        "{events:#?}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Error { .. })),
        "{events:#?}"
    );
    let chats = server.chats();
    assert_eq!(
        chats.len(),
        3,
        "first, refused with the image, again without"
    );
    assert_eq!(decoded(&chats[1]).len(), 1);
    assert!(decoded(&chats[2]).is_empty());
    assert_eq!(chats[1].body["messages"].as_array().unwrap().len(), 5);
    assert_eq!(
        chats[2].body["messages"].as_array().unwrap().len(),
        4,
        "the same request, less the images' message"
    );
    let said: Vec<String> = notices(&events)
        .into_iter()
        .filter(|n| n.contains("images"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert!(said[0].contains("--vision on"), "{}", said[0]);
    assert!(
        said[0].contains("image input is not supported"),
        "{}",
        said[0]
    );

    // The next session with the same model and server sends no images under auto.
    server.script(vec![Reply::tool("python", SMALL), Reply::text("ok")]);
    let events = turn(config(
        "openai/gpt-4o",
        &server,
        dir.path(),
        VisionMode::Auto,
    ))
    .await;
    assert_eq!(result_images(&events).len(), 1, "{events:#?}");
    let chats = server.chats();
    assert_eq!(chats.len(), 5, "two more requests, none refused");
    assert!(decoded(&chats[4]).is_empty(), "remembered: no images");
    assert!(notices(&events).iter().all(|n| !n.contains("did not take")));
}

/// A 400 that has nothing to do with images (the retry without them fails as well) does
/// not turn images off for the model: neither for the rest of the session nor for the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_that_is_not_about_images_does_not_turn_them_off() {
    let dir = tempfile::tempdir().unwrap();
    let failing = r#"{"error":{"message":"the request is malformed"}}"#;
    let server = ModelServer::start(vec![
        Reply::tool("python", SMALL),
        Reply::status(400, failing),
        Reply::status(400, failing),
    ])
    .await;
    let events = turn(config(
        "openai/gpt-4o",
        &server,
        dir.path(),
        VisionMode::Auto,
    ))
    .await;
    let chats = server.chats();
    assert_eq!(chats.len(), 3, "{events:#?}");
    assert_eq!(decoded(&chats[1]).len(), 1);
    assert!(decoded(&chats[2]).is_empty());
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.contains("failed without the images as well")),
        "{said:?}"
    );
    // The next session with the same model still sends its images.
    server.script(vec![Reply::tool("python", SMALL), Reply::text("ok")]);
    turn(config(
        "openai/gpt-4o",
        &server,
        dir.path(),
        VisionMode::Auto,
    ))
    .await;
    let chats = server.chats();
    assert_eq!(chats.len(), 5);
    assert_eq!(decoded(&chats[4]).len(), 1, "images are still sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vision_off_sends_none_and_on_sends_to_an_unknown_model() {
    for (spec, mode, expect) in [
        ("openai/gpt-4o", VisionMode::Off, 0),
        ("openai/scripted-large", VisionMode::Auto, 0),
        ("openai/scripted-large", VisionMode::On, 1),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let server =
            ModelServer::start(vec![Reply::tool("python", SMALL), Reply::text("ok")]).await;
        let events = turn(config(spec, &server, dir.path(), mode)).await;
        assert_eq!(
            result_images(&events).len(),
            1,
            "{spec} {mode:?}: {events:#?}"
        );
        let chats = server.chats();
        assert_eq!(chats.len(), 2);
        let sent = decoded(&chats[1]);
        assert_eq!(sent.len(), expect, "{spec} {mode:?}");
        if expect == 1 {
            assert_eq!((sent[0].2, sent[0].3), (64, 48));
        }
        // Whatever is sent, the result's text lists the image.
        assert!(chats[1].all_text().contains("small.png, 64×48 PNG"));
    }
}

/// `oi-tui --task … --vision VALUE` in `dir`, its kernels finding the venv's Python first.
async fn headless(
    dir: &std::path::Path,
    server: &ModelServer,
    vision: &str,
) -> std::process::Output {
    let venv_bin = super::support::mcp_python()
        .parent()
        .expect("the venv's bin")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        venv_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.args([
        "--task",
        "make the chart",
        "-y",
        "--model",
        "openai/scripted",
    ])
    .args(["--api-base", &server.base("openai"), "--vision", vision])
    .arg("--data-dir")
    .arg(dir.join("data"))
    .current_dir(dir)
    .env("PATH", path)
    .env("XDG_CONFIG_HOME", dir.join("config"))
    .env("XDG_DATA_HOME", dir.join("share"))
    .env_remove("OPENAI_API_KEY")
    .env_remove("OI_TUI_MODEL")
    .env_remove("OI_TUI_API_BASE")
    .stdin(std::process::Stdio::null())
    .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("oi-tui finished in time")
        .expect("oi-tui ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vision_flag_reaches_the_engine_and_a_refusal_is_said_headless() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        Reply::tool("python", SMALL),
        Reply::text("Seen."),
        Reply::tool("python", SMALL),
        Reply::text("Not seen."),
    ])
    .await;
    let out = headless(dir.path(), &server, "on").await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        decoded(&server.chats()[1]).len(),
        1,
        "on: sent to an unknown name"
    );

    server.refuse_images(
        415,
        r#"{"error":{"message":"unsupported content type: image_url"}}"#,
    );
    let out = headless(dir.path(), &server, "on").await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Not seen."));
    assert!(stderr.contains("did not take the images"), "{stderr}");
    assert!(stderr.contains("not remembered"), "{stderr}");
    let chats = server.chats();
    assert_eq!(chats.len(), 5);
    assert_eq!(decoded(&chats[3]).len(), 1);
    assert!(decoded(&chats[4]).is_empty());

    let out = headless(dir.path(), &server, "maybe").await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give auto, on or off"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_four_images_go_with_one_request_and_older_results_keep_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let five = "from PIL import Image\nfor i in range(5):\n    Image.new('RGB', (20 + i, 10), (i * 40, 0, 0)).save(f'p{i}.png')\nprint('five')";
    let server = ModelServer::start(vec![
        Reply::tool("python", five),
        Reply::tool("python", "print('no image')"),
        Reply::text("done"),
    ])
    .await;
    let events = turn(config(
        "openai/gpt-4o",
        &server,
        dir.path(),
        VisionMode::Auto,
    ))
    .await;
    assert_eq!(result_images(&events).len(), 5, "{events:#?}");
    let chats = server.chats();
    assert_eq!(chats.len(), 3);
    assert_eq!(decoded(&chats[1]).len(), 4);
    assert!(
        chats[1].all_text().contains(
            "1 more image not attached (image 5 of block 1): at most 4 images go with one message"
        ),
        "{}",
        chats[1].all_text()
    );
    // The next round's results are the latest: the plots go as their text lines only.
    assert!(decoded(&chats[2]).is_empty());
    assert!(chats[2].all_text().contains("p4.png, 24×10 PNG"));
}
