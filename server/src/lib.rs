//! Jumpgate server: rules engine, lobbies and the network front end.
