//! The idle phase: connections that say `hello` and stay open while the server's
//! memory is read.

use super::*;

/// Opens `count` connections, says `hello` on each (one echo round trip on the echo
/// server), and reads the server's memory before and after; bounded by `limit`. The
/// connections stay open until the returned [`IdleConnections`] is dropped.
pub async fn run_idle(
    kind: Kind,
    protocol: ProtocolVersion,
    url: &str,
    count: usize,
    pid: Option<u32>,
    limit: Duration,
) -> (IdleStats, IdleConnections) {
    let rss_before_kib = pid.and_then(crate::net::vm_rss_kib);
    let hard = Instant::now() + limit;
    let frames = EchoFrames::new();
    let permits = Arc::new(Semaphore::new(SETUP_CONCURRENCY));
    let mut opening = JoinSet::new();
    for _ in 0..count {
        let (url, frames, permits) = (url.to_owned(), frames.clone(), permits.clone());
        opening.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            match kind {
                Kind::Jumpgate => Player::greet(&url, protocol, hard).await.map(|p| p.conn),
                Kind::Echo => {
                    let mut conn = Conn::connect(&url, ProtocolVersion::V1, hard).await?;
                    match conn.echo(&frames, hard).await? {
                        Some(_) => Ok(conn),
                        None => Err(timed_out("the first echo")),
                    }
                }
            }
        });
    }
    let started = Instant::now();
    let mut open = Vec::with_capacity(count);
    let (mut errors, mut first_error) = (0, None);
    let mut last_report = started;
    loop {
        match timeout_at(hard, opening.join_next()).await {
            Ok(Some(Ok(Ok(conn)))) => open.push(conn),
            Ok(Some(Ok(Err(e)))) => {
                errors += 1;
                first_error.get_or_insert(e);
            }
            Ok(Some(Err(e))) => {
                errors += 1;
                first_error.get_or_insert(e.to_string());
            }
            Ok(None) => break,
            Err(_) => {
                errors += opening.len() as u64;
                first_error.get_or_insert("opening connections took too long".into());
                opening.abort_all();
                break;
            }
        }
        if last_report.elapsed() >= Duration::from_secs(1) {
            last_report = Instant::now();
            eprintln!(
                "  idle {kind:?}: {:>4.0}s {} of {count} open, errors {errors}",
                started.elapsed().as_secs_f64(),
                open.len(),
            );
        }
    }
    // Let the server finish any work the greetings caused before reading its memory.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after_kib = pid.and_then(crate::net::vm_rss_kib);
    eprintln!(
        "  idle {kind:?}: {} open in {:.1}s, errors {errors}",
        open.len(),
        started.elapsed().as_secs_f64()
    );
    let connections = open.len();
    let stats = IdleStats {
        connections,
        rss_before_kib,
        rss_after_kib,
        errors,
        first_error,
    };
    (stats, IdleConnections(open))
}

/// The connections an idle phase opened, open until dropped: a later phase measured
/// while they are held adds its own connections on top, instead of reusing the memory
/// these would have left free.
#[derive(Debug)]
pub struct IdleConnections(Vec<Conn>);

impl IdleConnections {
    /// How many are open.
    pub fn count(&self) -> usize {
        self.0.len()
    }
}
