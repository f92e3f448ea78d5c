//! The Executive's evaluation weights per rule set, as `jumpgate tune`
//! printed them (see the bots README for the data and the commands); each
//! fit beat the first Executive on equal nodes before it was kept.
//!
//! Feature order: men, kings, back_rank, centre, tempo, near_crown,
//! king_post, mobility, runaway, trade, king_alone, threatened, to_move.

use crate::tuned::TunedWeights;

// american: 66512 positions, k 0.00872, mean squared error 0.06527 -> 0.05529
pub(crate) const AMERICAN: TunedWeights = TunedWeights::named(
    [317, 652, -8, 7, -10, 64, 96, 0, 67, -11, -67, -62, 3],
    [137, 31, 37, -18, 9, -35, -35, 7, -10, 5, 39, -19, 3],
    12,
);

// brazilian: 38798 positions, k 0.00586, mean squared error 0.08393 -> 0.06090
pub(crate) const BRAZILIAN: TunedWeights = TunedWeights::named(
    [304, 597, -24, 7, -7, 213, 188, 18, 275, 28, -158, -93, 15],
    [-2, -122, 68, 30, 5, 22, -36, 1, -59, -7, 342, 0, -2],
    12,
);

// russian: 151082 positions, k 0.00480, mean squared error 0.08306 -> 0.05701
pub(crate) const RUSSIAN: TunedWeights = TunedWeights::named(
    [334, 796, 30, -37, 9, 175, 73, 6, 379, 25, 149, -95, 12],
    [1, -164, 63, 54, 0, 20, -18, 4, -78, -7, 297, 4, 0],
    12,
);

// russian, the second version (V2) keeps these: 151082 positions, k 0.00480, mean squared error 0.08306 -> 0.05701
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
