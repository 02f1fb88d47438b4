//! Tolerant JSON: reads an LLM answer into a [`serde_json::Value`]. Strict JSON is read as is;
//! anything else goes through a lenient recursive-descent parser that finds the first object or
//! array in the text ([`repair_json`], shared with report extraction).
//!
//! ```text
//!  answer ──► strict JSON? ──yes──► value
//!         ──► first ``` fence (if any), else the whole text
//!         ──► each `{` / `[` in turn (at most 16) ──► lenient parse ──► first success
//! ```
//!
//! Tolerated: prose around the value, trailing or doubled commas, missing commas, single quotes,
//! unquoted keys, unescaped inner quotes (a quote closes a string only before `,:}]`, a line end
//! or the end), raw line breaks in strings (with the `↪` wrap marks of PDF listings), invalid
//! escapes such as `\_` (the backslash is dropped), Python and JavaScript literals (`None`,
//! `True`, `undefined`, `NaN`), and truncation (open strings, arrays and objects are closed; a
//! key without a value is dropped). Nesting deeper than 64 levels is an error, not a stack
//! overflow.

use serde_json::{Map, Number, Value};

/// Deepest nesting accepted.
const MAX_DEPTH: usize = 64;
/// Most start positions tried per candidate text.
const MAX_STARTS: usize = 16;
/// Line-wrap marks of PDF listings, skipped at the start of a continued line.
const WRAP_MARKS: [char; 3] = ['↪', '↳', '→'];

/// An LLM answer as JSON: the whole text when it is a strict JSON object or array, else the
/// first object or array [`repair_json`] finds in it. The error says why nothing was found.
pub fn parse_json(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    if trimmed.starts_with(['{', '['])
        && let Ok(value) = serde_json::from_str(trimmed)
    {
        return Ok(value);
    }
    repair_json(text)
}

/// Extracts the first JSON value (object or array) from `text` and repairs small defects.
pub fn repair_json(text: &str) -> Result<Value, String> {
    let mut last_error = "no JSON object or array found".to_string();
    for candidate in fenced_block(text).into_iter().chain([text]) {
        let chars: Vec<char> = candidate.chars().collect();
        let starts = chars
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c, '{' | '['))
            .map(|(at, _)| at)
            .take(MAX_STARTS);
        for start in starts {
            let mut parser = Parser {
                chars: &chars,
                pos: start,
                depth: 0,
            };
            match parser.value() {
                Ok(value) => return Ok(value),
                Err(err) => last_error = err,
            }
        }
    }
    Err(last_error)
}

/// The content of the first ``` code fence (to the closing fence or the end).
fn fenced_block(text: &str) -> Option<&str> {
    let opening = text.find("```")?;
    let after = &text[opening + 3..];
    let body = &after[after.find('\n').map_or(after.len(), |at| at + 1)..];
    Some(body.find("```").map_or(body, |end| &body[..end]))
}

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.chars.len()
    }

    fn skip_whitespace(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() || WRAP_MARKS.contains(&c) {
                self.pos += 1;
            } else if c == '/' && self.chars.get(self.pos + 1) == Some(&'/') {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        Ok(())
    }

    fn value(&mut self) -> Result<Value, String> {
        self.skip_whitespace();
        match self.peek() {
            None => Err("unexpected end of text".to_string()),
            Some('{') => self.object(),
            Some('[') => self.array(),
            Some('"' | '\'') => Ok(Value::String(self.string())),
            Some(c) if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') => Ok(self.number()),
            Some(c) if c.is_alphabetic() => self.bareword(),
            Some(c) => Err(format!("unexpected {c:?} at character {}", self.pos)),
        }
    }

    fn array(&mut self) -> Result<Value, String> {
        self.enter()?;
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_whitespace();
            match self.peek() {
                None => break,
                Some(']') => {
                    self.pos += 1;
                    break;
                }
                Some(',' | '}') => self.pos += 1,
                Some(_) => items.push(self.value()?),
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn object(&mut self) -> Result<Value, String> {
        self.enter()?;
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.skip_whitespace();
            match self.peek() {
                None | Some(']') => break,
                Some('}') => {
                    self.pos += 1;
                    break;
                }
                Some(',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
            }
            let key = self.key()?;
            self.skip_whitespace();
            match self.peek() {
                Some(':' | '=') => self.pos += 1,
                None => break,
                Some(c) => {
                    return Err(format!(
                        "expected ':' after key {key:?}, found {c:?} at character {}",
                        self.pos
                    ));
                }
            }
            self.skip_whitespace();
            match self.peek() {
                None => break,
                Some(',' | '}' | ']') => continue,
                Some(_) => {
                    let value = self.value()?;
                    map.insert(key, value);
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    fn key(&mut self) -> Result<String, String> {
        if matches!(self.peek(), Some('"' | '\'')) {
            return Ok(self.string());
        }
        let start = self.pos;
        let mut key = String::new();
        while let Some(c) = self.peek() {
            if c.is_alphanumeric() || matches!(c, '_' | '-') {
                key.push(c);
            } else if c != '\\' {
                break;
            }
            self.pos += 1;
        }
        if key.is_empty() {
            return Err(format!("expected a key at character {start}"));
        }
        Ok(key)
    }

    /// A quoted string; the opening quote is at `pos`. Never fails: the end closes it.
    fn string(&mut self) -> String {
        let quote = self.chars[self.pos];
        self.pos += 1;
        let mut out = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\\' => self.escape(&mut out),
                '\n' | '\r' => {
                    while self
                        .peek()
                        .is_some_and(|c| c.is_whitespace() || WRAP_MARKS.contains(&c))
                    {
                        self.pos += 1;
                    }
                    let kept = out.trim_end().len();
                    out.truncate(kept);
                    out.push(' ');
                }
                c if c == quote && self.closes_string() => return out,
                c => out.push(c),
            }
        }
        out
    }

    /// Whether a quote just read ends the string: only before `,:}]`, a line end or the end.
    fn closes_string(&self) -> bool {
        let next = self.chars[self.pos..]
            .iter()
            .find(|c| !matches!(c, ' ' | '\t'));
        next.is_none_or(|c| matches!(c, ',' | ':' | '}' | ']' | '\n' | '\r'))
    }

    fn escape(&mut self, out: &mut String) {
        let Some(c) = self.peek() else { return };
        self.pos += 1;
        match c {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'u' => match self.hex4() {
                Some(high @ 0xD800..=0xDBFF) => {
                    let low = (self.peek() == Some('\\')
                        && self.chars.get(self.pos + 1) == Some(&'u'))
                    .then(|| {
                        self.pos += 2;
                        self.hex4()
                    })
                    .flatten();
                    let combined = low
                        .filter(|low| (0xDC00..=0xDFFF).contains(low))
                        .map(|low| 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00));
                    out.push(combined.and_then(char::from_u32).unwrap_or('\u{FFFD}'));
                }
                Some(code) => out.push(char::from_u32(code).unwrap_or('\u{FFFD}')),
                None => out.push('u'),
            },
            other => out.push(other),
        }
    }

    /// Four hex digits at `pos`, consumed only if all four are there.
    fn hex4(&mut self) -> Option<u32> {
        let digits = self.chars.get(self.pos..self.pos + 4)?;
        let code = digits
            .iter()
            .try_fold(0u32, |acc, c| c.to_digit(16).map(|d| acc * 16 + d))?;
        self.pos += 4;
        Some(code)
    }

    fn number(&mut self) -> Value {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
        {
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        if let Ok(integer) = text.parse::<i64>() {
            return Value::Number(integer.into());
        }
        match text.parse::<f64>() {
            Ok(float) => Number::from_f64(float).map_or(Value::Null, Value::Number),
            Err(_) => Value::String(text),
        }
    }

    fn bareword(&mut self) -> Result<Value, String> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.pos += 1;
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        match word.to_ascii_lowercase().as_str() {
            "null" | "none" | "nil" | "undefined" | "nan" => Ok(Value::Null),
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ if self.at_end() => Ok(Value::Null),
            _ => Err(format!("unexpected word {word:?} at character {start}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_json_is_read_unchanged() {
        let text = r#"{"a": [1, 2.5, -3e2, "x\"y\u00e9"], "b": {"c": null, "d": true}}"#;
        let expected: Value = serde_json::from_str(text).expect("valid JSON");
        assert_eq!(repair_json(text), Ok(expected));
    }

    #[test]
    fn surrogate_pairs_and_bad_escapes() {
        assert_eq!(
            repair_json(r#"["\ud83d\ude00", "\uZZ", "\ud800x"]"#),
            Ok(json!(["😀", "uZZ", "\u{FFFD}x"]))
        );
    }

    #[test]
    fn unquoted_keys_and_equals() {
        assert_eq!(
            repair_json("{name: 'a', summary\\_sentence = 'b'}"),
            Ok(json!({"name": "a", "summary_sentence": "b"}))
        );
    }

    #[test]
    fn answers_with_fences_prose_and_defects() {
        let expected = json!({"questions": [{"answer": "B", "regions": ["left lung"]}]});
        for answer in [
            r#"{"questions": [{"answer": "B", "regions": ["left lung"]}]}"#,
            "```json\n{\"questions\": [{\"answer\": \"B\", \"regions\": [\"left lung\"]}]}\n```",
            "Here is the JSON you asked for:\n{\"questions\": [{\"answer\": \"B\", \"regions\": \
             [\"left lung\"],},],}\nI hope this helps.",
            r#"{"questions": [{"answer": "B", "regions": ["left\_lung"]}]}"#,
            r#"{"questions": [{"answer": "B", "regions": ["left lung"#,
        ] {
            let parsed = parse_json(answer);
            let expected = if answer.contains("left\\_lung") {
                json!({"questions": [{"answer": "B", "regions": ["left_lung"]}]})
            } else {
                expected.clone()
            };
            assert_eq!(parsed, Ok(expected), "{answer}");
        }
        assert!(parse_json("I cannot answer that.").is_err());
        assert!(parse_json("").is_err());
    }

    #[test]
    fn strict_answers_keep_their_exact_values() {
        // The strict path reads escaped quotes followed by commas as strict JSON does.
        let text = r#"  {"s": "a \", b", "n": 1.5e3}  "#;
        assert_eq!(parse_json(text), Ok(json!({"s": "a \", b", "n": 1500.0})));
    }
}
