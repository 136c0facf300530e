//! Progress bars: byte bars, one per key and one overall (bytes, bytes/s, ETA), and one count
//! bar. Hidden when disabled (library default, or not a terminal).

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;

#[derive(Default)]
pub struct Progress {
    multi: Option<MultiProgress>,
    overall: Option<ProgressBar>,
    bytes: HashMap<usize, ProgressBar>,
    count: Option<ProgressBar>,
}

impl Progress {
    pub fn hidden() -> Progress {
        Progress::default()
    }

    /// Bars on stderr when `enabled` and stderr is a terminal.
    pub fn new(enabled: bool) -> Progress {
        use std::io::IsTerminal;
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        Progress {
            multi: Some(multi),
            ..Progress::default()
        }
    }

    /// Byte bars: `(key, prefix, bytes)` for each, and the overall one.
    pub fn start_bytes(&mut self, bars: &[(usize, String, u64)]) {
        let Some(multi) = &self.multi else { return };
        let style = ProgressStyle::with_template(
            "{prefix:>12} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
        )
        .unwrap()
        .progress_chars("=> ");
        let total: u64 = bars.iter().map(|s| s.2).sum();
        let overall = multi.add(
            ProgressBar::new(total)
                .with_style(style.clone())
                .with_prefix("overall"),
        );
        self.overall = Some(overall);
        for (key, prefix, bytes) in bars {
            let bar = multi.add(
                ProgressBar::new(*bytes)
                    .with_style(style.clone())
                    .with_prefix(prefix.clone()),
            );
            self.bytes.insert(*key, bar);
        }
    }

    /// Moves the byte bar of `key` and the overall one by `bytes`.
    pub fn add_bytes(&self, key: usize, bytes: u64) {
        if let Some(bar) = self.bytes.get(&key) {
            bar.inc(bytes);
        }
        if let Some(bar) = &self.overall {
            bar.inc(bytes);
        }
    }

    /// The count bar: `prefix`, `total` things called `unit`.
    pub fn start_count(&mut self, prefix: &str, unit: &str, total: u64) {
        let Some(multi) = &self.multi else { return };
        let template = format!("{{prefix:>12}} [{{bar:30}}] {{pos}}/{{len}} {unit} ETA {{eta}}");
        let style = ProgressStyle::with_template(&template)
            .unwrap()
            .progress_chars("=> ");
        self.count = Some(
            multi.add(
                ProgressBar::new(total)
                    .with_style(style)
                    .with_prefix(prefix.to_string()),
            ),
        );
    }

    /// Moves the count bar by one.
    pub fn add_one(&self) {
        if let Some(bar) = &self.count {
            bar.inc(1);
        }
    }

    /// Removes the bars (before the report is printed).
    pub fn finish(&mut self) {
        for bar in self
            .bytes
            .values()
            .chain(self.overall.iter())
            .chain(self.count.iter())
        {
            bar.finish_and_clear();
        }
        self.bytes.clear();
        self.overall = None;
        self.count = None;
    }
}
