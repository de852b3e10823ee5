//! The HTML metrics report as a real browser renders it: headless chromium loads the page from a
//! file, its DOM must hold every section and the project name, and its screenshot must show
//! charts, not a blank page. `WT_SAVE_REPORT_SCREENSHOT=1` also copies the screenshot to
//! `docs/report.png` for the user guide.

use crate::support;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wt_memory_ops::metrics::html::{self, HEADINGS};
use wt_memory_ops::metrics::report::{Day, EventStats, Growth, MemoryStats, Relevance, Usage};
use wt_memory_ops::metrics::Report;

const PROJECT: &str = "acme-billing";
/// The first event's colour in the stacked bars (crates/ops/src/metrics/html.rs).
const FIRST_EVENT_RGB: [u8; 3] = [0x4e, 0x79, 0xa7];
const TIMEOUT: Duration = Duration::from_secs(60);

fn memory(id: &str, preview: &str, injected: u64, used: u64) -> MemoryStats {
    MemoryStats {
        id: id.to_string(),
        preview: preview.to_string(),
        sessions_injected: injected,
        sessions_used: used,
    }
}

fn event(name: &str, runs: u64, injected: u64, p50: f64, p95: f64, chars: f64) -> EventStats {
    EventStats {
        event: name.to_string(),
        runs,
        injected,
        abstained: runs - injected - 1,
        deadline: 1,
        memories_injected: injected * 2,
        chars_avg: chars,
        p50_ms: p50,
        p95_ms: p95,
        ..EventStats::default()
    }
}

/// Three weeks of a project in use: a growing store, a few hook events a day, mixed relevance.
fn realistic() -> Report {
    let events = [
        "PreToolUse",
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUseFailure",
    ];
    let daily: Vec<Day> = (1..=21u64)
        .map(|d| {
            let runs: BTreeMap<String, u64> = events
                .iter()
                .enumerate()
                .map(|(i, e)| (e.to_string(), (d * 7 + i as u64 * 5) % 13 + 1))
                .collect();
            Day {
                day: format!("2025-03-{d:02}"),
                injected: runs.values().sum::<u64>() / 2,
                runs,
            }
        })
        .collect();
    let growth: Vec<Growth> = (1..=21usize)
        .filter(|d| d % 3 != 2)
        .map(|d| Growth {
            day: format!("2025-03-{d:02}"),
            memories: 4 + d * d / 3,
        })
        .collect();
    let previews = [
        "Run `cargo test --lib` before pushing; integration tests need the model cache",
        "The billing API returns amounts in cents <int>, never floats & never strings",
        "Deploys go through deploy/release.sh: never \"kubectl apply\" by hand",
        "Invoices are immutable once sent; corrections are credit notes",
    ];
    let list = |seed: u64| -> Vec<MemoryStats> {
        (0..4u64)
            .map(|i| {
                memory(
                    &format!(
                        "{:08x}-{:04x}-4000-8000-00000000{i:04}",
                        seed * 0x1111_1111 + i,
                        i
                    ),
                    previews[i as usize],
                    // Lists: 1 used most, 2 never injected, 3 injected but never used.
                    if seed == 2 { 0 } else { 6 - i },
                    if seed == 1 { 4 - i } else { 0 },
                )
            })
            .collect()
    };
    Report {
        project: PROJECT.to_string(),
        days: 30,
        since: "2025-02-22T09:00:00Z".to_string(),
        memories: growth.last().map(|g| g.memories).unwrap_or(0),
        held: 0,
        events: vec![
            event("PostToolUseFailure", 31, 12, 38.2, 95.0, 410.0),
            event("PreToolUse", 140, 66, 21.4, 60.3, 520.0),
            event("SessionStart", 48, 40, 88.0, 210.5, 1400.0),
            event("UserPromptSubmit", 151, 102, 45.9, 130.1, 900.0),
        ],
        relevance: Relevance {
            strong: 96,
            partial: 140,
            weak: 31,
            unscored: 12,
        },
        sessions: 48,
        chars_per_session: 3120.0,
        usage: Usage {
            injected: 210,
            used: 57,
            cited: 41,
            echoed: 23,
            rate: Some(57.0 / 210.0),
            ..Default::default()
        },
        writes: [
            ("cli".to_string(), 9),
            ("extraction".to_string(), 58),
            ("mcp".to_string(), 27),
        ]
        .into(),
        daily,
        growth,
        most_used: list(1),
        never_injected: list(2),
        never_injected_count: 23,
        injected_never_used: list(3),
        repeat_mistakes: Default::default(),
        stale: Vec::new(),
    }
}

/// Runs chromium headless on `args`, its stdout into `out`, killed after [`TIMEOUT`].
fn chromium(profile: &Path, args: &[&str], out: &Path) {
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .args(["--no-first-run", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium {args:?} failed: {status}");
            return;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {args:?} did not finish in {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The screenshot's pixels as RGB, with its width and height. Chromium writes 8-bit RGB or RGBA,
/// not interlaced: decoded here with the engine's own `flate2` (a PNG crate would change the
/// features of the engine's dependencies for tests, and so compile the engine twice).
fn pixels(png_path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    use std::io::Read;
    let bytes = std::fs::read(png_path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let (mut at, mut header, mut compressed) = (8, None, Vec::new());
    while at + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let (kind, data) = (&bytes[at + 4..at + 8], &bytes[at + 8..at + 8 + len]);
        match kind {
            b"IHDR" => header = Some(data.to_vec()),
            b"IDAT" => compressed.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len; // length, kind, data, CRC
    }
    let header = header.expect("a PNG header");
    let be = |i: usize| u32::from_be_bytes(header[i..i + 4].try_into().unwrap());
    let (width, height, depth, color, interlace) = (be(0), be(4), header[8], header[9], header[12]);
    let channels = match color {
        2 => 3,
        6 => 4,
        other => panic!("colour type {other}: chromium writes RGB or RGBA"),
    };
    assert!(depth == 8 && interlace == 0, "8-bit, not interlaced");
    let mut raw: Vec<u8> = Vec::new();
    flate2::read::ZlibDecoder::new(&compressed[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = width as usize * channels;
    let mut image = vec![0u8; stride * height as usize];
    for y in 0..height as usize {
        let line = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        for x in 0..stride {
            let left = if x >= channels {
                image[y * stride + x - channels]
            } else {
                0
            };
            let up = if y > 0 {
                image[(y - 1) * stride + x]
            } else {
                0
            };
            let up_left = if y > 0 && x >= channels {
                image[(y - 1) * stride + x - channels]
            } else {
                0
            };
            let predicted = match line[0] {
                0 => 0,
                1 => left,
                2 => up,
                3 => ((left as u16 + up as u16) / 2) as u8,
                4 => {
                    // Paeth: whichever neighbour is closest to left + up - up_left.
                    let p = left as i16 + up as i16 - up_left as i16;
                    let (pa, pb, pc) = (
                        (p - left as i16).abs(),
                        (p - up as i16).abs(),
                        (p - up_left as i16).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        left
                    } else if pb <= pc {
                        up
                    } else {
                        up_left
                    }
                }
                other => panic!("PNG filter {other}"),
            };
            image[y * stride + x] = line[1 + x].wrapping_add(predicted);
        }
    }
    let rgb = image
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (width, height, rgb)
}

#[test]
fn report_renders_in_chromium() {
    if which::which("chromium").is_err() {
        support::skipped(
            "report_renders_in_chromium",
            "chromium not installed (scripts/deps.sh installs it), so the HTML report was not checked in a browser",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, html::render(&realistic())).unwrap();
    let url = format!("file://{}", page.display());
    let profile = dir.path().join("profile");

    let dom = dir.path().join("dom.html");
    chromium(&profile, &["--dump-dom", &url], &dom);
    let dom = std::fs::read_to_string(dom).unwrap();
    for h in HEADINGS {
        assert!(
            dom.contains(&format!("<h2>{h}</h2>")),
            "DOM lacks heading {h}"
        );
    }
    assert!(dom.contains(&format!("<h1>Memory report: {PROJECT}</h1>")));

    let shot = dir.path().join("report.png");
    chromium(
        &profile,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,2000",
            &url,
        ],
        &dir.path().join("screenshot.log"),
    );
    if std::env::var("WT_SAVE_REPORT_SCREENSHOT").as_deref() == Ok("1") {
        let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::copy(&shot, docs.join("report.png")).unwrap();
    }

    let (width, height, rgb) = pixels(&shot);
    assert_eq!((width, height), (1200, 2000));
    // The most common colour is the page background; a blank or unstyled page is nearly all of it.
    let mut counts: HashMap<[u8; 3], usize> = HashMap::new();
    for p in &rgb {
        *counts.entry(*p).or_default() += 1;
    }
    let background = counts.values().max().copied().unwrap_or(0);
    let distinct: HashSet<&[u8; 3]> = counts.keys().collect();
    let share = 1.0 - background as f64 / rgb.len() as f64;
    let non_white = rgb.iter().filter(|p| p.iter().any(|c| *c < 240)).count();
    eprintln!(
        "screenshot: {} distinct colours, {:.0}% off the background, {:.0}% non-white",
        distinct.len(),
        share * 100.0,
        non_white as f64 * 100.0 / rgb.len() as f64
    );
    assert!(distinct.len() >= 200, "only {} colours", distinct.len());
    assert!(
        share >= 0.25,
        "{:.0}% of pixels off the background",
        share * 100.0
    );
    assert!(non_white * 20 >= rgb.len(), "under 5% non-white pixels");
    // The stacked bars drew: solid pixels of the first event's colour (give or take rounding).
    let bars = rgb
        .iter()
        .filter(|p| {
            p.iter()
                .zip(FIRST_EVENT_RGB)
                .all(|(a, b)| a.abs_diff(b) <= 3)
        })
        .count();
    assert!(bars >= 2000, "only {bars} pixels of bar colour");
}
