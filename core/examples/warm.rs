//! Warm generation speed: RUNS runs of 256 greedy tokens from token 1 in one process, each on a
//! fresh state, after one untimed run; prints the median and the best tokens a second. Runs in
//! one process see the machine in one state, so two builds (or thread counts, or kernel paths)
//! compare more steadily here than in `client run`'s single runs, which also pay a process's
//! cold start; docs/inference.md says which figures come from which.
//!
//! cargo run --release -p curta-core --example warm -- ARTIFACT RUNS [THREADS] [avx2|portable]

use curta_core::infer::{state_len, Model, Path, Progress, Run, Settings};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 || args.len() > 5 {
        eprintln!("usage: warm ARTIFACT RUNS [THREADS] [avx2|portable]");
        std::process::exit(2);
    }
    // Loaded as `client run` loads it (on huge pages where the system gives them).
    let file = curta_core::convert::LoadedFile::open(std::path::Path::new(&args[1]))
        .unwrap_or_else(|e| panic!("{}: {e}", args[1]));
    let bytes = file.bytes();
    let runs: usize = args[2].parse().expect("RUNS is a number");
    let threads: usize = args
        .get(3)
        .map_or(1, |t| t.parse().expect("THREADS is a number"));
    let path = match args.get(4).map(String::as_str) {
        None => Path::detect(),
        Some("avx2") => Path::Avx2,
        Some("portable") => Path::Portable,
        Some(other) => panic!("unknown path {other}: avx2 or portable"),
    };
    let artifact = curta_core::decode(bytes).unwrap_or_else(|e| panic!("{}: {e}", args[1]));
    let model = Model::from_artifact(&artifact).expect("model");
    let steps = 256.min(model.config().context_length);
    let one = || {
        let mut state = vec![0u8; state_len(&model.config())];
        let start = Instant::now();
        let run = Run::start(&mut state, &model, &[1], steps, Settings::greedy());
        let mut run = run.expect("run").with_threads(threads).with_path(path);
        let mut tokens = 0;
        loop {
            match run.advance(&model, u64::MAX).expect("advance") {
                Progress::Token { .. } => tokens += 1,
                Progress::Finished(_) => break,
                _ => {}
            }
        }
        tokens as f64 / start.elapsed().as_secs_f64()
    };
    one();
    let mut rates: Vec<f64> = (0..runs.max(1)).map(|_| one()).collect();
    rates.sort_by(f64::total_cmp);
    println!(
        "{{\"runs\": {}, \"threads\": {threads}, \"path\": \"{path:?}\", \"median_tokens_per_second\": {:.1}, \"best_tokens_per_second\": {:.1}}}",
        rates.len(),
        rates[rates.len() / 2],
        rates[rates.len() - 1]
    );
}
