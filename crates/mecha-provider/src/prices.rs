//! What a session's tokens would cost at a model's list prices: an
//! estimate for `/cost` and the JSON result, from a table that says how
//! old it is. Prices change and discounts exist, so the figure is never
//! called a bill. A model the table does not know (a local one, a new one)
//! gets no figure at all rather than a guess.

use mecha_core::Usage;

/// When the table was last checked against the vendors' price pages.
pub const PRICES_AS_OF: &str = "2025-11";

/// US dollars per million tokens, by kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

impl Price {
    /// What `usage` costs at these prices, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(usage.input_tokens, self.input)
            + per(usage.output_tokens, self.output)
            + per(usage.cache_write_tokens, self.cache_write)
            + per(usage.cache_read_tokens, self.cache_read)
    }
}

const fn price(input: f64, output: f64, cache_write: f64, cache_read: f64) -> Price {
    Price {
        input,
        output,
        cache_write,
        cache_read,
    }
}

/// By the start of the model's name; the longest start that matches wins
/// (`gpt-4o-mini` before `gpt-4o`). OpenAI bills no cache writes.
const TABLE: &[(&str, Price)] = &[
    ("claude-opus-4-5", price(5.0, 25.0, 6.25, 0.50)),
    ("claude-opus-4", price(15.0, 75.0, 18.75, 1.50)),
    ("claude-3-opus", price(15.0, 75.0, 18.75, 1.50)),
    ("claude-sonnet-4", price(3.0, 15.0, 3.75, 0.30)),
    ("claude-3-7-sonnet", price(3.0, 15.0, 3.75, 0.30)),
    ("claude-3-5-sonnet", price(3.0, 15.0, 3.75, 0.30)),
    ("claude-haiku-4-5", price(1.0, 5.0, 1.25, 0.10)),
    ("claude-3-5-haiku", price(0.80, 4.0, 1.0, 0.08)),
    ("claude-3-haiku", price(0.25, 1.25, 0.30, 0.03)),
    ("gpt-4o-mini", price(0.15, 0.60, 0.0, 0.075)),
    ("gpt-4o", price(2.50, 10.0, 0.0, 1.25)),
    ("gpt-4.1-nano", price(0.10, 0.40, 0.0, 0.025)),
    ("gpt-4.1-mini", price(0.40, 1.60, 0.0, 0.10)),
    ("gpt-4.1", price(2.0, 8.0, 0.0, 0.50)),
    ("o4-mini", price(1.10, 4.40, 0.0, 0.275)),
    ("o3", price(2.0, 8.0, 0.0, 0.50)),
];

/// The list price of `model`, if the table knows it.
pub fn price_of(model: &str) -> Option<Price> {
    TABLE
        .iter()
        .filter(|(start, _)| model.starts_with(start))
        .max_by_key(|(start, _)| start.len())
        .map(|(_, price)| *price)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_matching_start_wins() {
        assert_eq!(price_of("gpt-4o-mini-2024-07-18"), Some(TABLE[9].1));
        assert_eq!(price_of("gpt-4o-2024-08-06"), Some(TABLE[10].1));
        assert_eq!(price_of("claude-opus-4-5-20251101").unwrap().input, 5.0);
        assert_eq!(price_of("claude-opus-4-1-20250805").unwrap().input, 15.0);
        assert_eq!(price_of("llama3.1:8b"), None);
    }

    #[test]
    fn each_kind_of_token_is_priced() {
        let sonnet = price_of("claude-sonnet-4-5").unwrap();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_write_tokens: 200_000,
            cache_read_tokens: 2_000_000,
        };
        // 3.00 + 1.50 + 0.75 + 0.60
        assert!(
            (sonnet.cost(&usage) - 5.85).abs() < 1e-9,
            "{}",
            sonnet.cost(&usage)
        );
    }
}
