//! CSV: one file per table (`summary.csv`, `latency.csv`, `point-01.csv`, ...), RFC 4180
//! quoting, numbers at full precision.

use std::path::{Path, PathBuf};

use crate::ReportError;
use crate::tables::{Cell, Table};

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One table as CSV text.
pub fn table_csv(t: &Table) -> String {
    let mut out = String::new();
    let line = |cells: Vec<String>| cells.join(",") + "\r\n";
    out.push_str(&line(t.headers.iter().map(|h| field(h)).collect()));
    for r in &t.rows {
        out.push_str(&line(
            r.iter()
                .map(|c| match c {
                    Cell::Text(s) => field(s),
                    Cell::Num(x) => x.to_string(),
                    Cell::Empty => String::new(),
                })
                .collect(),
        ));
    }
    out
}

/// The file a table is written to: `NAME.csv`.
pub fn file_name(t: &Table) -> String {
    format!("{}.csv", t.name)
}

/// Writes every table into `dir` (created if missing); returns the files written.
pub fn write_dir(tables: &[Table], dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|e| ReportError::io(dir, e))?;
    let mut out = Vec::new();
    for t in tables {
        let path = dir.join(file_name(t));
        std::fs::write(&path, table_csv(t)).map_err(|e| ReportError::io(&path, e))?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_fields_and_keeps_full_precision() {
        let t = Table {
            name: "t".into(),
            level: None,
            title: "T".into(),
            headers: vec!["point".into(), "value".into(), "ci".into()],
            rows: vec![vec![
                Cell::Text("serve/D(1,1), \"x\"".into()),
                Cell::Num(0.1 + 0.2),
                Cell::Empty,
            ]],
            units: Vec::new(),
        };
        assert_eq!(
            table_csv(&t),
            "point,value,ci\r\n\"serve/D(1,1), \"\"x\"\"\",0.30000000000000004,\r\n"
        );
    }
}
