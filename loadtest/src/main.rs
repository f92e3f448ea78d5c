//! Jumpgate load tester.
fn main() {}
