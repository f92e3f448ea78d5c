//! The Executive's evaluation weights per rule set, written by
//! `jumpgate tune` (see the bots README); until a rule set is tuned, its
//! weights are the hand-set evaluation's.

use crate::eval::Weights;
use crate::tuned::TunedWeights;
use jumpgate_rules::RuleSet;

pub(crate) const AMERICAN: TunedWeights =
    TunedWeights::from_hand_set(&Weights::for_rule_set(RuleSet::American));
pub(crate) const BRAZILIAN: TunedWeights =
    TunedWeights::from_hand_set(&Weights::for_rule_set(RuleSet::Brazilian));
pub(crate) const RUSSIAN: TunedWeights =
    TunedWeights::from_hand_set(&Weights::for_rule_set(RuleSet::Russian));
pub(crate) const SPANISH: TunedWeights =
    TunedWeights::from_hand_set(&Weights::for_rule_set(RuleSet::Spanish));
pub(crate) const ITALIAN: TunedWeights =
    TunedWeights::from_hand_set(&Weights::for_rule_set(RuleSet::Italian));
pub(crate) const THAI: TunedWeights =
    TunedWeights::from_hand_set(&Weights::for_rule_set(RuleSet::Thai));
