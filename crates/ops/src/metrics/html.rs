//! The metrics report as one self-contained HTML page: inline CSS and hand-built SVG charts, with
//! no network, fonts or scripts, so the file opens anywhere (and renders in headless chromium in
//! `tests/suite/report.rs`). Every string from the report is escaped: previews are user content.

use super::report::{Day, Growth, MemoryStats, Relevance, Report, PARTIAL, STRONG};
use std::collections::BTreeSet;

/// Tableau 10: distinct on white; one per event name in the stacked bars.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Geometry of the full-width charts, in viewBox units (the SVG scales to its container).
const W: f64 = 1100.0;
const H: f64 = 260.0;
const LEFT: f64 = 48.0;
/// Room for the last day's label, centred on the last point.
const RIGHT: f64 = 40.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;

const CSS: &str = r#"
:root{color-scheme:light}
body{margin:0;background:#f6f7f9;color:#1f2328;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1140px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:17px;margin:0 0 12px}
h3{font-size:13px;margin:16px 0 6px;color:#59636e}
.sub{color:#59636e;margin:0 0 20px}
section{background:#fff;border:1px solid #d8dee4;border-radius:8px;padding:16px 20px;margin-bottom:20px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:20px}
svg{display:block;width:100%;height:auto}
svg text{font-size:12px;fill:#59636e}
.gridline{stroke:#eaeef2}
.area{fill:#4e79a7;fill-opacity:.15}
.line{fill:none;stroke:#4e79a7;stroke-width:2}
.pt{fill:#fff;stroke:#4e79a7;stroke-width:2}
.legend{display:flex;flex-wrap:wrap;gap:16px;margin-top:8px;font-size:13px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}
table{width:100%;border-collapse:collapse;font-size:13px}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{color:#59636e;font-weight:600}
tbody tr:nth-child(even){background:#f9fafb}
.n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.empty{color:#59636e;font-style:italic;padding:16px;text-align:center;background:#f6f8fa;border-radius:6px;margin:0}
.stats{display:flex;flex-wrap:wrap;gap:28px}
.stat b{display:block;font-size:24px}
.stat span{color:#59636e;font-size:12px}
.note{color:#59636e;margin:8px 0}
"#;

pub fn render(report: &Report) -> String {
    let project = esc(&report.project);
    let since = if report.since.is_empty() {
        String::new()
    } else {
        format!(", since {}", esc(&report.since))
    };
    let mut out = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Memory report: {project}</title><style>{CSS}</style></head><body><main>\n\
         <h1>Memory report: {project}</h1>\n\
         <p class=\"sub\">Last {} days{since} · {} memories in the store · {} sessions</p>\n",
        report.days, report.memories, report.sessions
    );
    out += &section("Memory growth", &growth_chart(&report.growth));
    out += &section("Injections per day", &daily_chart(&report.daily));
    out += &format!(
        "<div class=\"grid2\">{}{}</div>\n",
        section("Relevance", &relevance(&report.relevance)),
        section("Usage", &usage(report))
    );
    out += &section(
        "Used most",
        &memory_table(
            &report.most_used,
            "No injected memory was used in this window.",
        ),
    );
    out += &section(
        "Never used",
        &format!(
            "<p class=\"note\">Injected in two or more sessions and never used: candidates to forget.</p>{}",
            memory_table(&report.injected_never_used, "No memory was injected repeatedly without being used.")
        ),
    );
    out += &section("Never injected", &never_injected(report));
    out += &section("Latency", &latency(report));
    out + "</main></body></html>\n"
}

/// Escapes text for element content and double- or single-quoted attributes.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A number with `prec` decimals; a non-finite value (never expected) shows as 0, not NaN.
fn num(x: f64, prec: usize) -> String {
    format!("{:.prec$}", if x.is_finite() { x } else { 0.0 })
}

/// The report's section headings, in order (the browser test looks for each).
pub const HEADINGS: [&str; 8] = [
    "Memory growth",
    "Injections per day",
    "Relevance",
    "Usage",
    "Used most",
    "Never used",
    "Never injected",
    "Latency",
];

fn section(title: &str, body: &str) -> String {
    format!("<section><h2>{}</h2>\n{body}\n</section>\n", esc(title))
}

fn empty(text: &str) -> String {
    format!("<p class=\"empty\">{}</p>", esc(text))
}

fn svg_open(width: f64, height: f64, label: &str) -> String {
    format!(
        "<svg viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{}\">",
        esc(label)
    )
}

/// Gridlines 1, 2 or 5 × 10^k apart (at least 1: the values are counts) and the axis top they
/// reach; the top is never 0, so scaling by it never divides by zero.
fn ticks(max: f64) -> (f64, f64) {
    let raw = (max / 4.0).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    (step, (max / step).ceil().max(1.0) * step)
}

/// Horizontal gridlines with their values on the left axis.
fn grid(step: f64, top: f64) -> String {
    let ph = H - TOP - BOTTOM;
    let mut out = String::new();
    let mut v = 0.0;
    while v <= top + step / 2.0 {
        let y = TOP + ph * (1.0 - v / top);
        out += &format!(
            "<line class=\"gridline\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0
        );
        v += step;
    }
    out
}

/// Day labels under the x axis, thinned to about eight so they never overlap.
fn x_labels<'a>(days: impl Iterator<Item = &'a str>, x: impl Fn(usize) -> f64) -> String {
    let days: Vec<&str> = days.collect();
    let every = days.len().div_ceil(8).max(1);
    let y = H - BOTTOM + 18.0;
    days.iter()
        .enumerate()
        .filter(|(i, _)| i % every == 0)
        .map(|(i, d)| {
            format!(
                "<text x=\"{:.1}\" y=\"{y}\" text-anchor=\"middle\">{}</text>",
                x(i),
                esc(d)
            )
        })
        .collect()
}

fn growth_chart(growth: &[Growth]) -> String {
    if growth.is_empty() {
        return empty("No memories in the store yet.");
    }
    let n = growth.len();
    let max = growth.iter().map(|g| g.memories).max().unwrap_or(0) as f64;
    let (step, top) = ticks(max);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    // A single day sits in the middle rather than dividing by n - 1 = 0.
    let x = |i: usize| match n {
        1 => LEFT + pw / 2.0,
        _ => LEFT + pw * i as f64 / (n - 1) as f64,
    };
    let base = TOP + ph;
    let points: Vec<(f64, f64)> = growth
        .iter()
        .enumerate()
        .map(|(i, g)| (x(i), TOP + ph * (1.0 - g.memories as f64 / top)))
        .collect();
    let line: Vec<String> = points
        .iter()
        .map(|(px, py)| format!("{px:.1},{py:.1}"))
        .collect();
    let line = line.join(" ");
    let mut svg = svg_open(W, H, "Memories in the store per day");
    svg += &grid(step, top);
    svg += &format!(
        "<polygon class=\"area\" points=\"{:.1},{base:.1} {line} {:.1},{base:.1}\"/>\
         <polyline class=\"line\" points=\"{line}\"/>",
        points[0].0,
        points[n - 1].0
    );
    for ((px, py), g) in points.iter().zip(growth) {
        svg += &format!(
            "<circle class=\"pt\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"3.5\"><title>{}: {} memories</title></circle>",
            esc(&g.day),
            g.memories
        );
    }
    svg += &x_labels(growth.iter().map(|g| g.day.as_str()), x);
    svg + "</svg>"
}

fn daily_chart(daily: &[Day]) -> String {
    if daily.is_empty() {
        return empty("No hook runs recorded in this window.");
    }
    // Colours follow the sorted event names, as do the stacks (BTreeMap order), so they line up.
    let events: BTreeSet<&str> = daily
        .iter()
        .flat_map(|d| d.runs.keys().map(String::as_str))
        .collect();
    let colour =
        |e: &str| PALETTE[events.iter().position(|x| *x == e).unwrap_or(0) % PALETTE.len()];
    let max = daily
        .iter()
        .map(|d| d.runs.values().sum::<u64>())
        .max()
        .unwrap_or(0) as f64;
    let (step, top) = ticks(max);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let slot = pw / daily.len() as f64;
    let bar = (slot * 0.7).min(48.0);
    let x = |i: usize| LEFT + slot * (i as f64 + 0.5);
    let mut svg = svg_open(W, H, "Hook runs per day, stacked by event");
    svg += &grid(step, top);
    for (i, d) in daily.iter().enumerate() {
        let mut y = TOP + ph;
        for (event, runs) in &d.runs {
            let h = ph * *runs as f64 / top;
            y -= h;
            svg += &format!(
                "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{} {}: {runs} runs</title></rect>",
                x(i) - bar / 2.0,
                colour(event),
                esc(&d.day),
                esc(event)
            );
        }
    }
    svg += &x_labels(daily.iter().map(|d| d.day.as_str()), x);
    svg += "</svg><div class=\"legend\">";
    for e in &events {
        svg += &format!(
            "<span><i style=\"background:{}\"></i>{}</span>",
            colour(e),
            esc(e)
        );
    }
    svg + "</div>"
}

/// Labelled horizontal bars, each with its count and share of the total (for half-width panels).
fn hbars(rows: &[(String, u64, &str)]) -> String {
    let (w, label, value) = (540.0, 130.0, 100.0);
    let total = rows.iter().map(|r| r.1).sum::<u64>().max(1) as f64;
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1) as f64;
    let mut svg = svg_open(w, rows.len() as f64 * 30.0 + 4.0, "Bar chart");
    for (i, (name, n, fill)) in rows.iter().enumerate() {
        let y = i as f64 * 30.0 + 4.0;
        let len = (w - label - value) * *n as f64 / max;
        svg += &format!(
            "<text x=\"0\" y=\"{:.1}\">{}</text><rect x=\"{label}\" y=\"{y:.1}\" width=\"{len:.1}\" height=\"20\" rx=\"3\" fill=\"{fill}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{n} ({}%)</text>",
            y + 14.0,
            esc(name),
            label + len + 6.0,
            y + 14.0,
            num(*n as f64 * 100.0 / total, 0)
        );
    }
    svg + "</svg>"
}

fn relevance(r: &Relevance) -> String {
    if r.strong + r.partial + r.weak + r.unscored == 0 {
        return empty("No memories injected in this window.");
    }
    hbars(&[
        (format!("strong > {STRONG}"), r.strong, "#59a14f"),
        (format!("partial {PARTIAL}–{STRONG}"), r.partial, "#edc948"),
        (format!("weak < {PARTIAL}"), r.weak, "#e15759"),
        ("unscored".to_string(), r.unscored, "#bab0ac"),
    ])
}

fn usage(report: &Report) -> String {
    let u = &report.usage;
    let stat = |big: String, small: &str| {
        format!(
            "<div class=\"stat\"><b>{big}</b><span>{}</span></div>",
            esc(small)
        )
    };
    let mut out = String::from("<div class=\"stats\">");
    out += &match u.rate {
        Some(rate) => stat(format!("{}%", num(rate * 100.0, 0)), "usage rate"),
        None => stat("–".to_string(), "usage rate: nothing injected yet"),
    };
    out += &stat(
        u.used.to_string(),
        &format!("used of {} injected", u.injected),
    );
    out += &stat(u.cited.to_string(), "cited");
    out += &stat(u.echoed.to_string(), "echoed");
    out += "</div>";
    out += &format!(
        "<p class=\"note\">{} sessions, {} characters injected per session.</p>",
        report.sessions,
        num(report.chars_per_session, 0)
    );
    if let Some(line) = report.repeat_mistakes.line() {
        out += &format!(
            "<h3>Repeat mistakes</h3><p class=\"note\">{}</p>",
            esc(&line)
        );
    }
    out += "<h3>Writes by source</h3>";
    if report.writes.is_empty() {
        return out + &empty("No writes recorded in this window.");
    }
    let rows: Vec<(String, u64, &str)> = report
        .writes
        .iter()
        .enumerate()
        .map(|(i, (source, n))| (source.clone(), *n, PALETTE[i % PALETTE.len()]))
        .collect();
    out + &hbars(&rows)
}

fn memory_table(items: &[MemoryStats], none: &str) -> String {
    if items.is_empty() {
        return empty(none);
    }
    let mut out = String::from(
        "<table><thead><tr><th>ID</th><th>Preview</th><th class=\"n\">Sessions injected</th>\
         <th class=\"n\">Sessions used</th></tr></thead><tbody>",
    );
    for m in items {
        // By chars, not bytes: an id is not guaranteed ASCII.
        let id: String = m.id.chars().take(8).collect();
        out += &format!(
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&id),
            esc(&m.preview),
            m.sessions_injected,
            m.sessions_used
        );
    }
    out + "</tbody></table>"
}

fn never_injected(report: &Report) -> String {
    if report.memories == 0 {
        return empty("No memories in the store yet.");
    }
    let shown = report.never_injected.len();
    let more = if report.never_injected_count > shown {
        format!(" (first {shown} shown)")
    } else {
        String::new()
    };
    format!(
        "<p class=\"note\">{} of {} memories never injected in this window{more}.</p>{}",
        report.never_injected_count,
        report.memories,
        memory_table(
            &report.never_injected,
            "Every memory was injected at least once in this window."
        )
    )
}

fn latency(report: &Report) -> String {
    if report.events.is_empty() {
        return empty("No hook runs recorded in this window.");
    }
    let mut out = String::from(
        "<table><thead><tr><th>Event</th><th class=\"n\">Runs</th><th class=\"n\">Injected</th>\
         <th class=\"n\">Abstained</th><th class=\"n\">Deadline/error</th><th class=\"n\">p50 ms</th>\
         <th class=\"n\">p95 ms</th><th class=\"n\">Chars avg</th></tr></thead><tbody>",
    );
    for e in &report.events {
        out += &format!(
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&e.event),
            e.runs,
            e.injected,
            e.abstained,
            e.deadline + e.error,
            num(e.p50_ms, 1),
            num(e.p95_ms, 1),
            num(e.chars_avg, 0)
        );
    }
    out + "</tbody></table>"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::report::{EventStats, Usage};

    fn memory(id: &str, preview: &str, injected: u64, used: u64) -> MemoryStats {
        MemoryStats {
            id: id.to_string(),
            preview: preview.to_string(),
            sessions_injected: injected,
            sessions_used: used,
        }
    }

    fn sample() -> Report {
        let day = |d: &str, runs: &[(&str, u64)]| Day {
            day: d.to_string(),
            runs: runs.iter().map(|(e, n)| (e.to_string(), *n)).collect(),
            injected: 3,
        };
        Report {
            project: "demo & <co>".to_string(),
            days: 30,
            since: "2025-01-01T00:00:00Z".to_string(),
            memories: 12,
            held: 0,
            events: vec![EventStats {
                event: "UserPromptSubmit".to_string(),
                runs: 40,
                injected: 30,
                abstained: 10,
                p50_ms: 42.5,
                p95_ms: 120.0,
                chars_avg: 800.0,
                ..EventStats::default()
            }],
            relevance: Relevance {
                strong: 5,
                partial: 7,
                weak: 2,
                unscored: 1,
            },
            sessions: 4,
            chars_per_session: 2400.0,
            usage: Usage {
                injected: 20,
                used: 5,
                cited: 3,
                echoed: 2,
                rate: Some(0.25),
                ..Default::default()
            },
            writes: [("cli".to_string(), 4), ("hook".to_string(), 8)].into(),
            daily: vec![
                day("2025-01-02", &[("PreToolUse", 4), ("UserPromptSubmit", 6)]),
                day("2025-01-03", &[("UserPromptSubmit", 2)]),
            ],
            growth: ["2025-01-01", "2025-01-02", "2025-01-05"]
                .iter()
                .enumerate()
                .map(|(i, d)| Growth {
                    day: d.to_string(),
                    memories: (i + 1) * 4,
                })
                .collect(),
            most_used: vec![memory("0123456789abcdef", "use `cargo nextest`", 3, 2)],
            never_injected: vec![memory(
                "fedcba9876543210",
                "<script>alert(\"x\")</script> & 'quotes'",
                0,
                0,
            )],
            never_injected_count: 1,
            injected_never_used: vec![memory("aaaabbbbccccdddd", "old note", 4, 0)],
            repeat_mistakes: Default::default(),
            stale: Vec::new(),
        }
    }

    #[test]
    fn every_heading_is_present() {
        for report in [sample(), Report::default()] {
            let html = render(&report);
            for h in HEADINGS {
                assert!(
                    html.contains(&format!("<h2>{h}</h2>")),
                    "missing heading {h}"
                );
            }
        }
        assert!(render(&sample()).contains("<h1>Memory report: demo &amp; &lt;co&gt;</h1>"));
    }

    #[test]
    fn previews_are_escaped() {
        let html = render(&sample());
        assert!(!html.contains("<script"));
        assert!(html
            .contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;"));
        // Ids are cut to eight characters.
        assert!(html.contains("<code>fedcba98</code>") && !html.contains("fedcba9876"));
    }

    #[test]
    fn page_is_self_contained() {
        for report in [sample(), Report::default()] {
            let html = render(&report);
            assert!(!html.contains("http://") && !html.contains("https://"));
            assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("<img"));
        }
    }

    #[test]
    fn empty_report_renders_empty_states() {
        let html = render(&Report::default());
        assert!(!html.contains("NaN") && !html.contains("inf"));
        assert!(html.contains("No hook runs recorded in this window"));
        assert!(html.contains("nothing injected yet"));
        assert!(html.contains("No memories in the store yet"));
        assert!(!html.contains("<svg"), "no chart without data");
    }

    #[test]
    fn growth_chart_has_one_point_per_day() {
        let mut report = sample();
        assert_eq!(render(&report).matches("class=\"pt\"").count(), 3);
        // One day, or a flat store of zero memories: still finite coordinates.
        report.growth.truncate(1);
        report.growth[0].memories = 0;
        let html = render(&report);
        assert_eq!(html.matches("class=\"pt\"").count(), 1);
        assert!(!html.contains("NaN") && !html.contains("inf"));
    }

    #[test]
    fn stacked_bars_and_legend_share_colours() {
        let html = render(&sample());
        // Three stacked segments; two events in the legend, coloured by sorted name.
        assert_eq!(html.matches("runs</title></rect>").count(), 3);
        assert!(html.contains("<i style=\"background:#4e79a7\"></i>PreToolUse"));
        assert!(html.contains("<i style=\"background:#f28e2b\"></i>UserPromptSubmit"));
    }

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(ticks(0.0), (1.0, 1.0));
        assert_eq!(ticks(3.0), (1.0, 3.0));
        assert_eq!(ticks(37.0), (10.0, 40.0));
        assert_eq!(ticks(120.0), (50.0, 150.0));
    }
}
