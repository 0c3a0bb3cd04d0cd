//! Running tasks under [`Decoding`]: repeats, per-item records.

use crate::EvalError;
use crate::backend::HttpBackend;
use crate::decoding::Decoding;
use crate::report::{EvalReport, ItemRecord, TaskResult};
use crate::task::Task;

/// How many times and how fast items run, and the confidence of the intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunOptions {
    /// Runs per item (at least 1).
    pub repeat: usize,
    /// Confidence level of the Wilson intervals, in (0, 1).
    pub confidence: f64,
    /// Requests in flight at once (at least 1). Records keep file order whatever the value.
    pub concurrency: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            repeat: 1,
            confidence: 0.95,
            concurrency: 1,
        }
    }
}

/// Runs every item of every task `repeat` times with up to `concurrency` requests in flight and
/// summarises at `confidence`. Request failures are recorded as incorrect items with an error.
/// Must run inside a tokio runtime.
pub async fn run_eval(
    backend: &HttpBackend,
    decoding: &Decoding,
    tasks: &[Task],
    opts: RunOptions,
) -> Result<EvalReport, EvalError> {
    let confidence = opts.confidence;
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(EvalError::Config(format!(
            "confidence must be in (0, 1), got {confidence}"
        )));
    }
    let repeat = opts.repeat.max(1);
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1)));
    let started = std::time::Instant::now();
    // Repeats run as passes: every item once in file order, then every item again, so no
    // request follows an identical one (a server's prefix cache then sees the same state on
    // every pass). A semaphore bounds how many are in flight.
    let bodies: Vec<Vec<u8>> = tasks
        .iter()
        .flat_map(|t| t.items.iter())
        .map(|item| decoding.body(backend.api(), item))
        .collect();
    let mut handles = Vec::with_capacity(bodies.len() * repeat);
    for _ in 0..repeat {
        for body in &bodies {
            let (b, body, sem) = (backend.clone(), body.clone(), sem.clone());
            handles.push(tokio::spawn(async move {
                let _permit = sem.acquire_owned().await;
                b.generate(body).await
            }));
        }
    }
    // Outcome of item `i` (flat index), repeat `r` at `r * items + i`.
    let mut grid = Vec::with_capacity(handles.len());
    for h in handles {
        grid.push(Some(
            h.await
                .unwrap_or_else(|e| Err(crate::backend::GenerateError::Task(e))),
        ));
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let n_items = bodies.len();
    let mut flat = 0usize;
    let mut results = Vec::new();
    for task in tasks {
        let mut records = Vec::new();
        for item in &task.items {
            let i = flat;
            flat += 1;
            for r in 0..repeat {
                let outcome = grid[r * n_items + i]
                    .take()
                    .expect("one outcome per request");
                let rec = match outcome {
                    Ok(g) => {
                        let s = item.score(&g.text);
                        ItemRecord {
                            task: task.name.clone(),
                            id: item.id.clone(),
                            repeat: r,
                            output: Some(g.text),
                            correct: s.correct,
                            score: s.score,
                            latency_ms: Some(g.latency_ms),
                            output_tokens: g.output_tokens,
                            error: None,
                            bleu_stats: None,
                        }
                    }
                    Err(e) => ItemRecord {
                        task: task.name.clone(),
                        id: item.id.clone(),
                        repeat: r,
                        output: None,
                        correct: false,
                        score: 0.0,
                        latency_ms: None,
                        output_tokens: None,
                        error: Some(e.to_string()),
                        bleu_stats: None,
                    },
                };
                records.push(rec);
            }
        }
        // The graded mean is reported under the scorer's name when every item shares it.
        let scorer = task
            .items
            .first()
            .map(|i| i.scorer.name())
            .filter(|n| task.items.iter().all(|i| i.scorer.name() == *n));
        let bleu = (scorer == Some("bleu")).then(|| {
            // Segment statistics on every record (for paired bootstrap comparisons); corpus
            // BLEU over the first repeat, failed requests as empty outputs.
            for rec in records.iter_mut() {
                if let Some(item) = task.items.iter().find(|i| i.id == rec.id) {
                    rec.bleu_stats = Some(crate::bleu::stats(
                        rec.output.as_deref().unwrap_or(""),
                        &item.references,
                    ));
                }
            }
            let segs: Vec<_> = records
                .iter()
                .filter(|r| r.repeat == 0)
                .filter_map(|r| r.bleu_stats)
                .collect();
            crate::bleu::corpus(&segs)
        });
        let mut result = TaskResult::summarise(&task.name, records, repeat, confidence, scorer)?;
        result.bleu = bleu;
        results.push(result);
    }
    let requests = tasks.iter().map(|t| t.items.len()).sum::<usize>() * repeat;
    Ok(EvalReport {
        elapsed_s,
        requests_per_s: if elapsed_s > 0.0 {
            requests as f64 / elapsed_s
        } else {
            0.0
        },
        concurrency: opts.concurrency.max(1),
        model: decoding.model.clone(),
        api: backend.api(),
        decoding: decoding.clone(),
        repeat,
        confidence,
        tasks: results,
        perplexity: None,
    })
}
