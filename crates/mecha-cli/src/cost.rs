//! A session's tokens by kind and their estimated cost, for `/cost` and
//! the JSON result: one place, so the two always agree.

use mecha_core::Usage;
use mecha_provider::{PRICES_AS_OF, price_of};
use serde_json::{Value, json};

/// `/cost`'s answer.
pub fn summary(model: Option<&str>, usage: &Usage) -> String {
    let tokens = format!(
        "tokens this session: {} input, {} output, {} cache write, {} cache read\n",
        grouped(usage.input_tokens),
        grouped(usage.output_tokens),
        grouped(usage.cache_write_tokens),
        grouped(usage.cache_read_tokens),
    );
    let cost = match model.map(|m| (m, price_of(m))) {
        Some((model, Some(price))) => format!(
            "estimated cost: ${:.4} at {model}'s list prices (mecha's table of {PRICES_AS_OF}; \
             your bill may differ)\n",
            price.cost(usage)
        ),
        Some((model, None)) => format!(
            "estimated cost: unknown; mecha's price table ({PRICES_AS_OF}) has no price for \
             {model} (a model you run yourself costs nothing per token)\n"
        ),
        None => "estimated cost: unknown; no model API was asked\n".to_owned(),
    };
    tokens + &cost
}

/// The result object's `cost`: the estimate in US dollars with the
/// table's date, or null when the table does not know the model.
pub fn json(model: Option<&str>, usage: &Usage) -> Value {
    match model.and_then(price_of) {
        Some(price) => json!({
            "estimated_usd": (price.cost(usage) * 1e6).round() / 1e6,
            "prices_as_of": PRICES_AS_OF,
        }),
        None => Value::Null,
    }
}

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
    }
}
