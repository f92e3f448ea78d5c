//! The four levels and what makes them differ: how deep and how long they
//! look, and how often and how far they deliberately stray from their best
//! move.

use std::fmt;
use std::str::FromStr;

/// How strong a computer opponent plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Level {
    /// Very easy: looks two plies ahead and often plays a weaker move.
    Tamer,
    /// Easy: looks four plies ahead and sometimes strays.
    Driver,
    /// Medium: a full search on a fixed node budget, no deliberate errors.
    Warden,
    /// Hard: searches as deep as its time budget allows.
    Executive,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::Tamer, Level::Driver, Level::Warden, Level::Executive];

    pub const fn name(self) -> &'static str {
        match self {
            Level::Tamer => "tamer",
            Level::Driver => "driver",
            Level::Warden => "warden",
            Level::Executive => "executive",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Level::Tamer => "Tamer",
            Level::Driver => "Driver",
            Level::Warden => "Warden",
            Level::Executive => "Executive",
        }
    }

    /// The level below, if any.
    pub fn below(self) -> Option<Level> {
        match self {
            Level::Tamer => None,
            Level::Driver => Some(Level::Tamer),
            Level::Warden => Some(Level::Driver),
            Level::Executive => Some(Level::Warden),
        }
    }

    pub(crate) const fn profile(self) -> Profile {
        match self {
            Level::Tamer => Profile {
                max_depth: 2,
                max_nodes: 2_000,
                timed: false,
                noise: 120,
                stray_percent: 30,
                table_bits: 12,
            },
            Level::Driver => Profile {
                max_depth: 4,
                max_nodes: 6_000,
                timed: false,
                noise: 40,
                stray_percent: 8,
                table_bits: 14,
            },
            Level::Warden => Profile {
                max_depth: 40,
                max_nodes: 8_000,
                timed: false,
                noise: 0,
                stray_percent: 0,
                table_bits: 16,
            },
            Level::Executive => Profile {
                max_depth: 64,
                max_nodes: u64::MAX,
                timed: true,
                noise: 0,
                stray_percent: 0,
                table_bits: 18,
            },
        }
    }
}

/// The knobs behind a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Profile {
    pub max_depth: u32,
    /// Node budget per move: what keeps the lower levels deterministic.
    pub max_nodes: u64,
    /// Thinks until its time budget rather than to a node budget.
    pub timed: bool,
    /// Each root move's score is shifted by up to this much at random
    /// (a man is 100), so near-equal moves are picked among.
    pub noise: i32,
    /// Chance in percent of playing a uniformly random legal move.
    pub stray_percent: u32,
    pub table_bits: u32,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level name that is not one of ours.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown level {0:?} (expected one of tamer, driver, warden, executive)")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;
    fn from_str(s: &str) -> Result<Level, UnknownLevel> {
        let lower = s.trim().to_ascii_lowercase();
        Level::ALL
            .into_iter()
            .find(|l| l.name() == lower)
            .ok_or_else(|| UnknownLevel(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for level in Level::ALL {
            assert_eq!(level.name().parse::<Level>(), Ok(level));
            assert_eq!(level.title().parse::<Level>(), Ok(level));
            #[cfg(feature = "serde")]
            assert_eq!(
                serde_json::to_string(&level).unwrap(),
                format!("\"{}\"", level.name())
            );
        }
        assert!("grandmaster".parse::<Level>().is_err());
    }

    #[test]
    fn levels_look_further_as_they_rise() {
        let profiles = Level::ALL.map(Level::profile);
        for pair in profiles.windows(2) {
            assert!(pair[1].max_depth >= pair[0].max_depth);
            assert!(pair[1].max_nodes >= pair[0].max_nodes);
            assert!(pair[1].stray_percent <= pair[0].stray_percent);
        }
    }
}
