//! A hand-written SVG of the latency percentile distributions (jumpgate per protocol,
//! and echo).
//!
//! The x axis is `log10(1 / (1 − p))`, so 90 %, 99 %, 99.9 % … sit at equal steps, as in
//! HdrHistogram plots; the y axis is the round trip on a log scale.

use std::fmt::Write;

use crate::report::{CurvePoint, Report};

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;
/// The x axis ends at 99.999 %.
const X_MAX: f64 = 5.0;

/// The plot of the latency phase: Jumpgate with each protocol, and echo.
pub fn latency_plot(report: &Report) -> String {
    const COLOURS: [&str; 2] = ["#e67e22", "#c0392b"];
    let names: Vec<String> = report
        .runs
        .iter()
        .map(|run| format!("jumpgate move, protocol {}", run.protocol))
        .collect();
    let series: Vec<(&str, &str, &[CurvePoint])> = report
        .runs
        .iter()
        .zip(&names)
        .enumerate()
        .map(|(i, (run, name))| {
            (
                name.as_str(),
                COLOURS[i % COLOURS.len()],
                run.jumpgate.latency.as_ref(),
            )
        })
        .chain([("echo", "#2471a3", report.echo.latency.as_ref())])
        .filter_map(|(name, colour, phase)| {
            phase
                .filter(|p| !p.curve.is_empty())
                .map(|p| (name, colour, p.curve.as_slice()))
        })
        .collect();

    let values = series
        .iter()
        .flat_map(|(_, _, curve)| curve.iter().map(|p| p.latency_us.max(1) as f64));
    let (lo, hi) = values.fold((f64::MAX, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let lo = if lo == f64::MAX { 1.0 } else { lo };
    let (y_lo, y_hi) = (
        lo.log10().floor(),
        hi.log10().ceil().max(lo.log10().floor() + 1.0),
    );

    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x_of = |percentile: f64| {
        let p = (percentile / 100.0).min(1.0 - 10f64.powf(-X_MAX));
        let x = (1.0 / (1.0 - p)).log10();
        LEFT + x / X_MAX * plot_w
    };
    let y_of = |us: f64| {
        let y = (us.max(1.0).log10() - y_lo) / (y_hi - y_lo);
        TOP + plot_h - y * plot_h
    };

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">Round trip by percentile ({} games, {} moves/s open loop, {} s)</text>"#,
        WIDTH / 2.0,
        report.config.games,
        report.config.rate,
        report.config.duration_s
    );
    // Grid and labels: x at 0, 90, 99, 99.9 … %, y at every decade.
    for (i, label) in ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
        .iter()
        .enumerate()
    {
        let x = LEFT + i as f64 / X_MAX * plot_w;
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 18.0
        );
    }
    let mut decade = y_lo;
    while decade <= y_hi {
        let y = y_of(10f64.powf(decade));
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            format_us(10f64.powf(decade))
        );
        decade += 1.0;
    }
    let _ = writeln!(
        svg,
        r#"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">percentile</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 14.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">round trip (log scale)</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    for (i, (name, colour, curve)) in series.iter().enumerate() {
        let points: Vec<String> = curve
            .iter()
            .map(|p| format!("{:.1},{:.1}", x_of(p.percentile), y_of(p.latency_us as f64)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        let ly = TOP + 16.0 + i as f64 * 18.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{name}</text>"#,
            LEFT + 12.0,
            LEFT + 36.0,
            LEFT + 42.0,
            ly + 4.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn format_us(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{} s", us / 1_000_000.0)
    } else if us >= 1000.0 {
        format!("{} ms", us / 1000.0)
    } else {
        format!("{us} µs")
    }
}
