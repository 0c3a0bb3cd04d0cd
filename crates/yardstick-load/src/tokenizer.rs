//! Local token counts with a Hugging Face `tokenizer.json` (cargo feature `tokenizer`).
//!
//! Used to build prompts of exact token counts for a real model's vocabulary and to count
//! output tokens when the server reports no usage (or to check its usage).

use std::path::Path;

use crate::rng::Rng;

/// Why a tokenizer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// This build has no tokenizer support.
    #[error("this build has no tokenizer support (build with --features yardstick-load/tokenizer)")]
    NotBuilt,
    /// The file could not be loaded.
    #[error("cannot load tokenizer {path}: {why}")]
    Load {
        /// The file.
        path: String,
        /// The cause.
        why: String,
    },
}

/// A loaded `tokenizer.json`.
pub struct LocalTokenizer {
    #[cfg(feature = "tokenizer")]
    inner: tokenizers::Tokenizer,
}

impl std::fmt::Debug for LocalTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalTokenizer")
    }
}

impl LocalTokenizer {
    /// Loads `path`.
    pub fn from_file(path: &Path) -> Result<Self, TokenizerError> {
        #[cfg(feature = "tokenizer")]
        {
            let inner =
                tokenizers::Tokenizer::from_file(path).map_err(|e| TokenizerError::Load {
                    path: path.display().to_string(),
                    why: e.to_string(),
                })?;
            Ok(LocalTokenizer { inner })
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            let _ = path;
            Err(TokenizerError::NotBuilt)
        }
    }

    /// Tokens in `text` (no special tokens added).
    pub fn count(&self, text: &str) -> u64 {
        #[cfg(feature = "tokenizer")]
        {
            self.inner
                .encode(text, false)
                .map(|e| e.get_ids().len() as u64)
                .unwrap_or(0)
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            let _ = text;
            0
        }
    }

    /// A prompt of exactly `n` tokens: running text of the bundled corpus from a seeded word,
    /// cut at the end of its `n`-th token (a boundary of the original text, so nothing is
    /// decoded), then re-encoded to check the count; when the cut text re-encodes to another
    /// count (merges across the cut), nearby token boundaries are tried. Without the
    /// `tokenizer` feature: `n` corpus words.
    pub fn prompt(&self, n: u64, rng: &mut Rng) -> String {
        #[cfg(feature = "tokenizer")]
        {
            if n == 0 {
                return String::new();
            }
            let n = n as usize;
            let words = crate::corpus::corpus_words();
            let start = (rng.next_u64() % words.len() as u64) as usize;
            let mut take = n + 16;
            loop {
                let text = (0..take)
                    .map(|k| words[(start + k) % words.len()])
                    .collect::<Vec<_>>()
                    .join(" ");
                let Ok(enc) = self.inner.encode(text.as_str(), false) else {
                    return crate::corpus::corpus_prompt(n as u64, rng);
                };
                let offsets = enc.get_offsets();
                if offsets.len() < n + 8 {
                    take *= 2;
                    continue;
                }
                let mut best: Option<(usize, String)> = None;
                for d in 0..16usize {
                    for k in [n + d, n.wrapping_sub(d)] {
                        if k == 0 || k > offsets.len() {
                            continue;
                        }
                        let end = offsets[k - 1].1;
                        if !text.is_char_boundary(end) {
                            continue;
                        }
                        let cut = text[..end].trim_end();
                        let got = self.count(cut) as usize;
                        if got == n {
                            return cut.to_string();
                        }
                        if best.as_ref().is_none_or(|(e, _)| got.abs_diff(n) < *e) {
                            best = Some((got.abs_diff(n), cut.to_string()));
                        }
                    }
                }
                return best.map(|b| b.1).unwrap_or(text);
            }
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            crate::corpus::corpus_prompt(n, rng)
        }
    }
}

#[cfg(all(test, feature = "tokenizer"))]
use yardstick_testsupport::external;

#[cfg(all(test, feature = "tokenizer"))]
mod tests {
    use super::external;
    use super::*;

    /// A word-level vocabulary with a whitespace pre-tokenizer, written by hand.
    fn tiny() -> LocalTokenizer {
        let words = [
            "[UNK]", "the", "of", "and", "to", "in", "is", "was", "for", "on",
        ];
        let vocab: serde_json::Map<String, serde_json::Value> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), i.into()))
            .collect();
        let json = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
            "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
        });
        let dir = std::env::temp_dir().join(format!("ys-tok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("tokenizer.json");
        std::fs::write(&p, json.to_string()).unwrap();
        let t = LocalTokenizer::from_file(&p).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        t
    }

    #[test]
    fn counts_and_exact_prompts() {
        let t = tiny();
        assert_eq!(t.count("the of and unknownword"), 4);
        // Words outside the vocabulary still count (as unknown tokens).
        assert_eq!(t.count("zzz"), 1);
        let mut rng = Rng::new(1, 2);
        for n in [1, 7, 50] {
            let p = t.prompt(n, &mut rng);
            assert_eq!(t.count(&p), n, "{p}");
        }
    }

    /// Exact counts under byte-level BPE vocabularies: the small one trained on the corpus
    /// (committed), and a large real one when it is found (`YARDSTICK_BPE_TOKENIZER`, or where
    /// `scripts/fetch-test-tokenizer.sh` puts it); skipped, saying so, when it is not.
    #[test]
    fn exact_prompt_lengths_under_bpe() {
        let small = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/bpe-tokenizer.json");
        let mut files = vec![std::path::PathBuf::from(small)];
        let real = std::env::var_os("YARDSTICK_BPE_TOKENIZER")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::PathBuf::from("/var/tmp/yardstick-tokenizers/tokenizer.json")
            });
        let how = format!(
            "{} is missing: run scripts/fetch-test-tokenizer.sh or set YARDSTICK_BPE_TOKENIZER",
            real.display()
        );
        if let Some(real) = external::require(
            "bpe-tokenizer",
            "exact_prompt_lengths_under_bpe",
            &how,
            real.exists().then_some(real.clone()),
        ) {
            files.push(real);
        }
        for f in files {
            let t = LocalTokenizer::from_file(&f).unwrap();
            let mut misses = Vec::new();
            for seed in 0..40u64 {
                let mut rng = Rng::new(seed, 7);
                for n in [1u64, 2, 3, 5, 8, 13, 64, 100, 333, 1024] {
                    let p = t.prompt(n, &mut rng);
                    if t.count(&p) != n {
                        misses.push((n, t.count(&p), p.chars().take(60).collect::<String>()));
                    }
                }
            }
            assert!(misses.is_empty(), "{}: {misses:?}", f.display());
            // Running text, not token soup: the start of a prompt is words of the corpus.
            let p = t.prompt(30, &mut Rng::new(3, 3));
            let first = p.split(' ').next().unwrap();
            assert!(
                crate::corpus::corpus_words().contains(&first) || p.len() < 3,
                "{p}"
            );
        }
    }
}
