//! An incremental Server-Sent Events parser (the WHATWG event-stream grammar), fed raw bytes as
//! they arrive: lines split across reads, `\n`, `\r\n` and `\r` endings, comment and
//! keep-alive lines, multi-line `data:` fields. Only `data` matters to the OpenAI protocol;
//! `event`, `id` and `retry` fields are accepted and ignored.

/// Parser state carried between reads.
#[derive(Debug, Default)]
pub struct SseParser {
    /// A line not yet terminated.
    partial: Vec<u8>,
    /// The `data` of the event being assembled (lines joined by `\n`).
    data: Vec<u8>,
    has_data: bool,
    /// The previous read ended in `\r`: a `\n` starting the next read belongs to it.
    pending_cr: bool,
}

impl SseParser {
    /// A fresh parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one read; calls `on_event` with the data of every event it completes.
    pub fn feed(&mut self, mut chunk: &[u8], mut on_event: impl FnMut(&[u8])) {
        if self.pending_cr {
            self.pending_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(pos) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            let line = &chunk[..pos];
            let cr = chunk[pos] == b'\r';
            chunk = &chunk[pos + 1..];
            if cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    None => self.pending_cr = true,
                    _ => {}
                }
            }
            if self.partial.is_empty() {
                self.line(line, &mut on_event);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, &mut on_event);
                whole.clear();
                self.partial = whole;
            }
        }
        self.partial.extend_from_slice(chunk);
    }

    /// Ends the stream: an event left without its blank line is dispatched (lenient, since
    /// some servers close right after the last `data:` line).
    pub fn finish(&mut self, mut on_event: impl FnMut(&[u8])) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, &mut on_event);
        }
        self.dispatch(&mut on_event);
    }

    fn line(&mut self, line: &[u8], on_event: &mut impl FnMut(&[u8])) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            return; // comment / keep-alive
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(&[u8])) {
        if self.has_data {
            on_event(&self.data);
            self.data.clear();
            self.has_data = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], cuts: &[usize]) -> Vec<String> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut prev = 0;
        for &c in cuts.iter().chain(std::iter::once(&input.len())) {
            p.feed(&input[prev..c], |d| {
                out.push(String::from_utf8_lossy(d).into_owned())
            });
            prev = c;
        }
        p.finish(|d| out.push(String::from_utf8_lossy(d).into_owned()));
        out
    }

    #[test]
    fn every_split_of_a_nasty_stream_parses_the_same() {
        let input =
            b": keep-alive\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: x\nid: 3\ndata:{\"b\":2}\n\n\
data: line1\ndata: line2\n\n:comment\n\ndata: [DONE]\r\rdata: tail";
        let want = vec!["{\"a\":1}", "{\"b\":2}", "line1\nline2", "[DONE]", "tail"];
        assert_eq!(parse_in_pieces(input, &[]), want);
        for i in 0..input.len() {
            assert_eq!(parse_in_pieces(input, &[i]), want, "split at {i}");
            for j in i..input.len() {
                assert_eq!(parse_in_pieces(input, &[i, j]), want, "split at {i},{j}");
            }
        }
    }

    #[test]
    fn byte_at_a_time() {
        let input = b"data: {\"x\":\"y\"}\r\n\r\n";
        let cuts: Vec<usize> = (1..input.len()).collect();
        assert_eq!(parse_in_pieces(input, &cuts), vec!["{\"x\":\"y\"}"]);
    }
}
