//! A block's images made ready to draw: decoded once per file, resized and encoded for the
//! graphics protocol once per size, and kept. Drawing only looks the result up; it never
//! decodes. In the workbench the work is done off the UI thread (a thread per job, which
//! wakes the loop when it is done); in tests and benchmarks it is done at once.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use image::DynamicImage;
use ratatui::layout::Size;
use ratatui_image::picker::ProtocolType;
use ratatui_image::protocol::Protocol;
use ratatui_image::{FilterType, FontSize, Resize};

use super::graphics::Graphics;

/// Protocols kept (each up to a screenful of cells, or a screenful's encoded bytes).
const KEEP: usize = 24;
/// Decoded images kept, to make other sizes of the same file without decoding it again.
const KEEP_DECODED: usize = 4;

/// How an image fills its room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fit {
    /// Shrunk to fit, never enlarged (in the terminal pane).
    Shrink,
    /// As large as the room allows (the viewer).
    Fill,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    path: PathBuf,
    cols: u16,
    rows: u16,
    fit: Fit,
}

type Made = Result<Arc<Protocol>, String>;

/// What a job hands back: the protocol (or why not), and the decoded image to keep.
type Done = (Made, Option<Arc<DynamicImage>>);

enum Slot {
    Ready(Made),
    Working(Arc<Mutex<Option<Done>>>),
}

/// Called when a background job is done (the loop draws again).
pub type Wake = Arc<dyn Fn() + Send + Sync>;

pub struct ImageCache {
    pub graphics: Graphics,
    slots: RefCell<HashMap<Key, Slot>>,
    /// Keys in the order they were made (the oldest go first).
    order: RefCell<Vec<Key>>,
    decoded: RefCell<Vec<(PathBuf, Arc<DynamicImage>)>>,
    /// Set in the workbench: jobs run off the UI thread and call it when done.
    wake: Option<Wake>,
}

impl Default for ImageCache {
    fn default() -> Self {
        ImageCache::new(Graphics::halfblocks())
    }
}

impl ImageCache {
    pub fn new(graphics: Graphics) -> ImageCache {
        ImageCache {
            graphics,
            slots: RefCell::default(),
            order: RefCell::default(),
            decoded: RefCell::default(),
            wake: None,
        }
    }

    /// From now on, work is done off the UI thread, and `wake` is called when it is done.
    pub fn in_background(&mut self, wake: Wake) {
        self.wake = Some(wake);
    }

    /// Other graphics: what was made for the old ones goes.
    pub fn set_graphics(&mut self, graphics: Graphics) {
        self.graphics = graphics;
        self.slots.get_mut().clear();
        self.order.get_mut().clear();
    }

    /// Whether a job runs.
    pub fn busy(&self) -> bool {
        self.slots
            .borrow()
            .values()
            .any(|s| matches!(s, Slot::Working(_)))
    }

    /// The image at `path` made to fit `cols`×`rows` cells: Some(Ok) when ready, Some(Err)
    /// when it cannot be shown (why), None while it is being made (it is asked for here).
    pub fn get(&self, path: &Path, cols: u16, rows: u16, fit: Fit) -> Option<Made> {
        let key = Key {
            path: path.to_path_buf(),
            cols,
            rows,
            fit,
        };
        self.collect(&key);
        if let Some(slot) = self.slots.borrow().get(&key) {
            return match slot {
                Slot::Ready(made) => Some(made.clone()),
                Slot::Working(_) => None,
            };
        }
        let decoded = self
            .decoded
            .borrow()
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, d)| d.clone());
        let graphics = self.graphics.clone();
        match &self.wake {
            None => {
                let (made, image) = make(&graphics, path, decoded, cols, rows, fit);
                self.remember(path, image);
                self.store(key, Slot::Ready(made.clone()));
                Some(made)
            }
            Some(wake) => {
                let result = Arc::new(Mutex::new(None));
                let (out, wake, path) = (result.clone(), wake.clone(), path.to_path_buf());
                std::thread::spawn(move || {
                    let done = make(&graphics, &path, decoded, cols, rows, fit);
                    if let Ok(mut slot) = out.lock() {
                        *slot = Some(done);
                    }
                    wake();
                });
                self.store(key, Slot::Working(result));
                None
            }
        }
    }

    /// Takes a finished job's result into its slot.
    fn collect(&self, key: &Key) {
        let mut slots = self.slots.borrow_mut();
        let Some(Slot::Working(job)) = slots.get(key) else {
            return;
        };
        let done = job.lock().ok().and_then(|mut j| j.take());
        if let Some((made, image)) = done {
            slots.insert(key.clone(), Slot::Ready(made));
            drop(slots);
            self.remember(&key.path, image);
        }
    }

    fn remember(&self, path: &Path, image: Option<Arc<DynamicImage>>) {
        let Some(image) = image else { return };
        let mut decoded = self.decoded.borrow_mut();
        decoded.retain(|(p, _)| p != path);
        decoded.push((path.to_path_buf(), image));
        if decoded.len() > KEEP_DECODED {
            decoded.remove(0);
        }
    }

    fn store(&self, key: Key, slot: Slot) {
        let mut order = self.order.borrow_mut();
        let mut slots = self.slots.borrow_mut();
        order.retain(|k| k != &key);
        order.push(key.clone());
        slots.insert(key, slot);
        while order.len() > KEEP {
            let old = order.remove(0);
            slots.remove(&old);
        }
    }
}

/// Decodes `path` (unless given decoded) and makes its protocol for `cols`×`rows` cells.
/// Returns the decoded image too, to keep.
pub fn make(
    graphics: &Graphics,
    path: &Path,
    decoded: Option<Arc<DynamicImage>>,
    cols: u16,
    rows: u16,
    fit: Fit,
) -> Done {
    let image = match decoded {
        Some(image) => image,
        None => match decode(path) {
            Ok(image) => Arc::new(image),
            Err(why) => return (Err(why), None),
        },
    };
    let made = protocol(graphics, &image, cols, rows, fit).map(Arc::new);
    (made, Some(image))
}

/// Reads and decodes an image file.
pub fn decode(path: &Path) -> Result<DynamicImage, String> {
    let name = path.display();
    image::ImageReader::open(path)
        .map_err(|e| format!("cannot read {name}: {e}"))?
        .with_guessed_format()
        .map_err(|e| format!("cannot read {name}: {e}"))?
        .decode()
        .map_err(|e| format!("cannot decode {name}: {e}"))
}

/// The protocol that draws `image` in at most `cols`×`rows` cells.
pub fn protocol(
    graphics: &Graphics,
    image: &DynamicImage,
    cols: u16,
    rows: u16,
    fit: Fit,
) -> Result<Protocol, String> {
    let Some(kind) = graphics.protocol else {
        return Err("images are not drawn ([tui] images = \"off\")".into());
    };
    if cols == 0 || rows == 0 {
        return Err("no room".into());
    }
    let font = FontSize::new(graphics.cell.0.max(1), graphics.cell.1.max(1));
    let room = (
        u32::from(cols) * u32::from(font.width),
        u32::from(rows) * u32::from(font.height),
    );
    // Enlarging keeps the pixels sharp; shrinking a plot keeps its thin lines with a smooth
    // filter rather than the nearest pixel.
    let enlarging = image.width() <= room.0 && image.height() <= room.1;
    let filter = if enlarging && fit == Fit::Fill {
        FilterType::Nearest
    } else {
        FilterType::Triangle
    };
    let resize = match fit {
        Fit::Shrink => Resize::Fit(Some(filter)),
        Fit::Fill => Resize::Scale(Some(filter)),
    };
    let area = resize.size_for(image, font, Size::new(cols, rows));
    let area = Size::new(area.width.clamp(1, cols), area.height.clamp(1, rows));
    let fitted = if kind == ProtocolType::Halfblocks {
        // Half-blocks show two pixels a cell: the image is resized once, to exactly those
        // (the encoder's own resize is then a copy).
        DynamicImage::ImageRgba8(image::imageops::resize(
            image,
            u32::from(area.width),
            u32::from(area.height) * 2,
            filter,
        ))
    } else {
        resize.resize(image, font, area, None)
    };
    let failed = |e: ratatui_image::errors::Errors| format!("cannot draw the image: {e}");
    Ok(match kind {
        ProtocolType::Halfblocks => Protocol::Halfblocks(
            ratatui_image::protocol::halfblocks::Halfblocks::new(fitted, area).map_err(failed)?,
        ),
        ProtocolType::Kitty => Protocol::Kitty(
            ratatui_image::protocol::kitty::Kitty::new(
                fitted,
                area,
                image_id(),
                graphics.tmux,
                false,
            )
            .map_err(failed)?,
        ),
        ProtocolType::Sixel => Protocol::Sixel(
            ratatui_image::protocol::sixel::Sixel::new(fitted, area, graphics.tmux)
                .map_err(failed)?,
        ),
        ProtocolType::Iterm2 => Protocol::ITerm2(
            ratatui_image::protocol::iterm2::Iterm2::new(fitted, area, graphics.tmux)
                .map_err(failed)?,
        ),
    })
}

/// A kitty image id of this process: distinct for each image made.
fn image_id() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = std::process::id().wrapping_mul(2_654_435_761) & 0x00ff_0000;
    base | (NEXT.fetch_add(1, Ordering::Relaxed) % 0xffff + 1)
}
