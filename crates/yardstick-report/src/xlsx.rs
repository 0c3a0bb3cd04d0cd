//! Excel (rust_xlsxwriter), like genai-bench's report: a `Summary` sheet (run fields, then the
//! headline table), a sheet per point with every statistic and its replicate values, and the
//! gate, latency, scaling, environment and telemetry tables when present.

use std::path::Path;

use rust_xlsxwriter::{Format, Workbook, Worksheet};

use crate::ReportError;
use crate::model::Report;
use crate::tables::{self, Cell, Table};

fn err(e: rust_xlsxwriter::XlsxError) -> ReportError {
    ReportError::render("xlsx", e)
}

/// A valid, unique sheet name: at most 31 characters, none of `[]:*?/\`.
fn sheet_name(raw: &str, used: &mut Vec<String>) -> String {
    let clean: String = raw
        .chars()
        .map(|c| if "[]:*?/\\".contains(c) { '_' } else { c })
        .collect();
    let clean = clean.trim_matches('\'').to_string();
    let mut name: String = clean.chars().take(31).collect();
    let mut k = 2;
    while used.iter().any(|u| u.eq_ignore_ascii_case(&name)) {
        let suffix = format!(" ({k})");
        name = clean.chars().take(31 - suffix.len()).collect::<String>() + &suffix;
        k += 1;
    }
    used.push(name.clone());
    name
}

/// Writes `t` at `row`, headers bold; returns the next free row.
fn write_table(ws: &mut Worksheet, t: &Table, row: u32, bold: &Format) -> Result<u32, ReportError> {
    ws.write_string_with_format(row, 0, &t.title, bold)
        .map_err(err)?;
    for (c, h) in t.headers.iter().enumerate() {
        ws.write_string_with_format(row + 1, c as u16, h, bold)
            .map_err(err)?;
    }
    for (i, r) in t.rows.iter().enumerate() {
        let y = row + 2 + i as u32;
        for (c, cell) in r.iter().enumerate() {
            match cell {
                Cell::Text(s) => ws.write_string(y, c as u16, s).map(drop),
                Cell::Num(x) => ws.write_number(y, c as u16, *x).map(drop),
                Cell::Empty => Ok(()),
            }
            .map_err(err)?;
        }
    }
    Ok(row + 2 + t.rows.len() as u32 + 1)
}

fn widths(ws: &mut Worksheet, t: &Table) -> Result<(), ReportError> {
    for c in 0..t.headers.len() {
        let w = t
            .rows
            .iter()
            .filter_map(|r| r.get(c))
            .map(|x| x.display().chars().count())
            .chain([t.headers[c].chars().count()])
            .max()
            .unwrap_or(8)
            .clamp(8, 60);
        ws.set_column_width(c as u16, w as f64 + 1.0).map_err(err)?;
    }
    Ok(())
}

/// Builds the workbook in memory.
pub fn workbook(report: &Report) -> Result<Workbook, ReportError> {
    let mut wb = Workbook::new();
    let bold = Format::new().set_bold();
    let r = &report.run;
    let mut used = Vec::new();

    let ws = wb.add_worksheet();
    ws.set_name(sheet_name("Summary", &mut used)).map_err(err)?;
    let run = tables::run_table(r);
    let summary = tables::summary(r);
    let next = write_table(ws, &run, 0, &bold)?;
    write_table(ws, &summary, next, &bold)?;
    widths(ws, &summary)?;

    let mut extra = Vec::new();
    extra.extend(tables::gate(report).map(|t| ("Gate", t)));
    extra.extend(tables::latency(r).map(|t| ("Latency", t)));
    extra.extend(tables::scaling(r).map(|t| ("Scaling", t)));
    for (name, t) in extra {
        let ws = wb.add_worksheet();
        ws.set_name(sheet_name(name, &mut used)).map_err(err)?;
        write_table(ws, &t, 0, &bold)?;
        widths(ws, &t)?;
    }
    for (i, p) in r.points.iter().enumerate() {
        let t = tables::point(i, p, r.level);
        let ws = wb.add_worksheet();
        ws.set_name(sheet_name(
            &format!("P{} {}", i + 1, p.load_label()),
            &mut used,
        ))
        .map_err(err)?;
        write_table(ws, &t, 0, &bold)?;
        widths(ws, &t)?;
    }
    let mut tail = vec![("Environment", tables::environment(&r.env))];
    tail.extend(tables::telemetry(r).map(|t| ("Telemetry", t)));
    for (name, t) in tail {
        let ws = wb.add_worksheet();
        ws.set_name(sheet_name(name, &mut used)).map_err(err)?;
        write_table(ws, &t, 0, &bold)?;
        widths(ws, &t)?;
    }
    Ok(wb)
}

/// The workbook as the bytes of an `.xlsx` file.
pub fn to_bytes(report: &Report) -> Result<Vec<u8>, ReportError> {
    workbook(report)?.save_to_buffer().map_err(err)
}

/// Writes the workbook to `path`.
pub fn write(report: &Report, path: &Path) -> Result<(), ReportError> {
    let bytes = to_bytes(report)?;
    std::fs::write(path, bytes).map_err(|e| ReportError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sheet_names_are_valid_and_unique() {
        let mut used = Vec::new();
        assert_eq!(sheet_name("P1 a/b:c", &mut used), "P1 a_b_c");
        let long = "x".repeat(40);
        let a = sheet_name(&long, &mut used);
        let b = sheet_name(&long, &mut used);
        assert_eq!(a.chars().count(), 31);
        assert_eq!(b.chars().count(), 31);
        assert!(b.ends_with(" (2)"));
    }
}
