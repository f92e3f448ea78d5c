//! The Executive's evaluation weights per rule set, as `jumpgate-engine
//! tune` printed them (see the bots README for the data and the commands);
//! each fit beat the version before it on equal nodes before it was kept.
//!
//! Feature order: men, kings, back_rank, centre, tempo, near_crown,
//! king_post, mobility, runaway, trade, king_alone, threatened, to_move,
//! then a man on each playing square of its own side's board, a1, c1, e1,
//! g1, b2, … h8 (`TunedWeights::named` leaves those at zero).

use crate::tuned::TunedWeights;

// american: 643896 positions, k 0.00783, mean squared error 0.05717 -> 0.05369
// (data: four `selfplay` runs, seeds 11 to 14, 2,000 games each for
// 11 and 12 and 1,500 for 13 and 14, on 20,000 nodes a move; fitted
// with `--prior 0.0002`)
pub(crate) const AMERICAN: TunedWeights = TunedWeights {
    mg: [
        347, 607, -6, 10, -19, 66, 67, 1, 38, -10, -78, -54, -2, -43, 16, 50, 27, -19, 21, 11, -11,
        -10, -17, 15, -7, -25, 11, -12, 6, 21, -11, -4, -6, -9, 13, 9, 3, -20, 11, 8, 3, 0, 0, 0,
        0,
    ],
    eg: [
        110, 1, 39, -18, 13, -22, -13, 8, -12, 7, 52, -15, 6, -9, 20, 9, 24, -18, -14, -10, -15,
        -1, -2, -14, -17, 8, -9, -10, 4, -8, 5, 4, -2, -7, 11, 15, -3, -13, 9, 13, 5, 0, 0, 0, 0,
    ],
    start_men: 12,
};

// american before the man squares, which the second version (V2) keeps:
// 66512 positions, k 0.00872, mean squared error 0.06527 -> 0.05529
pub(crate) const V2_AMERICAN: TunedWeights = TunedWeights::named(
    [317, 652, -8, 7, -10, 64, 96, 0, 67, -11, -67, -62, 3],
    [137, 31, 37, -18, 9, -35, -35, 7, -10, 5, 39, -19, 3],
    12,
);

// brazilian: 212095 positions, k 0.00586, mean squared error 0.05500 -> 0.05189
// (data: two `selfplay` runs, seeds 11 and 12, 2,000 games each on
// 20,000 nodes a move; fitted with `--prior 0.0002`)
pub(crate) const BRAZILIAN: TunedWeights = TunedWeights {
    mg: [
        326, 607, -6, -20, -2, 222, 192, 20, 279, 29, -163, -87, 16, -28, -11, 12, 37, -4, 23, 19,
        -15, -13, -23, 41, 8, -50, -8, 22, 37, 4, -21, -47, -13, -2, -7, 14, 34, -9, 6, 3, 9, 0, 0,
        0, 0,
    ],
    eg: [
        -2, -116, 55, 34, 7, 1, -31, -3, -65, -8, 333, 8, 0, -17, -6, -18, 11, 7, 1, 9, 10, 10, 11,
        -13, -5, 12, 9, 1, -14, 13, 4, -22, -11, 8, 1, 12, 4, -44, 8, 2, 12, 0, 0, 0, 0,
    ],
    start_men: 12,
};

// brazilian before the man squares, which the second version (V2) keeps:
// 38798 positions, k 0.00586, mean squared error 0.08393 -> 0.06090
pub(crate) const V2_BRAZILIAN: TunedWeights = TunedWeights::named(
    [304, 597, -24, 7, -7, 213, 188, 18, 275, 28, -158, -93, 15],
    [-2, -122, 68, 30, 5, 22, -36, 1, -59, -7, 342, 0, -2],
    12,
);

// russian: 413940 positions, k 0.00577, mean squared error 0.05695 -> 0.05344
// (data: four `selfplay` runs, seeds 11 to 14, 2,000 games each on
// 20,000 nodes a move; fitted with `--prior 0.0002`)
pub(crate) const RUSSIAN: TunedWeights = TunedWeights {
    mg: [
        382, 792, 12, -43, -4, 187, 74, 22, 390, 25, 130, -93, 12, -45, -3, 23, 29, 5, 21, 29, 30,
        -33, 4, 39, -3, -44, 11, 10, 2, 10, -26, -45, -17, 15, -10, 11, 22, -4, 6, 0, 9, 0, 0, 0,
        0,
    ],
    eg: [
        -4, -149, 34, 59, 5, 16, -3, 0, -91, -7, 272, -2, 1, -47, 17, 20, 23, -13, 25, 19, -22, -9,
        -12, -12, -2, 8, -8, 3, -12, -15, 9, -2, -7, 23, -1, 27, -15, -34, 17, -3, 17, 0, 0, 0, 0,
    ],
    start_men: 12,
};

// russian before the man squares, which the second version (V2) keeps:
// 151082 positions, k 0.00480, mean squared error 0.08306 -> 0.05701
pub(crate) const V2_RUSSIAN: TunedWeights = TunedWeights::named(
    [334, 796, 30, -37, 9, 175, 73, 6, 379, 25, 149, -95, 12],
    [1, -164, 63, 54, 0, 20, -18, 4, -78, -7, 297, 4, 0],
    12,
);

// spanish: 47085 positions, k 0.00227, mean squared error 0.06835 -> 0.05327
pub(crate) const SPANISH: TunedWeights = TunedWeights::named(
    [614, 1265, -2, 1, -49, 498, 112, 66, 612, 12, -383, -179, 20],
    [-12, -160, 73, 17, 25, -81, -18, -7, -117, -9, 629, -4, 4],
    12,
);

// italian: 65786 positions, k 0.00449, mean squared error 0.05481 -> 0.04958
pub(crate) const ITALIAN: TunedWeights = TunedWeights::named(
    [210, 458, 69, -4, -8, 139, 106, -5, 78, 10, -143, -74, 3],
    [69, 137, 22, 3, 19, -33, -35, 21, -23, -7, 106, -10, 6],
    12,
);

// thai: 45206 positions, k 0.00198, mean squared error 0.06404 -> 0.05279
pub(crate) const THAI: TunedWeights = TunedWeights::named(
    [
        540, 1224, 3, 11, -20, 428, -231, 49, 474, -2, -160, -123, 20,
    ],
    [-116, -331, 169, 47, 26, -83, 93, -8, -189, -5, 722, 4, 6],
    8,
);
