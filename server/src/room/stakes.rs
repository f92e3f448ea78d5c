//! Bold Points and records around a series: taking the stakes when it
//! starts (after its intent is stored), undoing a start in doubt, paying out
//! when it ends, and counting it in the records.

use jumpgate_protocol as wire;
use jumpgate_protocol::ErrorCode;

use super::{Room, now, storage_unavailable};
use crate::outbound::Refusal;
use crate::store::StoreError;
use crate::wallet::{Escrow, Settlement};

impl Room {
    /// Takes the stakes of the series in the lobby's escrow intent, whose
    /// intent is stored, while the player who asked waits.
    pub(super) async fn take_stakes(&mut self) -> Result<(), Refusal> {
        let Some(intent) = self.lobby.escrow_intent.clone() else {
            return Ok(());
        };
        let [(a, sa), (b, sb)] = &intent.stakes;
        let taken = self
            .wallets
            .escrow(&intent.series, [(a, *sa), (b, *sb)], intent.decided)
            .await;
        match taken {
            Ok(Escrow::Taken) => {
                crate::metrics::METRICS
                    .stake_points_escrowed
                    .inc_by(sa + sb);
                self.lobby.begin_series(now());
                self.lobby.version += 1;
                match self.persist().await {
                    Ok(()) => Ok(()),
                    Err(_) => Err(storage_unavailable()),
                }
            }
            Ok(Escrow::Short(short)) => {
                let name = self
                    .lobby
                    .seats
                    .iter()
                    .flatten()
                    .find(|s| s.id == short)
                    .map_or("a player".to_owned(), |s| s.name.clone());
                self.undo_series_start();
                self.lobby.version += 1;
                let _ = self.persist().await;
                Err(Refusal::new(
                    ErrorCode::InsufficientFunds,
                    format!(
                        "{name} cannot cover the stake of {} Bold Points; nothing was taken",
                        self.lobby.options.stake
                    ),
                ))
            }
            Ok(Escrow::Closed) => {
                tracing::error!(room = %self.lobby.code, series = %intent.series, "series id already settled or bound to other stakes");
                self.undo_series_start();
                self.lobby.version += 1;
                let _ = self.persist().await;
                Err(storage_unavailable())
            }
            Err(e) => {
                if matches!(e, StoreError::Expired(_)) {
                    crate::metrics::METRICS
                        .writes_expired
                        .with_label_values(&["escrow"])
                        .inc();
                }
                // Unknown (or refused as too old): the stakes may or may not
                // be held. Undo by
                // refunding, which also closes the series id against a late
                // escrow; retried by the loop if the wallets stay away.
                tracing::warn!(room = %self.lobby.code, error = %e, "taking the stakes went unanswered; undoing");
                self.release_stakes().await;
                Err(storage_unavailable())
            }
        }
    }

    /// Undoes a series start whose stakes are in doubt (nobody is waiting
    /// for it any more: after a failure, on resume): refunds the series —
    /// whatever was taken comes back, and the id can take nothing later —
    /// then reverses the seating that asked for it. `true` when done.
    pub(super) async fn release_stakes(&mut self) -> bool {
        let Some(intent) = self.lobby.escrow_intent.clone() else {
            return true;
        };
        let refund = Settlement::Refund {
            players: intent.stakes.clone().map(|(id, _)| id),
        };
        match self
            .wallets
            .settle(
                &intent.series,
                &refund,
                crate::wallet::utc_day(),
                intent.decided,
            )
            .await
        {
            Ok(settled) => {
                crate::metrics::METRICS
                    .stake_points_refunded
                    .inc_by(settled.refunded);
                tracing::info!(room = %self.lobby.code, series = %intent.series, refunded = settled.refunded, "series start undone");
                self.undo_series_start();
                self.lobby.version += 1;
                let _ = self.persist().await;
                self.broadcast();
                true
            }
            Err(e) => {
                tracing::warn!(room = %self.lobby.code, error = %e, "refunding an unstarted series failed; will retry");
                false
            }
        }
    }

    /// Reverses a series start in the lobby; whoever lost their seat is no
    /// longer a member, and the cached records follow the seats.
    pub(super) fn undo_series_start(&mut self) {
        let unswap = self
            .lobby
            .escrow_intent
            .as_ref()
            .is_some_and(|i| i.undo == crate::lobby::SeriesStartUndo::Unswap);
        if let Some(gone) = self.lobby.undo_series_start() {
            self.members.retain(|m| m.identity.id != gone);
        }
        if unswap {
            self.record_views.swap(0, 1);
            if let Some(h2h) = &mut self.head_to_head {
                h2h.wins.reverse();
            }
        }
    }

    /// Writes a finished series into the records (idempotent; retried),
    /// once the record saying it is due is stored.
    pub(super) async fn record_pending(&mut self) {
        if self.unsaved() || self.stale {
            return;
        }
        let Some(job) = self.lobby.pending_record.clone() else {
            return;
        };
        match self.records.record(&job).await {
            Ok(()) => {
                self.lobby.pending_record = None;
                self.refresh_records().await;
                self.commit_or_retry().await;
                self.broadcast();
            }
            Err(StoreError::Expired(why)) => {
                // Counting it now could count it twice: it is left out.
                tracing::error!(room = %self.lobby.code, series = %job.series, %why, "series not recorded: decided longer ago than the idempotency window");
                crate::metrics::METRICS
                    .writes_expired
                    .with_label_values(&["series_record"])
                    .inc();
                self.lobby.pending_record = None;
                self.commit_or_retry().await;
            }
            Err(e) => {
                tracing::warn!(room = %self.lobby.code, error = %e, "recording failed; will retry");
            }
        }
    }

    /// Rereads the seated accounts' records; true when they changed.
    pub(super) async fn refresh_records(&mut self) -> bool {
        let thresholds = self.settings.rank_thresholds;
        let rule_set = self.lobby.options.rule_set.name();
        let mut views: [Option<wire::RecordView>; 2] = [None, None];
        for (i, seat) in self.lobby.seats.iter().enumerate() {
            if let Some(s) = seat.as_ref().filter(|s| !s.guest)
                && let Ok(r) = self.records.player(&s.id, rule_set).await
            {
                views[i] = Some(wire::RecordView {
                    rank: thresholds.rank(r.series_won).to_owned(),
                    series_won: r.series_won,
                    streak: r.streak,
                    best_streak: r.best_streak,
                });
            }
        }
        let h2h = match &self.lobby.seats {
            [Some(a), Some(b)] if !a.guest && !b.guest => self
                .records
                .head_to_head(&a.id, &b.id)
                .await
                .ok()
                .map(|(x, y, d)| wire::HeadToHead {
                    wins: vec![x, y],
                    draws: d,
                }),
            _ => None,
        };
        let changed = views != self.record_views || h2h != self.head_to_head;
        self.record_views = views;
        self.head_to_head = h2h;
        changed
    }

    /// Pays out or refunds a finished staked series, once the record saying
    /// it is due is stored (write-ahead). Idempotent, so simply retried
    /// until it goes through.
    pub(super) async fn settle_pending(&mut self) {
        if self.unsaved() || self.stale {
            return;
        }
        let Some((series, settlement)) = self.lobby.pending_settlement.clone() else {
            return;
        };
        match self
            .wallets
            .settle(
                &series,
                &settlement,
                crate::wallet::utc_day(),
                self.lobby.settlement_decided,
            )
            .await
        {
            Ok(settled) => {
                let metrics = &crate::metrics::METRICS;
                metrics.stake_points_paid.inc_by(settled.paid);
                metrics.stake_points_refunded.inc_by(settled.refunded);
                tracing::info!(room = %self.lobby.code, %series, paid = settled.paid, refunded = settled.refunded, "stakes settled");
                self.lobby.pending_settlement = None;
                self.commit_or_retry().await;
            }
            Err(e) => {
                tracing::warn!(room = %self.lobby.code, error = %e, "settlement failed; will retry");
            }
        }
    }
}
