//! `wt-memory tui`: a terminal browser of the project's memories, with search, filters, a detail
//! view (near-duplicates, `superseded_by`), forget with confirmation, and a metrics pane.
//!
//! The state ([`App`]) and its rendering ([`draw`]) never touch the terminal or the store: keys go
//! in through [`App::handle_key`], which answers an [`Action`] that the loop carries out with the
//! [`Client`]. So both are tested on a `TestBackend`, and `--once` prints a frame without a terminal.

use chrono::{DateTime, Local, Utc};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Clear, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::{Frame, Terminal};
use std::cell::Cell;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};
use wt_memory_core::dedup::Audit;
use wt_memory_core::record::{short_id, MemoryRecord, SUPERSEDES};
use wt_memory_foundation::error::{bad_input, Result};
use wt_memory_ops as ops;
use wt_memory_ops::metrics::Report;
use wt_memory_service::client::Client;

/// Options of `wt-memory tui`.
#[derive(Debug, Clone)]
pub struct TuiArgs {
    /// The metrics pane's window, in days.
    pub days: u32,
    /// Seconds between refreshes of the metrics pane.
    pub interval: u64,
    /// Render one frame as text on stdout and exit (no terminal needed).
    pub once: bool,
}

/// Similarity above which the detail view lists a memory as a near-duplicate: stricter than
/// `audit`'s default, so only notes that say the same thing show up.
const DUPLICATE_THRESHOLD: f64 = 0.9;
/// How many ranked results a search shows.
const SEARCH_LIMIT: usize = 50;
/// The `--once` frame.
const ONCE_SIZE: (u16, u16) = (120, 40);
/// From this width on, the metrics pane sits beside the list (unless `m` hides it).
const WIDE: u16 = 110;
const METRICS_WIDTH: u16 = 50;

pub fn run(client: &mut Client, args: &TuiArgs) -> Result<()> {
    if args.once {
        let app = load(client, args)?;
        print!("{}", render_text(&app, ONCE_SIZE.0, ONCE_SIZE.1)?);
        return Ok(());
    }
    if !std::io::stdout().is_terminal() {
        return Err(bad_input(
            "tui: stdout is not a terminal: run `wt-memory tui` in a terminal, or `wt-memory tui --once` to print one frame",
        ));
    }
    // Loaded before the screen switches, so a daemon's start-up notice stays readable.
    let mut app = load(client, args)?;
    client.release();
    // `try_init` also installs a panic hook that restores the terminal before the message.
    let mut terminal = ratatui::try_init().inspect_err(|_| ratatui::restore())?;
    let outcome = browse(&mut terminal, client, &mut app, args);
    ratatui::restore();
    outcome
}

fn load(client: &mut Client, args: &TuiArgs) -> Result<App> {
    let mut app = App::new(&client.project().name, args.days, args.interval, Utc::now());
    app.set_memories(client.run(ops::List::default())?);
    app.set_metrics(
        client
            .run(ops::Metrics { days: args.days })
            .map_err(|e| e.to_string()),
    );
    Ok(app)
}

/// The interactive loop: draw, wait for a key or the next metrics refresh, carry out actions.
fn browse(
    terminal: &mut ratatui::DefaultTerminal,
    client: &mut Client,
    app: &mut App,
    args: &TuiArgs,
) -> Result<()> {
    let interval = Duration::from_secs(args.interval.max(1));
    let mut metrics_due = Instant::now() + interval;
    loop {
        app.now = Utc::now();
        terminal.draw(|f| draw(f, app))?;
        if event::poll(metrics_due.saturating_duration_since(Instant::now()))? {
            if let Event::Key(key) = event::read()? {
                match app.handle_key(key) {
                    Action::None => {}
                    Action::Quit => return Ok(()),
                    action => {
                        // Show what it waits for: a first search or audit can take seconds.
                        app.message = action.waiting_note().to_string();
                        terminal.draw(|f| draw(f, app))?;
                        perform(client, app, action);
                    }
                }
            }
        }
        if Instant::now() >= metrics_due {
            app.set_metrics(
                client
                    .run(ops::Metrics { days: args.days })
                    .map_err(|e| e.to_string()),
            );
            metrics_due = Instant::now() + interval;
        }
        // Without a daemon this process opened the store: let hooks and other commands in.
        client.release();
    }
}

/// Carry out `action` through the client; failures become the message line, not an exit.
fn perform(client: &mut Client, app: &mut App, action: Action) {
    let outcome = match action {
        Action::None | Action::Quit => Ok(()),
        Action::Search(query) => client
            .run(ops::Recall {
                query: query.clone(),
                limit: SEARCH_LIMIT,
                ..Default::default()
            })
            .map(|results| app.set_search_results(&query, results)),
        Action::Forget(id) => forget(client, app, &id),
        Action::LoadDuplicates => {
            match client.run(ops::Audit {
                threshold: DUPLICATE_THRESHOLD,
            }) {
                Ok(audit) => app.set_duplicates(&audit),
                // Kept, so the detail view says why and no later key asks again.
                Err(e) => app.duplicates = Some(Err(e.to_string())),
            }
            app.message.clear();
            Ok(())
        }
        Action::Reload => client.run(ops::List::default()).map(|records| {
            app.set_memories(records);
            // Found again when a detail view next needs them, among the memories as they are now.
            app.duplicates = None;
            app.set_metrics(
                client
                    .run(ops::Metrics { days: app.days })
                    .map_err(|e| e.to_string()),
            );
            app.message = "reloaded".into();
        }),
    };
    if let Err(e) = outcome {
        app.message = format!("error: {e}");
    }
}

fn forget(client: &mut Client, app: &mut App, id: &str) -> Result<()> {
    let done = client.run(ops::Forget {
        id: Some(id.to_string()),
        ..Default::default()
    })?;
    let deleted = matches!(done, ops::Forgotten::One { deleted: true, .. });
    app.remove(id);
    app.set_memories(client.run(ops::List::default())?);
    app.message = if deleted {
        format!("forgot {}", short_id(id))
    } else {
        format!("{} was already gone", short_id(id))
    };
    Ok(())
}

/// What the loop must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    None,
    Quit,
    /// Rank memories for this query.
    Search(String),
    /// Forget the memory with this full id (the user confirmed).
    Forget(String),
    /// Find near-duplicates (once, when a detail view first needs them).
    LoadDuplicates,
    /// Read the list and the metrics again.
    Reload,
}

impl Action {
    fn waiting_note(&self) -> &'static str {
        match self {
            Action::Search(_) => "searching…",
            Action::Forget(_) => "forgetting…",
            Action::LoadDuplicates => "finding near-duplicates…",
            _ => "loading…",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Screen {
    List,
    Detail { id: String, scroll: u16 },
}

/// What takes the keys before the screen does.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Prompt {
    None,
    /// A search query being typed.
    Search(String),
    /// Forget this id? `y` confirms.
    ConfirmForget(String),
    Help,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum AgeFilter {
    #[default]
    All,
    Day,
    Week,
    Month,
}

impl AgeFilter {
    fn next(self) -> Self {
        match self {
            AgeFilter::All => AgeFilter::Day,
            AgeFilter::Day => AgeFilter::Week,
            AgeFilter::Week => AgeFilter::Month,
            AgeFilter::Month => AgeFilter::All,
        }
    }

    fn days(self) -> Option<i64> {
        match self {
            AgeFilter::All => None,
            AgeFilter::Day => Some(1),
            AgeFilter::Week => Some(7),
            AgeFilter::Month => Some(30),
        }
    }

    fn label(self) -> &'static str {
        match self {
            AgeFilter::All => "all",
            AgeFilter::Day => "1d",
            AgeFilter::Week => "7d",
            AgeFilter::Month => "30d",
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Filters {
    kind: Option<String>,
    tag: Option<String>,
    branch: Option<String>,
    age: AgeFilter,
}

struct Search {
    query: String,
    /// Ranked, best first, each with its `relevance_score`.
    results: Vec<MemoryRecord>,
}

/// Everything the screen shows; changed only by keys and by the loop's results.
pub struct App {
    project: String,
    days: u32,
    interval: u64,
    /// The clock ages are measured against (fixed in tests).
    now: DateTime<Utc>,
    /// Every memory, newest first.
    memories: Vec<MemoryRecord>,
    search: Option<Search>,
    filters: Filters,
    /// Index into [`App::visible`].
    selected: usize,
    screen: Screen,
    prompt: Prompt,
    /// id -> ids of its near-duplicates; `None` until first needed, `Err` when the audit failed.
    duplicates: Option<std::result::Result<HashMap<String, Vec<String>>, String>>,
    metrics: Option<std::result::Result<Report, String>>,
    metrics_at: Option<DateTime<Utc>>,
    /// `m` flips the pane from its default for the width (beside the list when wide, hidden
    /// when narrow).
    metrics_flipped: bool,
    /// One line of feedback (what was done, an error).
    message: String,
    /// Written by [`draw`]: the list's scroll position and height, for paging.
    list_offset: Cell<usize>,
    list_rows: Cell<usize>,
}

impl App {
    pub fn new(project: &str, days: u32, interval: u64, now: DateTime<Utc>) -> App {
        App {
            project: project.to_string(),
            days,
            interval,
            now,
            memories: Vec::new(),
            search: None,
            filters: Filters::default(),
            selected: 0,
            screen: Screen::List,
            prompt: Prompt::None,
            duplicates: None,
            metrics: None,
            metrics_at: None,
            metrics_flipped: false,
            message: String::new(),
            list_offset: Cell::new(0),
            list_rows: Cell::new(10),
        }
    }

    pub fn set_memories(&mut self, mut records: Vec<MemoryRecord>) {
        records.sort_by(|a, b| {
            (parse_time(&b.created_at), &b.created_at)
                .cmp(&(parse_time(&a.created_at), &a.created_at))
        });
        self.memories = records;
        self.clamp_selection();
    }

    pub fn set_search_results(&mut self, query: &str, results: Vec<MemoryRecord>) {
        self.message = format!("{} results for \"{query}\"", results.len());
        self.search = Some(Search {
            query: query.to_string(),
            results,
        });
        self.selected = 0;
    }

    /// Keep the audit's clusters as, for each memory, the other memories of its cluster.
    pub fn set_duplicates(&mut self, audit: &Audit) {
        let mut links: HashMap<String, Vec<String>> = HashMap::new();
        for cluster in &audit.top_clusters {
            for id in &cluster.ids {
                let others = cluster.ids.iter().filter(|o| *o != id).cloned();
                links.entry(id.clone()).or_default().extend(others);
            }
        }
        self.duplicates = Some(Ok(links));
    }

    pub fn set_metrics(&mut self, report: std::result::Result<Report, String>) {
        self.metrics = Some(report);
        self.metrics_at = Some(self.now);
    }

    /// Drop a forgotten memory from the list, the search results and the duplicate links.
    pub fn remove(&mut self, id: &str) {
        self.memories.retain(|r| r.id != id);
        if let Some(search) = &mut self.search {
            search.results.retain(|r| r.id != id);
        }
        if let Some(Ok(links)) = &mut self.duplicates {
            links.remove(id);
            links.values_mut().for_each(|ids| ids.retain(|o| o != id));
        }
        if matches!(&self.screen, Screen::Detail { id: shown, .. } if shown == id) {
            self.screen = Screen::List;
        }
        self.clamp_selection();
    }

    /// The rows of the list: the search results (ranked) or every memory (newest first),
    /// through the filters.
    fn visible(&self) -> Vec<&MemoryRecord> {
        let source = match &self.search {
            Some(search) => &search.results,
            None => &self.memories,
        };
        source.iter().filter(|r| self.passes(r)).collect()
    }

    fn passes(&self, record: &MemoryRecord) -> bool {
        let f = &self.filters;
        if f.kind
            .as_ref()
            .is_some_and(|k| *k != record.experience_type)
        {
            return false;
        }
        if f.tag.as_ref().is_some_and(|t| !record.has_tag(t)) {
            return false;
        }
        if f.branch
            .as_ref()
            .is_some_and(|b| branch_of(record) != Some(b.as_str()))
        {
            return false;
        }
        match f.age.days() {
            None => true,
            Some(days) => parse_time(&record.created_at)
                .is_some_and(|t| self.now - t <= chrono::Duration::days(days)),
        }
    }

    fn selected_record(&self) -> Option<&MemoryRecord> {
        self.visible().get(self.selected).copied()
    }

    /// A memory by id, preferring the search result (it carries the score).
    fn record(&self, id: &str) -> Option<&MemoryRecord> {
        let results = self.search.iter().flat_map(|s| &s.results);
        results.chain(&self.memories).find(|r| r.id == id)
    }

    fn clamp_selection(&mut self) {
        self.selected = self.selected.min(self.visible().len().saturating_sub(1));
    }

    /// Types present, the three `remember` writes first.
    fn type_options(&self) -> Vec<String> {
        let mut types: Vec<String> = Vec::new();
        for r in &self.memories {
            if !types.contains(&r.experience_type) {
                types.push(r.experience_type.clone());
            }
        }
        let rank = |t: &str| {
            ["Decision", "Learning", "Context"]
                .iter()
                .position(|k| *k == t)
        };
        types.sort_by(|a, b| (rank(a).unwrap_or(3), a).cmp(&(rank(b).unwrap_or(3), b)));
        types
    }

    /// Tags present (not the `branch:` ones, which have their own filter), most used first.
    fn tag_options(&self) -> Vec<String> {
        let mut counts: std::collections::HashMap<&str, usize> = Default::default();
        for r in &self.memories {
            for t in r.tags.iter().filter(|t| !t.starts_with("branch:")) {
                *counts.entry(t.as_str()).or_default() += 1;
            }
        }
        let mut tags: Vec<(&str, usize)> = counts.into_iter().collect();
        tags.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        tags.into_iter().map(|(t, _)| t.to_string()).collect()
    }

    fn branch_options(&self) -> Vec<String> {
        let mut branches: Vec<String> = self
            .memories
            .iter()
            .filter_map(|r| branch_of(r).map(str::to_string))
            .collect();
        branches.sort();
        branches.dedup();
        branches
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        if key.kind != KeyEventKind::Press {
            return Action::None;
        }
        // Raw mode swallows the interrupt signal: Ctrl-C quits from anywhere.
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        match std::mem::replace(&mut self.prompt, Prompt::None) {
            Prompt::None => {}
            Prompt::Help => return Action::None,
            Prompt::ConfirmForget(id) => {
                if key.code == KeyCode::Char('y') {
                    return Action::Forget(id);
                }
                self.message = "kept".into();
                return Action::None;
            }
            Prompt::Search(query) => return self.type_query(query, key),
        }
        let page = self.list_rows.get().max(1);
        match (&mut self.screen, key.code) {
            (_, KeyCode::Char('q')) => return Action::Quit,
            (_, KeyCode::Char('?')) => self.prompt = Prompt::Help,
            (_, KeyCode::Char('m')) => self.metrics_flipped = !self.metrics_flipped,
            (Screen::Detail { id, scroll }, code) => match code {
                KeyCode::Esc
                | KeyCode::Enter
                | KeyCode::Backspace
                | KeyCode::Left
                | KeyCode::Char('h') => self.screen = Screen::List,
                KeyCode::Down | KeyCode::Char('j') => *scroll = scroll.saturating_add(1),
                KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
                KeyCode::PageDown => *scroll = scroll.saturating_add(page as u16),
                KeyCode::PageUp => *scroll = scroll.saturating_sub(page as u16),
                KeyCode::Home => *scroll = 0,
                KeyCode::Char('d') => self.prompt = Prompt::ConfirmForget(id.clone()),
                _ => {}
            },
            (Screen::List, code) => return self.list_key(code, page),
        }
        Action::None
    }

    fn list_key(&mut self, code: KeyCode, page: usize) -> Action {
        let last = self.visible().len().saturating_sub(1);
        match code {
            KeyCode::Esc if self.search.is_some() => {
                self.search = None;
                self.selected = 0;
                self.message.clear();
            }
            KeyCode::Esc => return Action::Quit,
            KeyCode::Down | KeyCode::Char('j') => self.selected = (self.selected + 1).min(last),
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::PageDown => self.selected = (self.selected + page).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(page),
            KeyCode::Home | KeyCode::Char('g') => self.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.selected = last,
            KeyCode::Enter => {
                if let Some(record) = self.selected_record() {
                    self.screen = Screen::Detail {
                        id: record.id.clone(),
                        scroll: 0,
                    };
                    if self.duplicates.is_none() {
                        return Action::LoadDuplicates;
                    }
                }
            }
            KeyCode::Char('/') => {
                let query = self.search.as_ref().map(|s| s.query.clone());
                self.prompt = Prompt::Search(query.unwrap_or_default());
            }
            KeyCode::Char('d') => {
                if let Some(record) = self.selected_record() {
                    self.prompt = Prompt::ConfirmForget(record.id.clone());
                }
            }
            KeyCode::Char('t') => {
                self.filters.kind = cycle(&self.filters.kind, &self.type_options());
                self.selected = 0;
            }
            KeyCode::Char('#') => {
                self.filters.tag = cycle(&self.filters.tag, &self.tag_options());
                self.selected = 0;
            }
            KeyCode::Char('b') => {
                self.filters.branch = cycle(&self.filters.branch, &self.branch_options());
                self.selected = 0;
            }
            KeyCode::Char('a') => {
                self.filters.age = self.filters.age.next();
                self.selected = 0;
            }
            KeyCode::Char('r') => return Action::Reload,
            _ => {}
        }
        Action::None
    }

    /// A key while the query is typed: it runs on Enter only (ranking is too slow per keystroke).
    fn type_query(&mut self, mut query: String, key: KeyEvent) -> Action {
        match key.code {
            KeyCode::Enter if query.trim().is_empty() => self.search = None,
            KeyCode::Enter => return Action::Search(query.trim().to_string()),
            KeyCode::Esc => {
                self.search = None;
                self.selected = 0;
            }
            KeyCode::Backspace => {
                query.pop();
                self.prompt = Prompt::Search(query);
            }
            KeyCode::Char(c)
                if !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                query.push(c);
                self.prompt = Prompt::Search(query);
            }
            _ => self.prompt = Prompt::Search(query),
        }
        Action::None
    }

    fn metrics_visible(&self, width: u16) -> bool {
        (width >= WIDE) != self.metrics_flipped
    }
}

/// The next of `options` after `current`; past the last, back to none (all).
fn cycle(current: &Option<String>, options: &[String]) -> Option<String> {
    match current {
        None => options.first().cloned(),
        Some(c) => {
            let at = options.iter().position(|o| o == c);
            at.and_then(|i| options.get(i + 1)).cloned()
        }
    }
}

/// The branch a memory was written on (its `branch:` tag).
fn branch_of(record: &MemoryRecord) -> Option<&str> {
    record.tags.iter().find_map(|t| t.strip_prefix("branch:"))
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `45s`, `12m`, `5h`, `3d`, `2y`.
fn age(created: &str, now: DateTime<Utc>) -> String {
    let Some(t) = parse_time(created) else {
        return "?".into();
    };
    let secs = (now - t).num_seconds().max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3_600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3_600),
        s if s < 365 * 86_400 => format!("{}d", s / 86_400),
        s => format!("{}y", s / (365 * 86_400)),
    }
}

/// The first non-blank line, with tabs and control characters made harmless for a terminal.
fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    printable(line.trim())
}

fn printable(text: &str) -> String {
    text.replace('\t', "    ")
        .chars()
        .filter(|c| !c.is_control())
        .collect()
}

/// Render the whole screen for `app`.
pub fn draw(frame: &mut Frame, app: &App) {
    let [header, body, status, message] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, app, header);
    let main = if !app.metrics_visible(frame.area().width) {
        body
    } else if frame.area().width >= WIDE {
        let [left, right] =
            Layout::horizontal([Constraint::Min(30), Constraint::Length(METRICS_WIDTH)])
                .areas(body);
        draw_metrics(frame, app, right);
        left
    } else {
        // Narrow and asked for with `m`: the pane takes the body.
        draw_metrics(frame, app, body);
        Rect::default()
    };
    if !main.is_empty() {
        match &app.screen {
            Screen::List => draw_list(frame, app, main),
            Screen::Detail { id, scroll } => draw_detail(frame, app, main, id, *scroll),
        }
    }
    draw_status(frame, app, status);
    let bottom = match &app.prompt {
        Prompt::Search(query) => Line::from(vec!["/".bold(), Span::raw(query.clone()), "▏".into()]),
        _ => Line::from(app.message.clone()).italic(),
    };
    frame.render_widget(Paragraph::new(bottom), message);
    match &app.prompt {
        Prompt::ConfirmForget(id) => draw_confirm(frame, app, id),
        Prompt::Help => draw_help(frame),
        Prompt::None | Prompt::Search(_) => {}
    }
}

fn draw_header(frame: &mut Frame, app: &App, area: Rect) {
    let line = Line::from(vec![
        " wt-memory ".bold().reversed(),
        Span::raw(format!(
            " {} · {} memories",
            app.project,
            app.memories.len()
        )),
        "   ? help  q quit".dark_gray(),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_list(frame: &mut Frame, app: &App, area: Rect) {
    let rows = app.visible();
    let title = match &app.search {
        Some(s) => format!(
            " Search \"{}\": {} results (Esc clears) ",
            s.query,
            rows.len()
        ),
        None => format!(" Memories: {} shown, newest first ", rows.len()),
    };
    let items: Vec<ListItem> = rows
        .iter()
        .map(|r| {
            let mut spans = Vec::new();
            if app.search.is_some() {
                let score = r
                    .relevance_score
                    .map_or("  -  ".into(), |s| format!("{s:.2} "));
                spans.push(score.yellow());
            }
            spans.push(format!("{:<9}", r.experience_type).cyan());
            spans.push(format!("{:>4}  ", age(&r.created_at, app.now)).dark_gray());
            spans.push(Span::raw(first_line(&r.content)));
            ListItem::new(Line::from(spans))
        })
        .collect();
    let empty = items.is_empty();
    let list = List::new(items)
        .block(Block::bordered().title(title))
        .highlight_symbol("> ")
        .highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = ListState::default()
        .with_offset(app.list_offset.get())
        .with_selected((!empty).then_some(app.selected));
    frame.render_stateful_widget(list, area, &mut state);
    app.list_offset.set(state.offset());
    app.list_rows.set(area.height.saturating_sub(2) as usize);
    if empty {
        let note = if app.memories.is_empty() {
            "No memories yet in this project."
        } else {
            "Nothing matches: t/b/a cycle the filters, Esc clears a search."
        };
        let inner = area.inner(ratatui::layout::Margin::new(2, 1));
        frame.render_widget(Paragraph::new(note).dark_gray(), inner);
    }
}

fn draw_detail(frame: &mut Frame, app: &App, area: Rect, id: &str, scroll: u16) {
    let Some(r) = app.record(id) else {
        frame.render_widget(Paragraph::new("(gone)").block(Block::bordered()), area);
        return;
    };
    let field =
        |name: &str, value: String| Line::from(vec![format!("{name}: ").bold(), Span::raw(value)]);
    let mut lines = vec![
        field("id", r.id.clone()),
        field("type", r.experience_type.clone()),
        field(
            "created",
            format!("{} ({} ago)", r.created_at, age(&r.created_at, app.now)),
        ),
        field("importance", format!("{:.2}", r.importance)),
        field("tags", printable(&r.tags.join(", "))),
    ];
    if let Some(score) = r.relevance_score {
        lines.push(field("score", format!("{score:.2}")));
    }
    if !r.metadata.is_empty() {
        lines.push("metadata:".bold().into());
        for (k, v) in &r.metadata {
            lines.push(Line::from(format!("  {}: {}", printable(k), printable(v))));
        }
    }
    lines.push(Line::default());
    lines.extend(r.content.lines().map(|l| Line::from(printable(l))));
    lines.push(Line::default());
    lines.extend(links(app, r));
    let title = format!(
        " {} {} (Esc back, d forget) ",
        r.experience_type,
        short_id(&r.id)
    );
    let detail = Paragraph::new(Text::from(lines))
        .block(Block::bordered().title(title))
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0));
    frame.render_widget(detail, area);
}

/// The detail view's links: near-duplicates, and the supersede links both ways (a newer memory
/// names the one it replaces in its `supersedes` metadata).
fn links<'a>(app: &App, r: &MemoryRecord) -> Vec<Line<'a>> {
    let preview = |id: &str| match app.record(id) {
        Some(other) => format!("  {}  {}", short_id(id), first_line(&other.content)),
        None => format!("  {id}  (not in this store)"),
    };
    let mut lines: Vec<Line> =
        vec![
            format!("Near-duplicates (similarity > {DUPLICATE_THRESHOLD}):")
                .bold()
                .into(),
        ];
    match &app.duplicates {
        None => lines.push("  finding…".dark_gray().into()),
        Some(Err(e)) => lines.push(format!("  unavailable: {e}").into()),
        Some(Ok(links)) => match links.get(&r.id).filter(|ids| !ids.is_empty()) {
            None => lines.push("  none".dark_gray().into()),
            Some(ids) => lines.extend(ids.iter().map(|id| Line::from(preview(id)))),
        },
    }
    let newer: Vec<&MemoryRecord> = app
        .memories
        .iter()
        .filter(|o| o.metadata.get(SUPERSEDES) == Some(&r.id))
        .collect();
    if !newer.is_empty() {
        lines.push("Superseded by:".bold().into());
        lines.extend(newer.iter().map(|o| Line::from(preview(&o.id))));
    }
    if let Some(older) = r.metadata.get(SUPERSEDES) {
        lines.push("Supersedes:".bold().into());
        lines.push(preview(older).into());
    }
    lines
}

fn draw_metrics(frame: &mut Frame, app: &App, area: Rect) {
    let title = format!(" Metrics: last {} days ", app.days);
    let lines = match &app.metrics {
        None => vec![Line::from("loading…")],
        Some(Err(e)) => vec![Line::from(format!("unavailable: {e}"))],
        Some(Ok(report)) => metrics_lines(report),
    };
    let mut lines = lines;
    if let Some(at) = app.metrics_at {
        lines.push(Line::default());
        let at = at.with_timezone(&Local).format("%H:%M:%S");
        lines.push(
            format!("updated {at}, every {}s", app.interval)
                .dark_gray()
                .into(),
        );
    }
    let pane = Paragraph::new(Text::from(lines))
        .block(Block::bordered().title(title))
        .wrap(Wrap { trim: false });
    frame.render_widget(pane, area);
}

fn metrics_lines<'a>(report: &Report) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if report.events.is_empty() {
        lines.push(Line::from("No hook runs recorded in this window."));
    } else {
        let header = format!(
            "{:<16} {:>5} {:>4} {:>4} {:>6} {:>6}",
            "event", "runs", "inj", "abst", "p50ms", "p95ms"
        );
        lines.push(header.bold().into());
        for e in &report.events {
            let name = wt_memory_foundation::hygiene::truncate_chars(&e.event, 16);
            lines.push(Line::from(format!(
                "{name:<16} {:>5} {:>4} {:>4} {:>6.0} {:>6.0}",
                e.runs, e.injected, e.abstained, e.p50_ms, e.p95_ms
            )));
        }
    }
    lines.push(Line::default());
    let u = &report.usage;
    lines.push(match u.rate {
        Some(rate) => Line::from(vec![
            "Usage rate: ".bold(),
            format!("{:.0}%", rate * 100.0).green().bold(),
            Span::raw(format!(" ({} of {} injected used)", u.used, u.injected)),
        ]),
        None => Line::from(vec![
            "Usage rate: ".bold(),
            "n/a (nothing injected yet)".into(),
        ]),
    });
    lines.push(Line::from(format!(
        "Sessions: {}   memories: {}",
        report.sessions, report.memories
    )));
    if !report.stale.is_empty() {
        lines.push(Line::from(vec![
            "Stale: ".bold(),
            format!("{}", report.stale.len()).yellow().bold(),
            Span::raw(" memories name files that changed or vanished (audit --stale)"),
        ]));
    }
    let m = &report.repeat_mistakes;
    if m.failures > 0 || m.guarded > 0 {
        lines.push(Line::from(vec![
            "Repeat mistakes: ".bold(),
            format!("{:.0}%", m.repeat_rate.unwrap_or(0.0) * 100.0)
                .yellow()
                .bold(),
            Span::raw(format!(
                " ({} of {} failures repeated, {} warnings)",
                m.repeated, m.failures, m.guarded
            )),
        ]));
    }
    if !report.most_used.is_empty() {
        lines.push(Line::default());
        lines.push("Most used (sessions used/injected):".bold().into());
        for m in report.most_used.iter().take(5) {
            lines.push(Line::from(format!(
                "  {} {}/{} {}",
                short_id(&m.id),
                m.sessions_used,
                m.sessions_injected,
                first_line(&m.preview)
            )));
        }
    }
    lines.push(Line::default());
    lines.push(Line::from(format!(
        "Injected, never used: {}   never injected: {}",
        report.injected_never_used.len(),
        report.never_injected_count
    )));
    lines
}

fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let f = &app.filters;
    let value = |v: Option<&str>| v.unwrap_or("all").to_string().yellow();
    let line = Line::from(vec![
        " type: ".into(),
        value(f.kind.as_deref()),
        "  tag: ".into(),
        value(f.tag.as_deref()),
        "  branch: ".into(),
        value(f.branch.as_deref()),
        "  age: ".into(),
        f.age.label().yellow(),
        "   t/#/b/a filter  / search  Enter open  d forget  m metrics".dark_gray(),
    ]);
    frame.render_widget(Paragraph::new(line).reversed(), area);
}

fn draw_confirm(frame: &mut Frame, app: &App, id: &str) {
    let what = app
        .record(id)
        .map(|r| first_line(&r.content))
        .unwrap_or_default();
    let text = vec![
        Line::from(format!("Forget memory {}?", short_id(id))).bold(),
        Line::from(what),
        Line::default(),
        Line::from("y to forget, any other key keeps it"),
    ];
    let area = centered(frame.area(), 60, 6);
    frame.render_widget(Clear, area);
    let popup = Paragraph::new(text).block(Block::bordered().title(" Forget ").red());
    frame.render_widget(popup, area);
}

const HELP: &[(&str, &str)] = &[
    ("↑/↓ j/k", "move"),
    ("PgUp/PgDn", "page"),
    ("Home/End g/G", "first, last"),
    ("Enter", "details: content, tags, near-duplicates"),
    ("Esc", "back; clear the search; quit"),
    ("/", "search (runs on Enter)"),
    ("t  #  b  a", "cycle the type, tag, branch, age filter"),
    ("d", "forget the selected memory (y confirms)"),
    ("m", "show or hide the metrics pane"),
    ("r", "reload the list and the metrics"),
    ("q  Ctrl-C", "quit"),
];

fn draw_help(frame: &mut Frame) {
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(keys, what)| Line::from(vec![format!("{keys:<14}").bold(), Span::raw(*what)]))
        .collect();
    let area = centered(frame.area(), 64, HELP.len() as u16 + 2);
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" Keys (any key closes) ")),
        area,
    );
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}

/// One frame of `app` as plain text lines (what `--once` prints).
pub fn render_text(app: &App, width: u16, height: u16) -> Result<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height))?;
    terminal.draw(|f| draw(f, app))?;
    Ok(buffer_text(terminal.backend().buffer()))
}

fn buffer_text(buffer: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let mut line = String::new();
        // A wide character covers the next cell, which holds a filler to skip.
        let mut covered = 0;
        for x in 0..buffer.area.width {
            let symbol = buffer[(x, y)].symbol();
            if covered == 0 {
                line.push_str(symbol);
            }
            covered = covered.max(Span::raw(symbol).width()).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wt_memory_core::dedup::Cluster;
    use wt_memory_ops::metrics::report::{EventStats, MemoryStats, Usage};

    const RUSQLITE: &str = "aaaaaaaa-0000-4000-8000-000000000001";
    const WEBHOOK: &str = "bbbbbbbb-0000-4000-8000-000000000002";
    const STAGING: &str = "cccccccc-0000-4000-8000-000000000003";
    const WEBHOOK_OLD: &str = "dddddddd-0000-4000-8000-000000000004";

    fn record(id: &str, kind: &str, content: &str, hours_ago: i64, branch: &str) -> MemoryRecord {
        MemoryRecord {
            id: id.into(),
            content: content.into(),
            experience_type: kind.into(),
            tags: vec!["demo".into(), format!("branch:{branch}")],
            importance: 0.5,
            created_at: wt_memory_core::record::rfc3339(
                &(now() - chrono::Duration::hours(hours_ago)),
            ),
            ..Default::default()
        }
    }

    fn now() -> DateTime<Utc> {
        parse_time("2025-06-10T12:00:00.000Z").unwrap()
    }

    /// Four memories, given out of order: the app sorts them newest first.
    fn app() -> App {
        let old = record(
            WEBHOOK_OLD,
            "Learning",
            "The webhook retries five times with exponential backoff",
            72,
            "main",
        );
        let mut newer = record(
            WEBHOOK,
            "Learning",
            "The webhook retries five times with backoff",
            48,
            "feature/x",
        );
        newer.metadata.insert(SUPERSEDES.into(), WEBHOOK_OLD.into());
        let mut app = App::new("demo", 7, 10, now());
        app.set_memories(vec![
            record(
                STAGING,
                "Context",
                "Staging cluster stg-eu-2 runs before production",
                240,
                "main",
            ),
            old,
            record(
                RUSQLITE,
                "Decision",
                "Use rusqlite for the metrics log\nbecause it is bundled",
                1,
                "main",
            ),
            newer,
        ]);
        app
    }

    fn screen(app: &App) -> String {
        render_text(app, 120, 40).unwrap()
    }

    fn press(app: &mut App, code: KeyCode) -> Action {
        app.handle_key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            assert_eq!(press(app, KeyCode::Char(c)), Action::None);
        }
    }

    fn line_of(screen: &str, needle: &str) -> usize {
        screen
            .lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{screen}"))
    }

    #[test]
    fn the_list_shows_type_age_and_first_line_newest_first() {
        let app = app();
        let text = screen(&app);
        let rows = [
            "│> Decision   1h  Use rusqlite for the metrics log",
            "│  Learning   2d  The webhook retries five times with backoff",
            "│  Learning   3d  The webhook retries five times with exponential",
            "│  Context   10d  Staging cluster stg-eu-2 runs before production",
        ];
        let at: Vec<usize> = rows.iter().map(|r| line_of(&text, r)).collect();
        assert!(at.windows(2).all(|w| w[1] == w[0] + 1), "{at:?}\n{text}");
        assert!(text.contains("demo · 4 memories"), "{text}");
        assert!(
            !text.contains("because it is bundled"),
            "only first lines:\n{text}"
        );
        assert!(
            text.contains("type: all  tag: all  branch: all  age: all"),
            "{text}"
        );
    }

    #[test]
    fn the_tag_filter_keeps_the_memories_carrying_the_tag() {
        let mut app = app();
        app.memories[0].tags.push("payments".into());
        let tagged = app.memories[0].id.clone();
        // Most used first: "demo" (all four), then "payments"; then all again.
        press(&mut app, KeyCode::Char('#'));
        assert!(screen(&app).contains("tag: demo"));
        assert_eq!(app.visible().len(), 4);
        press(&mut app, KeyCode::Char('#'));
        let ids: Vec<&str> = app.visible().iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, [tagged.as_str()]);
        press(&mut app, KeyCode::Char('#'));
        assert_eq!(app.visible().len(), 4);
    }

    #[test]
    fn filters_hide_other_types_branches_and_ages() {
        let mut app = app();
        press(&mut app, KeyCode::Char('t'));
        let text = screen(&app);
        assert!(text.contains("type: Decision"), "{text}");
        assert!(
            text.contains("Use rusqlite") && !text.contains("webhook") && !text.contains("Staging"),
            "{text}"
        );
        press(&mut app, KeyCode::Char('t'));
        let text = screen(&app);
        assert!(
            text.contains("type: Learning") && text.contains("webhook"),
            "{text}"
        );
        assert!(
            !text.contains("rusqlite") && !text.contains("Staging"),
            "{text}"
        );
        // Context, then back to all.
        press(&mut app, KeyCode::Char('t'));
        press(&mut app, KeyCode::Char('t'));
        assert_eq!(app.visible().len(), 4);

        press(&mut app, KeyCode::Char('b'));
        let text = screen(&app);
        assert!(text.contains("branch: feature/x"), "{text}");
        assert_eq!(
            app.visible()
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>(),
            [WEBHOOK]
        );
        press(&mut app, KeyCode::Char('b'));
        press(&mut app, KeyCode::Char('b'));
        assert_eq!(app.visible().len(), 4);

        press(&mut app, KeyCode::Char('a'));
        assert!(screen(&app).contains("age: 1d"));
        assert_eq!(
            app.visible()
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>(),
            [RUSQLITE]
        );
        press(&mut app, KeyCode::Char('a'));
        assert_eq!(
            app.visible().len(),
            3,
            "7d keeps all but the 10-day-old one"
        );
    }

    #[test]
    fn the_detail_view_shows_everything_and_the_links() {
        let mut app = app();
        // The near-duplicates are computed once, when a detail view first needs them.
        assert_eq!(press(&mut app, KeyCode::Enter), Action::LoadDuplicates);
        let text = screen(&app);
        for expected in [
            RUSQLITE,
            "Use rusqlite for the metrics log",
            "because it is bundled",
            "tags: demo, branch:main",
            "importance: 0.50",
            "created: 2025-06-10T11:00:00.000Z (1h ago)",
            "finding…",
        ] {
            assert!(text.contains(expected), "{expected:?} missing:\n{text}");
        }
        app.set_duplicates(&Audit {
            total: 4,
            clusters: 1,
            redundant: 1,
            unique: 3,
            dedup_ratio: 0.25,
            top_clusters: vec![Cluster {
                count: 2,
                preview: String::new(),
                survivor_id: WEBHOOK.into(),
                ids: vec![WEBHOOK.into(), WEBHOOK_OLD.into()],
                victim_ids: vec![WEBHOOK_OLD.into()],
                all_tags: vec![],
                survivor_tags: vec![],
            }],
            supersede_links: vec![],
            review: vec![],
        });
        let text = screen(&app);
        let links = line_of(&text, "Near-duplicates (similarity > 0.9):");
        assert!(
            text.lines().nth(links + 1).unwrap().contains("│  none"),
            "{text}"
        );

        assert_eq!(press(&mut app, KeyCode::Esc), Action::None);
        assert!(screen(&app).contains(" Memories: 4 shown"));
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Down);
        assert_eq!(
            press(&mut app, KeyCode::Enter),
            Action::None,
            "not computed again"
        );
        let text = screen(&app);
        let links = line_of(&text, "Near-duplicates");
        assert!(
            text.lines()
                .nth(links + 1)
                .unwrap()
                .contains("  bbbbbbbb  The webhook retries five times with backoff"),
            "{text}"
        );
        let superseded = line_of(&text, "Superseded by:");
        assert!(
            text.lines()
                .nth(superseded + 1)
                .unwrap()
                .contains("bbbbbbbb  The webhook"),
            "{text}"
        );
        // And the replacement's own detail names what it replaces.
        assert!(
            !text.contains("Supersedes:"),
            "the older memory replaces nothing:\n{text}"
        );
    }

    #[test]
    fn forgetting_asks_and_only_y_forgets() {
        let mut app = app();
        assert_eq!(press(&mut app, KeyCode::Char('d')), Action::None);
        let text = screen(&app);
        assert!(text.contains("Forget memory aaaaaaaa?"), "{text}");
        assert!(
            text.contains("y to forget, any other key keeps it"),
            "{text}"
        );
        assert_eq!(press(&mut app, KeyCode::Char('n')), Action::None);
        let text = screen(&app);
        assert!(
            !text.contains("Forget memory") && text.contains("kept"),
            "{text}"
        );
        press(&mut app, KeyCode::Char('d'));
        assert_eq!(
            press(&mut app, KeyCode::Enter),
            Action::None,
            "Enter is not yes"
        );
        press(&mut app, KeyCode::Char('d'));
        assert_eq!(
            press(&mut app, KeyCode::Char('y')),
            Action::Forget(RUSQLITE.into())
        );
        // What the loop does once the store forgot it.
        app.remove(RUSQLITE);
        let text = screen(&app);
        assert!(
            !text.contains("rusqlite") && text.contains("│> Learning   2d  The webhook"),
            "{text}"
        );
    }

    #[test]
    fn search_runs_on_enter_shows_scores_and_esc_clears_it() {
        let mut app = app();
        press(&mut app, KeyCode::Char('/'));
        typed(&mut app, "webhoo");
        press(&mut app, KeyCode::Backspace);
        typed(&mut app, "ok retries");
        assert!(screen(&app).contains("/webhook retries▏"));
        assert_eq!(
            press(&mut app, KeyCode::Enter),
            Action::Search("webhook retries".into())
        );
        let scored = |id: &str, score: f64| MemoryRecord {
            relevance_score: Some(score),
            ..app.record(id).unwrap().clone()
        };
        let results = vec![scored(WEBHOOK_OLD, 0.91), scored(WEBHOOK, 0.84)];
        app.set_search_results("webhook retries", results);
        let text = screen(&app);
        assert!(
            text.contains("Search \"webhook retries\": 2 results"),
            "{text}"
        );
        let best = line_of(
            &text,
            "│> 0.91 Learning   3d  The webhook retries five times with exp",
        );
        assert_eq!(
            line_of(
                &text,
                "│  0.84 Learning   2d  The webhook retries five times with backoff"
            ),
            best + 1
        );
        assert!(!text.contains("rusqlite"), "{text}");
        // Esc clears the search (and does not quit).
        assert_eq!(press(&mut app, KeyCode::Esc), Action::None);
        assert!(screen(&app).contains("Use rusqlite"));
        // Esc while typing clears too; an empty query runs nothing.
        press(&mut app, KeyCode::Char('/'));
        typed(&mut app, "x");
        assert_eq!(press(&mut app, KeyCode::Esc), Action::None);
        press(&mut app, KeyCode::Char('/'));
        assert_eq!(press(&mut app, KeyCode::Enter), Action::None);
    }

    #[test]
    fn the_metrics_pane_shows_the_events_and_the_usage_rate() {
        let mut app = app();
        app.set_metrics(Ok(Report {
            days: 7,
            memories: 4,
            sessions: 3,
            events: vec![EventStats {
                event: "UserPromptSubmit".into(),
                runs: 12,
                injected: 8,
                abstained: 4,
                p50_ms: 35.0,
                p95_ms: 120.4,
                ..Default::default()
            }],
            usage: Usage {
                injected: 8,
                used: 3,
                rate: Some(0.375),
                ..Default::default()
            },
            most_used: vec![MemoryStats {
                id: WEBHOOK.into(),
                preview: "The webhook retries five times with backoff".into(),
                sessions_injected: 3,
                sessions_used: 2,
            }],
            ..Default::default()
        }));
        let text = screen(&app);
        for expected in [
            "Metrics: last 7 days",
            "UserPromptSubmit    12    8    4     35    120",
            "Usage rate: 38% (3 of 8 injected used)",
            "bbbbbbbb 2/3 The webhook retries",
        ] {
            assert!(text.contains(expected), "{expected:?} missing:\n{text}");
        }
        // Beside the list when wide; `m` hides it.
        assert!(text.contains("Use rusqlite"));
        press(&mut app, KeyCode::Char('m'));
        assert!(!screen(&app).contains("Usage rate"));
        // Narrow: hidden until `m` asks for it.
        press(&mut app, KeyCode::Char('m'));
        let narrow = render_text(&app, 80, 24).unwrap();
        assert!(
            !narrow.contains("Usage rate") && narrow.contains("Use rusqlite"),
            "{narrow}"
        );
        press(&mut app, KeyCode::Char('m'));
        let narrow = render_text(&app, 80, 24).unwrap();
        assert!(narrow.contains("Usage rate: 38%"), "{narrow}");
    }

    #[test]
    fn help_and_quit_keys() {
        let mut app = app();
        press(&mut app, KeyCode::Char('?'));
        assert!(screen(&app).contains("Keys (any key closes)"));
        assert_eq!(
            press(&mut app, KeyCode::Char('q')),
            Action::None,
            "closes the help"
        );
        assert!(!screen(&app).contains("Keys (any key closes)"));
        assert_eq!(press(&mut app, KeyCode::Char('q')), Action::Quit);
        assert_eq!(press(&mut app, KeyCode::Esc), Action::Quit);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(app.handle_key(ctrl_c), Action::Quit);
        // Navigation stays within the list.
        press(&mut app, KeyCode::End);
        assert_eq!(app.selected, 3);
        press(&mut app, KeyCode::Down);
        assert_eq!(app.selected, 3);
        press(&mut app, KeyCode::PageUp);
        press(&mut app, KeyCode::Home);
        assert_eq!(app.selected, 0);
    }

    #[test]
    fn wide_characters_print_once() {
        let mut app = App::new("demo", 7, 10, now());
        app.set_memories(vec![record(
            RUSQLITE,
            "Learning",
            "デプロイ手順 is in docs/deploy.md",
            2,
            "main",
        )]);
        assert!(screen(&app).contains("│> Learning   2h  デプロイ手順 is in docs/deploy.md"));
    }

    #[test]
    fn an_empty_store_says_so() {
        let app = App::new("demo", 7, 10, now());
        assert!(screen(&app).contains("No memories yet in this project."));
    }
}
