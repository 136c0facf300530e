//! [`RunUnits`], the closed form, equals the step cost model summed stage by stage and item by
//! item ([`step_cost`]), for the shapes runs are measured on and a grouped-query one.

use super::*;

fn shapes() -> [Config; 4] {
    let config = |dim, hidden_dim, layers, heads, kv_heads, vocab_size, context_length| Config {
        dim,
        hidden_dim,
        layers,
        heads,
        kv_heads,
        vocab_size,
        context_length,
    };
    [
        // stories260K, the stories15M shape, a grouped-query shape, heads of eight values.
        config(64, 172, 5, 8, 4, 512, 512),
        config(288, 768, 6, 6, 6, 32_000, 256),
        config(128, 384, 4, 8, 2, 1_000, 128),
        config(64, 256, 16, 8, 8, 2_048, 64),
    ]
}

/// Every stage's items at `pos`: (the layers' units, the end's units, the largest item).
fn by_stage(c: &Config, pos: u32, temperature: u32) -> (u64, u64, u64) {
    let (mut layers, mut end, mut largest) = (0, 0, 0);
    let mut code = 0;
    while let Some(stage) = Stage::of(code, c.layers) {
        code += 1;
        if temperature == 0 && matches!(stage, Stage::Weigh | Stage::Cut | Stage::Draw) {
            continue;
        }
        let item = step_cost(stage, c, pos, temperature);
        largest = largest.max(item);
        match code <= 1 + 10 * c.layers {
            true => layers += stage.items(c) as u64 * item,
            false => end += stage.items(c) as u64 * item,
        }
    }
    (layers, end, largest)
}

#[test]
fn run_units_are_the_stage_by_stage_sum() {
    for c in shapes() {
        for temperature in [0, 52_429] {
            let u = RunUnits::of(&c, temperature);
            for pos in [0, 1, 63, c.context_length - 1] {
                let (layers, end, largest) = by_stage(&c, pos, temperature);
                assert_eq!(
                    layers,
                    u.layers + u.per_position * (pos as u64 + 1),
                    "{c:?} {pos}"
                );
                assert_eq!(end, u.end, "{c:?} {temperature}");
                let head = u.head + u.head_per_position * (pos as u64 + 1);
                assert_eq!(largest, u.largest.max(head), "{c:?} {pos} {temperature}");
            }
        }
    }
}

#[test]
fn the_bound_counts_every_position_once() {
    // Three positions of the stories15M shape, greedy: token 1's forced position, then two
    // generated ones: the units of positions 0, 1 and 2 and two ends, over what a step surely
    // carries, plus a stop per token and one.
    let c = shapes()[1];
    let total: u64 =
        (0..3).map(|pos| by_stage(&c, pos, 0).0).sum::<u64>() + 2 * by_stage(&c, 0, 0).1;
    let largest = by_stage(&c, 2, 0).2;
    let sure = crate::run::MAX_STEP_BUDGET as u64 - largest;
    assert_eq!(
        run_transactions_bound(&c, 2, 2, 0),
        total.div_ceil(sure) + 3
    );
}
