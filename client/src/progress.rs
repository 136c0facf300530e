//! Progress bars: one per section being written and one overall (bytes, bytes/s, ETA), then
//! one for the seal chunks. Hidden when disabled (library default, or not a terminal).

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;

#[derive(Default)]
pub struct Progress {
    multi: Option<MultiProgress>,
    overall: Option<ProgressBar>,
    sections: HashMap<usize, ProgressBar>,
    seal: Option<ProgressBar>,
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

    /// Bars for a write pass: `(section, bytes to write)` for each section with work.
    pub fn start_writes(&mut self, sections: &[(usize, u64)]) {
        let Some(multi) = &self.multi else { return };
        let style = ProgressStyle::with_template(
            "{prefix:>12} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
        )
        .unwrap()
        .progress_chars("=> ");
        let total: u64 = sections.iter().map(|s| s.1).sum();
        let overall = multi.add(
            ProgressBar::new(total)
                .with_style(style.clone())
                .with_prefix("overall"),
        );
        self.overall = Some(overall);
        for &(section, bytes) in sections {
            let bar = multi.add(
                ProgressBar::new(bytes)
                    .with_style(style.clone())
                    .with_prefix(format!("section {section}")),
            );
            self.sections.insert(section, bar);
        }
    }

    pub fn wrote(&self, section: usize, bytes: u64) {
        if let Some(bar) = self.sections.get(&section) {
            bar.inc(bytes);
        }
        if let Some(bar) = &self.overall {
            bar.inc(bytes);
        }
    }

    pub fn start_seal(&mut self, chunks: u64) {
        let Some(multi) = &self.multi else { return };
        let style =
            ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} chunks ETA {eta}")
                .unwrap()
                .progress_chars("=> ");
        self.seal = Some(
            multi.add(
                ProgressBar::new(chunks)
                    .with_style(style)
                    .with_prefix("seal"),
            ),
        );
    }

    pub fn sealed(&self) {
        if let Some(bar) = &self.seal {
            bar.inc(1);
        }
    }

    /// Removes the bars (before the report is printed).
    pub fn finish(&mut self) {
        for bar in self
            .sections
            .values()
            .chain(self.overall.iter())
            .chain(self.seal.iter())
        {
            bar.finish_and_clear();
        }
        self.sections.clear();
        self.overall = None;
        self.seal = None;
    }
}
