//! CPU time of the processes of a run (the server, Redis, this load tester), sampled
//! while it lasts, and the median of repeated figures.
//!
//! Moved here from the retired `bench-fencing` experiment; `bench-cluster` uses them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::net;

/// CPU time of the server, of Redis and of this process, read every 100 ms while a
/// run lasts.
pub(crate) struct CpuSampler {
    samples: Arc<Mutex<Vec<CpuSample>>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone, Copy)]
struct CpuSample {
    at: Instant,
    server: Option<Duration>,
    redis: Option<Duration>,
    client: Option<Duration>,
}

impl CpuSampler {
    /// Samples `server`, the sum over the `redis` processes (none if any cannot be
    /// read) and this process.
    pub(crate) fn start(server: Option<u32>, redis: Vec<u32>) -> CpuSampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let kept = samples.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                let at = tick.tick().await;
                let sample = CpuSample {
                    at,
                    server: server.and_then(net::cpu_time),
                    redis: (!redis.is_empty())
                        .then(|| {
                            redis
                                .iter()
                                .map(|pid| net::cpu_time(*pid))
                                .sum::<Option<Duration>>()
                        })
                        .flatten(),
                    client: net::cpu_time(std::process::id()),
                };
                kept.lock().unwrap_or_else(|e| e.into_inner()).push(sample);
            }
        });
        CpuSampler { samples, task }
    }

    /// CPU used from the first sample at or after `from` to the last at or before
    /// `to`.
    pub(crate) fn used(&self, from: Instant, to: Instant) -> Option<CpuUsed> {
        let samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let first = samples.iter().find(|s| s.at >= from)?;
        let last = samples.iter().rev().find(|s| s.at <= to)?;
        let delta = |a: Option<Duration>, b: Option<Duration>| Some(b?.saturating_sub(a?));
        Some(CpuUsed {
            server: delta(first.server, last.server),
            redis: delta(first.redis, last.redis),
            client: delta(first.client, last.client),
        })
    }
}

/// CPU time used over a stretch, by process.
pub(crate) struct CpuUsed {
    pub(crate) server: Option<Duration>,
    pub(crate) redis: Option<Duration>,
    pub(crate) client: Option<Duration>,
}

impl Drop for CpuSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0]), Some(3.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(vec![5.0, 1.0, 3.0]), Some(3.0));
    }
}
