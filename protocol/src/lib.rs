//! Jumpgate protocol v1: the wire messages and their encodings.
