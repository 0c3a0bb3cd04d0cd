//! Reading samples from text: one number per line (blank lines and `#` comments ignored), or a
//! JSON array of numbers. Parsing only; the caller does the I/O.

/// Why a text could not be read as samples. Lines and columns are 1-based.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// No numbers at all.
    #[error("no samples (the input is empty or holds only comments)")]
    Empty,
    /// A line (or JSON element) is not a finite number.
    #[error("line {line}: {reason}")]
    Invalid {
        /// 1-based line number.
        line: usize,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong, quoting the offending text.
        reason: String,
    },
}

/// Parses samples: a JSON array when the first non-blank character is `[`, else one number per
/// line. NaN and infinities are rejected, as is an input without numbers.
pub fn parse(text: &str) -> Result<Vec<f64>, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let values = if text.trim_start().starts_with('[') {
        parse_json(text)?
    } else {
        parse_lines(text)?
    };
    if values.is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(values)
}

fn parse_lines(text: &str) -> Result<Vec<f64>, ParseError> {
    let mut values = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let invalid = |reason: String| ParseError::Invalid {
            line: i + 1,
            column: Some(raw.find(content).map_or(1, |c| c + 1)),
            reason,
        };
        let x: f64 = content
            .parse()
            .map_err(|_| invalid(format!("{content:?} is not a number")))?;
        if !x.is_finite() {
            return Err(invalid(format!("{content:?} is not a finite number")));
        }
        values.push(x);
    }
    Ok(values)
}

fn parse_json(text: &str) -> Result<Vec<f64>, ParseError> {
    let values: Vec<f64> = serde_json::from_str(text).map_err(|e| ParseError::Invalid {
        line: e.line(),
        column: Some(e.column()),
        reason: format!("not a JSON array of numbers: {e}"),
    })?;
    // JSON has no NaN or infinity, but a huge literal could still overflow on some parsers.
    if let Some(i) = values.iter().position(|x| !x.is_finite()) {
        return Err(ParseError::Invalid {
            line: 1,
            column: None,
            reason: format!("element {i} is not a finite number"),
        });
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_comments_and_blanks() {
        let v = parse("# latency ms\n1.5\n\n  2 # warm\n3e2\n").unwrap();
        assert_eq!(v, vec![1.5, 2.0, 300.0]);
    }

    #[test]
    fn json_array() {
        assert_eq!(parse(" [1, 2.5, -3]\n").unwrap(), vec![1.0, 2.5, -3.0]);
        assert!(matches!(
            parse("[1, \"x\"]"),
            Err(ParseError::Invalid { line: 1, .. })
        ));
        assert_eq!(parse("[]"), Err(ParseError::Empty));
    }

    #[test]
    fn rejects_bad_lines_naming_them() {
        assert!(matches!(
            parse("1\n2\nabc\n"),
            Err(ParseError::Invalid { line: 3, .. })
        ));
        assert!(matches!(
            parse("1\nNaN\n"),
            Err(ParseError::Invalid { line: 2, .. })
        ));
        assert!(matches!(
            parse("inf\n"),
            Err(ParseError::Invalid { line: 1, .. })
        ));
        assert_eq!(parse("# nothing\n\n"), Err(ParseError::Empty));
    }
}
