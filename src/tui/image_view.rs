//! Drawing a block's images: below the lines that name them in the terminal pane (while
//! that block is the last one there, the pane is at its bottom, and there is room), and in
//! the image viewer, an overlay as large as the screen. What is drawn comes ready from the
//! image cache (decoded and encoded once per image and size); while it is being made the
//! viewer says so.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::app::App;
use super::image_cache::Fit;
use super::keymap::Action;
use crate::protocol::Image;

/// The fewest rows worth drawing an image in, in the terminal pane.
const MIN_ROWS: u16 = 3;

/// The images of the last block, below its output in the terminal pane (`inner`: the
/// pane's inside), side by side as far as they fit.
pub fn draw_inline(frame: &mut Frame, app: &App, inner: Rect) {
    if app.images.cache.graphics.protocol.is_none() || app.terminal.scroll() > 0 {
        return;
    }
    let Some((block, images)) = app.images.latest() else {
        return;
    };
    if app.terminal.last_block() != Some(block) {
        return;
    }
    let (row, col) = app.terminal.screen().cursor_position();
    let top = if col == 0 { row } else { row + 1 };
    let rows = inner.height.saturating_sub(top);
    if rows < MIN_ROWS {
        return;
    }
    let mut x = inner.x;
    let right = inner.x + inner.width;
    for image in images.iter().filter(|i| i.format.is_raster()) {
        let cols = right.saturating_sub(x);
        if cols < 4 {
            break;
        }
        match app.images.cache.get(&image.path, cols, rows, Fit::Shrink) {
            Some(Ok(protocol)) => {
                let size = protocol.size();
                let area = Rect::new(
                    x,
                    inner.y + top,
                    size.width.min(cols),
                    size.height.min(rows),
                );
                frame.render_widget(ratatui_image::Image::new(&protocol), area);
                x += area.width + 1;
            }
            // Cannot be drawn: its line says what it is.
            Some(Err(_)) => {}
            // Being made: the next ones wait for its width.
            None => break,
        }
    }
}

/// The viewer: the image as large as the screen allows, its title and keys.
pub fn draw_viewer(frame: &mut Frame, app: &App, area: Rect) {
    let Some(shown) = app.images.current() else {
        return;
    };
    let count = app.images.all().len();
    let at = app.images.viewer.map_or(0, |v| v.at);
    let theme = &app.theme;
    let title = format!(
        " Image {} of {count} · block #{} image {} · {}, {} ",
        at + 1,
        shown.block,
        shown.n,
        super::images::origin(shown.image, &app.cwd),
        shown.image.describe()
    );
    let keys = Line::from(vec![
        Span::styled(" ← →", theme.key),
        Span::styled(" step · ", theme.muted),
        Span::styled("o", theme.key),
        Span::styled(" opens it in the system viewer · ", theme.muted),
        Span::styled("Esc", theme.key),
        Span::styled(
            format!(" closes · drawn with {} ", app.images.cache.graphics.name()),
            theme.muted,
        ),
    ]);
    let block = super::view::pane_frame(theme, title, true).title_bottom(keys);
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    // A line under the image: where the file is.
    let (room, path_row) = if inner.height > 2 {
        (
            Rect::new(inner.x, inner.y, inner.width, inner.height - 1),
            Some(Rect::new(
                inner.x,
                inner.y + inner.height - 1,
                inner.width,
                1,
            )),
        )
    } else {
        (inner, None)
    };
    if let Some(row) = path_row {
        frame.render_widget(
            Paragraph::new(match &app.images.said {
                Some(said) => Line::styled(crate::safe_text::visible_line(said), theme.error),
                None => Line::styled(
                    crate::safe_text::visible_line(&shown.image.path.display().to_string()),
                    theme.muted,
                ),
            }),
            row,
        );
    }
    draw_image(frame, app, shown.image, room);
}

/// One image centred in `room`, or what to say instead.
fn draw_image(frame: &mut Frame, app: &App, image: &Image, room: Rect) {
    let say = |frame: &mut Frame, text: String| {
        frame.render_widget(
            Paragraph::new(text)
                .style(app.theme.muted)
                .wrap(Wrap { trim: true }),
            room,
        );
    };
    let open = app.keymap.label(Action::OpenImage);
    if !image.format.is_raster() {
        return say(
            frame,
            format!(
                "{} images are not drawn here; {open} opens it in the system viewer.",
                image.format.label()
            ),
        );
    }
    if app.images.cache.graphics.protocol.is_none() {
        return say(
            frame,
            format!(
                "Images are not drawn ([tui] images = \"off\"); {open} opens it in the system viewer."
            ),
        );
    }
    match app
        .images
        .cache
        .get(&image.path, room.width, room.height, Fit::Fill)
    {
        Some(Ok(protocol)) => {
            let size = protocol.size();
            let (w, h) = (size.width.min(room.width), size.height.min(room.height));
            let area = Rect::new(
                room.x + (room.width - w) / 2,
                room.y + (room.height - h) / 2,
                w,
                h,
            );
            frame.render_widget(ratatui_image::Image::new(&protocol), area);
        }
        Some(Err(why)) => say(frame, why),
        None => say(frame, "drawing the image…".to_string()),
    }
}
