//! Integration tests, one binary per theme (one link each, not one per file). compare, report and A/B: results side by side, the HTML report in a real browser.

#[path = "../common/mod.rs"]
mod common;
#[path = "../compare.rs"]
mod compare;
