//! Perft speed from the start position, one rule set per benchmark.
//! `cargo bench -p jumpgate-rules --bench perft`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use jumpgate_rules::{Position, RuleSet, perft::perft};

fn bench_perft(c: &mut Criterion) {
    let mut group = c.benchmark_group("perft");
    group.sample_size(10);
    for (rs, depth) in [
        (RuleSet::Russian, 10),
        (RuleSet::American, 9),
        (RuleSet::Brazilian, 9),
        (RuleSet::Italian, 9),
        (RuleSet::Spanish, 9),
        (RuleSet::Thai, 8),
    ] {
        let start = Position::start(rs);
        group.bench_function(format!("{rs}_depth_{depth}"), |b| {
            b.iter(|| perft(rs, black_box(&start), depth, false))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_perft);
criterion_main!(benches);
