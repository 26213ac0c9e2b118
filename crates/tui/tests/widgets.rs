//! Widgets rendered into a bare `Buffer`, checked cell by cell.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use throng_core::Percentiles;
use throng_tui::widgets::{
    ContainersPanel, DatabasesPanel, ErrorsPanel, Footer, LabelErrorsPanel, LabelTable,
    LatencyPanel, StatusPanel,
};
use throng_tui::{format, render, Board, View, ViewState};

fn text(buf: &Buffer) -> Vec<String> {
    let area = buf.area;
    (area.top()..area.bottom())
        .map(|y| {
            (area.left()..area.right())
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect()
}

fn draw(w: impl Widget, width: u16, height: u16) -> Vec<String> {
    let mut buf = Buffer::empty(Rect::new(0, 0, width, height));
    w.render(buf.area, &mut buf);
    text(&buf)
}

#[test]
fn latency_panel_shows_the_snapshot_percentiles() {
    let snap = common::closed();
    let lines = draw(
        LatencyPanel { snap: &snap },
        32,
        LatencyPanel::height(&snap),
    );
    let run = Percentiles::of(&snap.total.latency);
    let last = Percentiles::of(&snap.last.latency);
    let p99 = lines
        .iter()
        .find(|l| l.contains("p99 "))
        .expect("a p99 row");
    assert!(p99.contains(&format::ms(run.p99)), "{p99}");
    assert!(p99.contains(&format::ms(last.p99)), "{p99}");
    let max = lines.iter().find(|l| l.contains("max")).expect("a max row");
    assert!(max.contains(&format::ms(run.max)), "{max}");
    // Closed loop: no service-time columns, no lag line.
    assert!(!lines.concat().contains("svc"));
    assert!(!lines.concat().contains("lag"));
}

#[test]
fn latency_panel_open_loop_adds_service_time_and_lag() {
    let snap = common::open();
    let lines = draw(
        LatencyPanel { snap: &snap },
        48,
        LatencyPanel::height(&snap),
    );
    let all = lines.concat();
    assert!(all.contains("svc run"), "{all}");
    let svc = Percentiles::of(&snap.total.service);
    let p50 = lines.iter().find(|l| l.contains("p50")).expect("a p50 row");
    assert!(
        p50.trim_end_matches('│')
            .trim_end()
            .ends_with(&format::ms(svc.p50)),
        "{p50}"
    );
    let lag = lines
        .iter()
        .find(|l| l.contains("lag"))
        .expect("a lag line");
    assert!(
        lag.contains("late 48") && lag.contains("dropped 3"),
        "{lag}"
    );
}

#[test]
fn label_table_has_every_label_and_a_total_row() {
    let snap = common::closed();
    let lines = draw(
        LabelTable {
            snap: &snap,
            scroll: 0,
        },
        130,
        8,
    );
    let row = |name: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("│{name} ")))
            .unwrap_or_else(|| panic!("no {name} row in {lines:#?}"))
            .clone()
    };
    assert!(row("GET /").contains(" 18000 "));
    assert!(row("POST /orders").contains(" 6000 "));
    // The group row is marked, and not added into TOTAL.
    assert!(row("> order flow").contains(" 6000 "));
    let total = row("TOTAL");
    assert!(total.contains(" 24000 "), "{total}");
    assert!(total.contains("0.18%"), "{total}");
    // Wide enough for all of JMeter's columns.
    assert!(lines[1].contains("Received KB/s") && lines[1].contains("Sent KB/s"));
    // Narrow: the compact columns, still with TOTAL.
    let narrow = draw(
        LabelTable {
            snap: &snap,
            scroll: 0,
        },
        78,
        8,
    );
    assert!(!narrow[1].contains("Sent KB/s"), "{}", narrow[1]);
    assert!(narrow.iter().any(|l| l.starts_with("│TOTAL")));
}

#[test]
fn label_table_scrolls_but_keeps_total() {
    let snap = common::closed();
    // Room for one label row: the second label after scrolling by one, and TOTAL.
    let lines = draw(
        LabelTable {
            snap: &snap,
            scroll: 1,
        },
        100,
        5,
    );
    let all = lines.concat();
    assert!(all.contains("POST /orders"), "{all}");
    assert!(!all.contains("GET /"), "{all}");
    assert!(all.contains("TOTAL"), "{all}");
    assert!(all.contains("2-2 of 3"), "{all}");
    // Scrolling past the end shows the last rows.
    let lines = draw(
        LabelTable {
            snap: &snap,
            scroll: 99,
        },
        100,
        5,
    );
    assert!(lines.concat().contains("3-3 of 3"), "{lines:#?}");
}

#[test]
fn errors_and_status_codes() {
    let snap = common::closed();
    let errors = draw(ErrorsPanel { snap: &snap }, 80, 6).concat();
    assert!(errors.contains("status"), "{errors}");
    assert!(errors.contains("503 Service Unavailable"), "{errors}");
    assert!(errors.contains("Errors: 42"), "{errors}");
    let status = draw(StatusPanel { snap: &snap }, 50, 4);
    assert!(
        status[1].contains("200") && status[1].contains("23,958") && status[1].contains("99.87%")
    );
    assert!(status[2].contains("503") && status[2].contains("0.13%"));
}

#[test]
fn containers_panel_shows_cpu_memory_and_network_rates() {
    let snap = common::with_containers();
    let lines = draw(
        ContainersPanel {
            containers: &snap.containers,
        },
        110,
        ContainersPanel::height(&snap.containers),
    );
    let java = lines
        .iter()
        .find(|l| l.contains("bank-java"))
        .expect("a row");
    let last = snap.containers[1].samples.last().expect("samples");
    assert!(
        java.contains(&format!("{:.1}%", last.cpu_percent)),
        "{java}"
    );
    assert!(java.contains("512 MiB"), "{java}");
    // rx grows by 1.5 MB and tx by 4 MB per second in the fixture.
    assert!(
        java.contains("1.4 MiB") && java.contains("3.8 MiB"),
        "{java}"
    );
}

#[test]
fn databases_panel_shows_the_last_seconds_rates_and_the_loads_total() {
    let snap = common::with_database();
    let lines = draw(
        DatabasesPanel {
            databases: &snap.databases,
        },
        110,
        DatabasesPanel::height(&snap.databases),
    );
    let row = lines
        .iter()
        .find(|l| l.contains("mysql://bench:***@"))
        .expect("a row");
    // 390 commits and 10 rollbacks a second; 6,400 statements; 4,000 transactions since the
    // last idle reading.
    assert!(row.contains(" 400 "), "{row}");
    assert!(row.contains("6,400"), "{row}");
    assert!(row.contains("4,000│"), "{row}");
    // On the overview, below the rest, when databases are read; not otherwise.
    let mut buf = Buffer::empty(Rect::new(0, 0, 120, 40));
    render(buf.area, &mut buf, &snap, &ViewState::default());
    assert!(text(&buf)
        .concat()
        .contains("Databases (their own counters)"));
    let snap = common::closed();
    render(buf.area, &mut buf, &snap, &ViewState::default());
    assert!(!text(&buf).concat().contains("Databases"));
}

#[test]
fn no_containers_no_panel_and_no_tab() {
    let snap = common::closed();
    let mut buf = Buffer::empty(Rect::new(0, 0, 120, 40));
    render(buf.area, &mut buf, &snap, &ViewState::default());
    let all = text(&buf).concat();
    assert!(!all.contains("Containers"), "{all}");
    let snap = common::with_containers();
    render(buf.area, &mut buf, &snap, &ViewState::default());
    let all = text(&buf).concat();
    assert!(all.contains("4 Containers") && all.contains("bank-go"));
}

#[test]
fn every_size_renders_without_panicking() {
    let snaps = [
        common::closed(),
        common::open(),
        common::with_containers(),
        common::with_database(),
    ];
    for snap in &snaps {
        for w in [1u16, 20, 71, 72, 80, 100, 200] {
            for h in [1u16, 5, 19, 20, 24, 40, 80] {
                for v in throng_tui::View::ALL {
                    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
                    let state = ViewState {
                        view: v,
                        scroll: 7,
                        ..ViewState::default()
                    };
                    render(buf.area, &mut buf, snap, &state);
                    let all = text(&buf).concat();
                    if w >= throng_tui::MIN_WIDTH && h >= throng_tui::MIN_HEIGHT {
                        assert!(all.contains("throng"), "{w}x{h} {v:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn footer_lists_the_number_keys_of_the_views_the_run_has() {
    let state = ViewState::default();
    let without = common::closed();
    let line = draw(
        Footer {
            snap: &without,
            board: &Board::default(),
            state: &state,
        },
        100,
        1,
    )
    .concat();
    // Overview, labels, errors, and the flows (the fixture's run has one).
    assert_eq!(View::available(&without, &Board::default()).len(), 4);
    assert!(line.contains(" Tab 1-4 "), "{line}");
    let with = common::with_containers();
    let line = draw(
        Footer {
            snap: &with,
            board: &Board::default(),
            state: &state,
        },
        100,
        1,
    )
    .concat();
    assert!(line.contains(" Tab 1-5 "), "{line}");
}

/// The buffer column just after each of the last `n` cells of a row (numbers hold no spaces, so
/// the trailing cells are the numeric columns however the label looks).
fn last_cell_ends(buf: &Buffer, y: u16, n: usize) -> Vec<u16> {
    let blank = |x: u16| matches!(buf[(x, y)].symbol(), " " | "│" | "");
    let mut ends = Vec::new();
    for x in buf.area.left()..buf.area.right().saturating_sub(1) {
        if !blank(x) && blank(x + 1) {
            ends.push(x + 1);
        }
    }
    ends.split_off(ends.len().saturating_sub(n))
}

#[test]
fn label_table_aligns_wide_labels_by_display_width() {
    let mut snap = common::closed();
    // 查询余额 is 4 characters but 8 columns; the longest label is 13 characters but 20 columns
    // (the emoji and each Chinese character take two).
    snap.labels[0].label = "查询余额".into();
    snap.labels[1].label = "POST 🚀 查询余额明细".into();
    let mut buf = Buffer::empty(Rect::new(0, 0, 140, 8));
    LabelTable {
        snap: &snap,
        scroll: 0,
    }
    .render(buf.area, &mut buf);
    let lines = text(&buf);
    // Rows 2 to 5: the three labels and TOTAL, each with JMeter's 12 numeric columns.
    let ends: Vec<Vec<u16>> = (2..6).map(|y| last_cell_ends(&buf, y, 12)).collect();
    for (y, e) in ends.iter().enumerate() {
        assert_eq!(e.len(), 12, "{lines:#?}");
        assert_eq!(e, &ends[0], "row {} out of line: {lines:#?}", y + 2);
    }
    // The widest label is shown whole, and its column is as wide as it in terminal columns:
    // border, 20 columns, a space, then Samples right-aligned in 10.
    let row = &lines[3];
    assert_eq!(buf[(1 + 5, 3)].symbol(), "🚀", "{row}");
    assert_eq!(buf[(1 + 16, 3)].symbol(), "明", "{row}");
    assert_eq!(buf[(1 + 18, 3)].symbol(), "细", "{row}");
    assert_eq!(ends[0][0], 1 + 20 + 1 + 10, "{lines:#?}");
}

#[test]
fn errors_by_label_show_which_step_failed_how_when_more_than_one_did() {
    use throng_core::ErrorClass;
    let mut snap = common::closed();
    snap.labels[0].classes[ErrorClass::Timeout.index()] = 12;
    snap.labels[1].classes[ErrorClass::Status.index()] = 30;
    // The flow's row repeats its steps' failures: not a row of its own here.
    snap.labels[2].classes[ErrorClass::Status.index()] = 30;
    let panel = LabelErrorsPanel { snap: &snap };
    assert_eq!(panel.height(), 2 + 3);
    let lines = draw(panel, 60, 5);
    assert!(lines[0].contains("Errors by label"), "{lines:#?}");
    let words = |line: &str| -> Vec<String> {
        line.trim_matches(|c: char| c == '│' || c.is_whitespace())
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        words(&lines[1]),
        ["label", "timeout", "status"],
        "{lines:#?}"
    );
    assert_eq!(words(&lines[2]), ["GET", "/", "12", "0"], "{lines:#?}");
    assert_eq!(
        words(&lines[3]),
        ["POST", "/orders", "0", "30"],
        "{lines:#?}"
    );
    assert!(!lines.concat().contains("order flow"), "{lines:#?}");

    // One failing step: the run's errors say it all, and the panel takes no room.
    snap.labels[0].classes = [0; ErrorClass::ALL.len()];
    assert_eq!(LabelErrorsPanel { snap: &snap }.height(), 0);
}
