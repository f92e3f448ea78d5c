//! Progress for the long runs: on a terminal, a bar on standard error with
//! the count, the time taken and an estimate of the time left; anywhere
//! else (a pipe, a file, CI) nothing at all, so that logs hold no escape
//! codes. Results never go through here: they stay on standard output.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar that draws only when standard error is a terminal.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar towards `total` steps, each one `unit` ("games", "passes").
    pub fn bar(total: u64, unit: &str) -> Self {
        let template =
            format!("{{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {unit}, about {{eta}} left");
        Self::new(ProgressBar::new(total), &template)
    }

    /// A counter for work whose total is not known in advance: the count
    /// and the time taken, with no estimate of the time left.
    pub fn counter(unit: &str) -> Self {
        let template = format!("{{spinner}} {{elapsed_precise}} {{pos}} {unit}");
        Self::new(ProgressBar::new_spinner(), &template)
    }

    fn new(bar: ProgressBar, template: &str) -> Self {
        if !std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::hidden());
            return Self { bar };
        }
        bar.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        // Redrawn now and then even between steps, so the clock moves
        // while a slow game is played.
        bar.enable_steady_tick(Duration::from_millis(500));
        Self { bar }
    }

    /// One more step done.
    pub fn step(&self) {
        self.bar.inc(1);
    }

    /// `done` steps done in all.
    pub fn set(&self, done: u64) {
        self.bar.set_position(done);
    }

    /// Prints a result line on standard output without tearing the bar.
    pub fn println(&self, line: &str) {
        self.bar.suspend(|| println!("{line}"));
    }

    /// Removes the bar, before the results are printed.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
