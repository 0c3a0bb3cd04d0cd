//! The request plan: what request number `i` of a run sends, a pure function of the seed and
//! `i`, so a plan is reproducible and can be split across workers without coordination.
//!
//! Prompts come from a deterministic synthetic corpus of common English words. Each word is one
//! token for `yardstick sim` (which counts whitespace-separated words) and, with its leading
//! space, one token for the common BPE vocabularies too, so prompts land on (or very near) the
//! scenario's counts. The server's `usage` is recorded with every request, so any difference
//! shows in the results.

use bytes::Bytes;
use yardstick_spec::scenario::Scenario;

use crate::openai::{self, Api, BodyOptions};
use crate::rng::Rng;

/// Common words that are single tokens in the usual BPE vocabularies.
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "it", "by",
    "at", "from", "his", "her", "an", "are", "be", "this", "which", "or", "had", "not", "but",
    "have", "one", "all", "they", "their", "were", "has", "been", "new", "more", "when", "there",
    "who", "will", "would", "can", "time", "first", "after", "two", "other", "into", "some",
    "year", "out", "up", "so", "them", "people", "than", "only", "over", "most", "she", "also",
    "may", "world", "city", "water", "house", "light", "river", "stone", "green", "small", "great",
    "old", "long", "day", "night", "hand", "road", "tree", "book", "land", "sea", "sun", "king",
    "war", "home", "life", "work", "school", "child", "name", "word", "story", "man", "woman",
    "place", "part", "way", "back", "down", "good", "high", "last", "young", "black", "white",
    "red", "blue", "open", "early", "under", "between", "never", "again", "still", "since",
    "while", "where", "just", "each", "many", "much", "very", "well", "what", "three", "four",
    "five", "next", "left", "right", "north", "south", "east", "west", "town", "field",
];

/// Why a plan cannot be made.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    /// An embeddings scenario with a generation API, or the reverse.
    #[error("scenario `{scenario}` does not fit the `{api}` API: {why}")]
    Mismatch {
        /// The scenario as written.
        scenario: String,
        /// The API name.
        api: &'static str,
        /// What to change.
        why: &'static str,
    },
}

/// Token counts of one planned request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lengths {
    /// Prompt tokens.
    pub input: u64,
    /// Output tokens to force, if the scenario forces them.
    pub output: Option<u64>,
}

/// Draws request `i`'s token counts from `scenario`.
pub fn sample_lengths(scenario: &Scenario, rng: &mut Rng) -> Lengths {
    let normal = |rng: &mut Rng, mu: f64, sd: f64| (mu + sd * rng.normal()).round().max(1.0) as u64;
    match scenario {
        Scenario::Deterministic { input, output } => Lengths {
            input: *input,
            output: Some(*output),
        },
        Scenario::Normal {
            input_mean,
            input_sd,
            output_mean,
            output_sd,
        } => {
            let input = normal(rng, *input_mean, *input_sd);
            let output = normal(rng, *output_mean, *output_sd);
            Lengths {
                input,
                output: Some(output),
            }
        }
        Scenario::Uniform { input, output } => {
            let i = rng.range(input.0, input.1);
            let o = output.map(|(lo, hi)| rng.range(lo, hi));
            Lengths {
                input: i,
                output: o,
            }
        }
        Scenario::Embedding { tokens } => Lengths {
            input: *tokens,
            output: None,
        },
    }
}

/// A prompt of exactly `n` corpus words.
pub fn synthetic_prompt(n: u64, rng: &mut Rng) -> String {
    let mut s = String::with_capacity(n as usize * 6);
    for k in 0..n {
        if k > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[(rng.next_u64() % WORDS.len() as u64) as usize]);
    }
    s
}

/// One request of the plan, ready to send.
#[derive(Debug, Clone)]
pub struct PlannedRequest {
    /// Index in the run's plan.
    pub index: u64,
    /// Token counts asked for.
    pub lengths: Lengths,
    /// The JSON body.
    pub body: Bytes,
}

/// Builds requests of a run from its seed.
#[derive(Debug, Clone)]
pub struct Planner {
    scenario: Scenario,
    api: Api,
    model: String,
    seed: u64,
    opts: BodyOptions,
}

impl Planner {
    /// A planner; checks that the scenario fits the API.
    pub fn new(
        scenario: Scenario,
        scenario_text: &str,
        api: Api,
        model: &str,
        seed: u64,
        opts: BodyOptions,
    ) -> Result<Self, PlanError> {
        let api_name = match api {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Embeddings => "embeddings",
        };
        if scenario.is_embedding() != (api == Api::Embeddings) {
            return Err(PlanError::Mismatch {
                scenario: scenario_text.to_string(),
                api: api_name,
                why: if api == Api::Embeddings {
                    "the embeddings API takes E(tokens)"
                } else {
                    "E(tokens) needs --api embeddings"
                },
            });
        }
        Ok(Planner {
            scenario,
            api,
            model: model.to_string(),
            seed,
            opts,
        })
    }

    /// Request `i` of the plan.
    pub fn request(&self, i: u64) -> PlannedRequest {
        let mut rng = Rng::new(self.seed, i);
        let lengths = sample_lengths(&self.scenario, &mut rng);
        let prompt = synthetic_prompt(lengths.input, &mut rng);
        let body = openai::request_body(self.api, &self.model, &prompt, lengths.output, &self.opts);
        PlannedRequest {
            index: i,
            lengths,
            body: Bytes::from(body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_reproducible_and_exact() {
        let sc: Scenario = "N(100,20)/(50,10)".parse().unwrap();
        let opts = BodyOptions {
            stream: true,
            force_output: true,
        };
        let p = Planner::new(sc.clone(), "N", Api::Chat, "m", 9, opts.clone()).unwrap();
        let a = p.request(17);
        let b = p.request(17);
        assert_eq!(a.body, b.body);
        let v: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        let words = v["messages"][0]["content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count();
        assert_eq!(words as u64, a.lengths.input);
        assert_eq!(v["max_tokens"].as_u64(), a.lengths.output);
        let lens: Vec<u64> = (0..2000).map(|i| p.request(i).lengths.input).collect();
        let mean = lens.iter().sum::<u64>() as f64 / lens.len() as f64;
        assert!((mean - 100.0).abs() < 2.0, "{mean}");
        let d: Scenario = "D(7,3)".parse().unwrap();
        let p = Planner::new(d, "D(7,3)", Api::Completions, "m", 1, opts.clone()).unwrap();
        assert_eq!(
            p.request(0).lengths,
            Lengths {
                input: 7,
                output: Some(3)
            }
        );
        let e: Scenario = "E(5)".parse().unwrap();
        assert!(Planner::new(e, "E(5)", Api::Chat, "m", 1, opts).is_err());
    }
}
