//! The `jumpgate` binary.
fn main() {}
