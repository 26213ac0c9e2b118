//! Integration tests, one binary per theme (one link each, not one per file). compare, report, A/B and grids: results side by side, level tables, the HTML report in a real browser, the published comparisons' tables.

#[path = "../common/mod.rs"]
mod common;
#[path = "../compare.rs"]
mod compare;
#[path = "../grid.rs"]
mod grid;
#[path = "../grid_shapes.rs"]
mod grid_shapes;
#[path = "../published.rs"]
mod published;
