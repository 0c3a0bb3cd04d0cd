//! The bundled corpus of original English prose (`corpus/essays.txt`, dedicated to the public
//! domain) that synthetic prompts are cut from: by words for the plan, by a real model's tokens
//! for [`crate::tokenizer::LocalTokenizer`].

use crate::rng::Rng;

/// The bundled corpus as written (comment lines start with `#`).
const CORPUS: &str = include_str!("../corpus/essays.txt");

/// The corpus text: comment lines dropped, every run of whitespace one space.
pub fn corpus_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        CORPUS
            .lines()
            .filter(|l| !l.starts_with('#'))
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// The corpus's words, in order.
pub fn corpus_words() -> &'static [&'static str] {
    static WORDS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    WORDS.get_or_init(|| corpus_text().split(' ').collect())
}

/// A prompt of exactly `n` corpus words: the `n` words from a seeded start, wrapping around.
pub fn corpus_prompt(n: u64, rng: &mut Rng) -> String {
    let words = corpus_words();
    let start = (rng.next_u64() % words.len() as u64) as usize;
    let mut s = String::with_capacity(n as usize * 6);
    for k in 0..n as usize {
        if k > 0 {
            s.push(' ');
        }
        s.push_str(words[(start + k) % words.len()]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_prompts_are_running_text_of_exact_word_counts() {
        let words = corpus_words();
        assert!(words.len() > 3000, "{}", words.len());
        assert!(!corpus_text().contains('#') && !corpus_text().contains("  "));
        let mut rng = Rng::new(4, 2);
        for n in [1u64, 2, 17, 500, words.len() as u64 + 10] {
            let p = corpus_prompt(n, &mut rng);
            assert_eq!(p.split_whitespace().count() as u64, n);
        }
        // Consecutive words of the text (not a bag of words): the prompt is a substring of the
        // corpus, or of it wrapped once.
        let p = corpus_prompt(40, &mut Rng::new(1, 1));
        let twice = format!("{} {}", corpus_text(), corpus_text());
        assert!(twice.contains(&p), "{p}");
    }
}
