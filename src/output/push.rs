//! The summary line of `memidx push`.

use std::io::Write;

use anyhow::Result;

use super::escape_controls;
use crate::remote::PushReport;

/// Prints what a push did, in one line.
pub fn print_push(out: &mut dyn Write, report: &PushReport) -> Result<()> {
    let target = escape_controls(&report.target);
    if report.up_to_date {
        writeln!(
            out,
            "{target} is up to date (generation {}, {} chunks)",
            report.generation, report.chunks
        )?;
        return Ok(());
    }
    let secs = report.send_time.as_secs_f64();
    let rate = if secs > 0.0 {
        format!(", {:.0} chunks/s", report.sent as f64 / secs)
    } else {
        String::new()
    };
    writeln!(
        out,
        "pushed generation {} to {target}: {} chunks, {} sent, {} deleted in {:.2} s (sending {secs:.2} s{rate})",
        report.generation,
        report.chunks,
        report.sent,
        report.deleted,
        report.elapsed.as_secs_f64()
    )?;
    Ok(())
}
