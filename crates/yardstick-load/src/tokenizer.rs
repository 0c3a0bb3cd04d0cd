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

    /// A prompt of exactly `n` tokens: corpus words until there are enough tokens, cut at `n`
    /// token ids and decoded; re-encoding is checked and the cut adjusted when decoding merges
    /// tokens.
    pub fn prompt(&self, n: u64, rng: &mut Rng) -> String {
        #[cfg(feature = "tokenizer")]
        {
            let mut text = crate::plan::synthetic_prompt(n, rng);
            let mut ids: Vec<u32> = Vec::new();
            for _ in 0..8 {
                ids = match self.inner.encode(text.as_str(), false) {
                    Ok(e) => e.get_ids().to_vec(),
                    Err(_) => return text,
                };
                if ids.len() as u64 >= n {
                    break;
                }
                text.push(' ');
                text.push_str(&crate::plan::synthetic_prompt(n - ids.len() as u64, rng));
            }
            let mut take = (n as usize).min(ids.len());
            for _ in 0..8 {
                let Ok(cut) = self.inner.decode(&ids[..take], true) else {
                    return text;
                };
                let got = self.count(&cut);
                if got == n || take == 0 {
                    return cut;
                }
                take = if got > n {
                    take - 1
                } else {
                    (take + 1).min(ids.len())
                };
            }
            self.inner.decode(&ids[..take], true).unwrap_or(text)
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            crate::plan::synthetic_prompt(n, rng)
        }
    }
}

#[cfg(all(test, feature = "tokenizer"))]
mod tests {
    use super::*;

    /// A word-level vocabulary with a whitespace pre-tokenizer, written by hand.
    fn tiny() -> LocalTokenizer {
        let words = std::iter::once("[UNK]").chain(crate::plan::WORDS.iter().copied());
        let vocab: serde_json::Map<String, serde_json::Value> = words
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
}
