//! End-to-end tests, one binary: real servers (in-process and as
//! processes), real WebSocket clients, a real Redis, HAProxy and Chromium.

mod backup;
mod bad_input;
mod balancer;
mod browser;
mod correspondence;
mod draw_rules;
mod edge;
mod embedded;
mod failover;
mod faults;
mod leaderboards;
mod limits;
mod lobby;
mod migrate;
mod operations;
mod persistence;
mod protocol_v2;
mod reconnecting;
mod redis_checks;
mod redis_outage;
mod retention;
mod return_home;
mod sdk;
mod search_jobs;
mod solo;
mod space_rule_sets;
mod stakes;
mod startup;
mod typescript;
