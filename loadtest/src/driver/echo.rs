//! Echo pairs: two connections to the echo server taking turns sending a frame the
//! size of a `move` and waiting for it back.

use super::*;

/// Builds echo frames: MessagePack `ack`s padded to the size of a `move` message.
#[derive(Debug, Clone)]
pub struct EchoFrames {
    pub(super) pad: String,
}

#[derive(Serialize)]
pub(super) struct Probe<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) seq: u32,
    pub(super) pad: &'a str,
}

impl Default for EchoFrames {
    fn default() -> Self {
        EchoFrames::new()
    }
}

impl EchoFrames {
    /// Works out the padding once; the `seq` takes the same bytes in both messages.
    pub fn new() -> EchoFrames {
        let move_len = move_frame_len(1);
        let bare = EchoFrames { pad: String::new() }.frame(1).len();
        EchoFrames {
            pad: "x".repeat(move_len.saturating_sub(bare)),
        }
    }

    /// The frame for `seq`.
    pub fn frame(&self, seq: u32) -> Vec<u8> {
        let probe = Probe {
            kind: "ack",
            seq,
            pad: &self.pad,
        };
        match codec::encode(Encoding::MsgPack, &probe) {
            Ok(Frame::Binary(bytes)) => bytes,
            Ok(Frame::Text(text)) => text.into_bytes(),
            Err(e) => panic!("cannot encode an echo frame: {e}"),
        }
    }
}

/// The size in bytes of a MessagePack `move` with a typical notation.
pub fn move_frame_len(seq: u32) -> usize {
    codec::encode_client(
        Encoding::MsgPack,
        &ClientMessage::Move {
            seq,
            notation: Some(TYPICAL_NOTATION.into()),
            path: None,
        },
    )
    .len()
}

impl Conn {
    /// Sends one echo frame and waits for it; returns when it came back.
    pub(super) async fn echo(
        &mut self,
        frames: &EchoFrames,
        hard: Instant,
    ) -> Result<Option<Instant>, String> {
        let seq = self.client.next_seq();
        // Not paced: the echo server has no rate limit to stay under.
        self.client
            .send_raw_binary(frames.frame(seq))
            .await
            .map_err(|e| e.to_string())?;
        let limit = wait_limit(hard);
        loop {
            match self.recv(limit).await? {
                None if limit >= hard => return Ok(None),
                None => return Err(timed_out("an echo")),
                Some(ServerMessage::Ack { seq: s }) if s == seq => {
                    return Ok(Some(Instant::now()));
                }
                Some(_) => {}
            }
        }
    }
}

/// Two echo connections taking turns.
#[derive(Debug)]
pub(super) struct Pair {
    pub(super) a: Conn,
    pub(super) b: Conn,
}

impl Pair {
    pub(super) async fn set_up(
        url: &str,
        frames: &EchoFrames,
        hard: Instant,
    ) -> Result<Pair, String> {
        let mut a = Conn::connect(url, ProtocolVersion::V1, hard).await?;
        let mut b = Conn::connect(url, ProtocolVersion::V1, hard).await?;
        for conn in [&mut a, &mut b] {
            if conn.echo(frames, hard).await?.is_none() {
                return Err(timed_out("the first echo"));
            }
        }
        Ok(Pair { a, b })
    }
}

pub(super) async fn play_pair(
    mut pair: Pair,
    frames: EchoFrames,
    mut schedule: Schedule,
    deadline: Instant,
    progress: Arc<Progress>,
) -> Outcome {
    let mut outcome = Outcome::new();
    let hard = deadline + GRACE;
    let mut a_turn = true;
    let result = async {
        while Instant::now() < deadline {
            let Some(intended) = schedule.wait(deadline).await else {
                break;
            };
            let conn = if a_turn { &mut pair.a } else { &mut pair.b };
            a_turn = !a_turn;
            let sent = Instant::now();
            let Some(back) = conn.echo(&frames, hard).await? else {
                break;
            };
            if back <= deadline {
                let from = if schedule.gap.is_some() {
                    intended
                } else {
                    sent
                };
                outcome.latency_us.saturating_record(micros(from, back));
                outcome.ops += 1;
                progress.ops.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok::<(), String>(())
    }
    .await;
    if let Err(e) = result {
        progress.errors.fetch_add(1, Ordering::Relaxed);
        outcome.error = Some(e);
    }
    outcome
}
