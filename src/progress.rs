//! Progress on long runs: a spinner line on standard error (indicatif) naming
//! the task, the phase, the events read and the reading rate.
//!
//! Engines and the loader never print: they report through cheap hooks. The
//! loader stores its event count once per 65,536 events ([`events_read`], one
//! relaxed atomic store); engines name their phase ([`phase`]) a few times per
//! run; `sweep` names its task ([`task`]). While no display runs, [`phase`] and
//! [`task`] return after one relaxed atomic load.
//!
//! [`start`] starts the display only when standard error is a terminal and
//! `--quiet` is not given, and only draws once the command has run for a
//! second (`CPRACE_PROGRESS_DELAY_MS` overrides the delay, for tests), so short
//! commands and redirected runs never see a byte of it. Dropping the returned
//! guard clears the line.

use std::borrow::Cow;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// True while a display runs (hooks record names only then).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Events the loader has read since its last [`start_reading`].
static EVENTS: AtomicU64 = AtomicU64::new(0);

struct State {
    task: Cow<'static, str>,
    phase: Cow<'static, str>,
    /// What the counter counts: events `read` or `written`.
    verb: &'static str,
    reading_since: Option<Instant>,
    bar: Option<ProgressBar>,
}

static STATE: Mutex<State> = Mutex::new(State {
    task: Cow::Borrowed(""),
    phase: Cow::Borrowed(""),
    verb: "read",
    reading_since: None,
    bar: None,
});

fn state() -> std::sync::MutexGuard<'static, State> {
    // A panic elsewhere while holding the lock leaves plain data behind.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The loader's hook: `n` events read so far. Called once per block of
/// events; costs one relaxed store.
#[inline]
pub(crate) fn events_read(n: u64) {
    EVENTS.store(n, Relaxed);
}

/// The loader starts reading a trace: the event count and rate restart.
pub(crate) fn start_reading() {
    start_counting("read");
}

/// A writer (`gen`) starts writing events; it reports them through
/// [`events_read`] too, and [`done_reading`] ends the count.
pub(crate) fn start_writing() {
    start_counting("written");
}

fn start_counting(verb: &'static str) {
    EVENTS.store(0, Relaxed);
    if ACTIVE.load(Relaxed) {
        let mut s = state();
        s.verb = verb;
        s.reading_since = Some(Instant::now());
    }
}

/// The loader finished reading `n` events.
pub(crate) fn done_reading(n: u64) {
    EVENTS.store(n, Relaxed);
    if ACTIVE.load(Relaxed) {
        state().reading_since = None;
    }
}

/// Name the current phase (`loading`, `cp: fixpoint`, `race pass`, ...).
pub fn phase(name: impl Into<Cow<'static, str>>) {
    if ACTIVE.load(Relaxed) {
        state().phase = name.into();
    }
}

/// Name the current task (e.g. `sweep run 3 of 11: cp K=1000`); the phase
/// is cleared.
pub fn task(name: impl Into<Cow<'static, str>>) {
    if ACTIVE.load(Relaxed) {
        let mut s = state();
        s.task = name.into();
        s.phase = Cow::Borrowed("");
    }
}

/// Run `f` (which prints to standard error) with the progress line hidden.
pub fn suspend<R>(f: impl FnOnce() -> R) -> R {
    let bar = if ACTIVE.load(Relaxed) {
        state().bar.clone()
    } else {
        None
    };
    match bar {
        Some(b) => b.suspend(f),
        None => f(),
    }
}

/// The running display; dropping it stops the display and clears its line.
pub struct Guard {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop.store(true, Relaxed);
            t.thread().unpark();
            let _ = t.join();
            ACTIVE.store(false, Relaxed);
            let mut s = state();
            if let Some(b) = s.bar.take() {
                b.finish_and_clear();
            }
            s.task = Cow::Borrowed("");
            s.phase = Cow::Borrowed("");
        }
    }
}

/// Start the display when standard error is a terminal and not `quiet`.
pub fn start(quiet: bool) -> Guard {
    let stop = Arc::new(AtomicBool::new(false));
    if quiet || !std::io::stderr().is_terminal() || ACTIVE.swap(true, Relaxed) {
        return Guard { stop, thread: None };
    }
    let delay = std::env::var("CPRACE_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(1), Duration::from_millis);
    let stop2 = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("progress".into())
        .spawn(move || display(&stop2, delay))
        .ok();
    if thread.is_none() {
        ACTIVE.store(false, Relaxed);
    }
    Guard { stop, thread }
}

fn display(stop: &AtomicBool, delay: Duration) {
    std::thread::park_timeout(delay);
    if stop.load(Relaxed) {
        return;
    }
    // This thread paces the redraws itself (every 100 ms); the target's own
    // rate limit must not swallow the last frame drawn at the end.
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(200));
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>3} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    state().bar = Some(bar.clone());
    while !stop.load(Relaxed) {
        bar.set_message(message());
        bar.tick();
        std::thread::park_timeout(Duration::from_millis(100));
    }
    // One last frame with the final state, so a run shorter than a redraw
    // interval (or starved of CPU) still shows where it got before the line
    // is cleared.
    bar.set_message(message());
    bar.tick();
}

/// `sweep run 2 of 9: cp K=100 · cp datalog: fixpoint · 1.2M events read`, with
/// the rate while counting.
fn message() -> String {
    let s = state();
    let events = EVENTS.load(Relaxed);
    let mut parts: Vec<String> = Vec::new();
    if !s.task.is_empty() {
        parts.push(s.task.to_string());
    }
    if !s.phase.is_empty() {
        parts.push(s.phase.to_string());
    }
    if events == 0 && s.reading_since.is_none() {
        return parts.join(" · ");
    }
    let mut read = format!("{} events {}", human(events as f64), s.verb);
    if let Some(since) = s.reading_since {
        let secs = since.elapsed().as_secs_f64();
        if secs > 0.05 {
            read.push_str(&format!(" ({} events/s)", human(events as f64 / secs)));
        }
    }
    parts.push(read);
    parts.join(" · ")
}

/// `950`, `12.3k`, `4.56M`.
fn human(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_numbers() {
        assert_eq!(human(950.0), "950");
        assert_eq!(human(12_345.0), "12.3k");
        assert_eq!(human(4_560_000.0), "4.56M");
    }

    #[test]
    fn hooks_record_nothing_without_a_display() {
        // Tests never run on a terminal display: the names are dropped.
        phase("fixpoint");
        task("sweep");
        assert!(!ACTIVE.load(Relaxed));
        let s = state();
        assert_eq!(s.phase, "");
        assert_eq!(s.task, "");
    }
}
