//! A strict JSON pull reader over one release file, for the import's decoder
//! ([`super::decode`]): the decoder asks for the value its layout expects next (an object's
//! keys, a list's items, a string, a number) and the reader checks the syntax as it goes, so
//! that a file is tokenized once, without serde's visitors, and its strings are borrowed from
//! the file unless they hold escapes.
//!
//! It accepts exactly RFC 8259 JSON (the file is checked as UTF-8 before): no trailing commas,
//! comments, leading zeros or bare control characters; nesting deeper than [`MAX_DEPTH`] is
//! refused, as serde_json refuses it. Errors are [`Error`]s: syntax errors give the line and
//! column; data errors (a value the layout cannot take) collect the key path as they unwind.

use std::borrow::Cow;
use std::fmt::Write;

/// Objects and lists nested deeper than this are refused (serde_json's limit).
const MAX_DEPTH: u32 = 128;

/// Why a file cannot be read: invalid JSON, or a value the lake cannot take (with the keys
/// that lead to it). Boxed, as serde_json boxes its errors: every call of the reader returns a
/// `Result`, which stays as small as its value this way (in registers, not on the stack).
#[derive(Debug)]
pub(super) struct Error(Box<Failure>);

#[derive(Debug)]
struct Failure {
    syntax: bool,
    message: String,
    /// Innermost key first.
    path: Vec<&'static str>,
}

impl Error {
    /// A value the lake cannot take.
    #[cold]
    pub fn data(message: impl Into<String>) -> Self {
        Self(Box::new(Failure {
            syntax: false,
            message: message.into(),
            path: Vec::new(),
        }))
    }

    /// The error, found under the key `name`.
    pub fn within(mut self, name: &'static str) -> Self {
        self.0.path.push(name);
        self
    }

    /// The message: `key: key: what` for data errors, `invalid JSON: what` otherwise.
    pub fn describe(self) -> String {
        let Failure {
            syntax,
            message,
            path,
        } = *self.0;
        if syntax || path.is_empty() {
            return format!("invalid JSON: {message}");
        }
        let mut text = String::new();
        for name in path.iter().rev() {
            text.push_str(name);
            text.push_str(": ");
        }
        text.push_str(&message);
        text
    }
}

pub(super) type Result<T> = std::result::Result<T, Error>;

/// What the next value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "boolean",
            Kind::Number => "number",
            Kind::String => "string",
            Kind::Array => "sequence",
            Kind::Object => "map",
        }
    }
}

/// A key read by [`Reader::key_as`]: the one expected, or another.
#[derive(Debug)]
pub(super) enum Key<'a> {
    Expected,
    Other(Cow<'a, str>),
}

/// A number as JSON writes it: an integer (in `i64`), a larger one, or a fraction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Number {
    Int(i64),
    /// A positive integer past `i64::MAX`.
    Big(u64),
    Float(f64),
}

/// 10^0 … 10^22: the powers of ten an f64 holds exactly.
const POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A JSON text being read.
pub(super) struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: u32,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Per byte of `word`, the high bit where the byte ends a string's plain run: `"`, `\` or a
/// control character. The lowest flagged byte is exact (the higher ones may be false).
#[inline]
fn specials(word: u64) -> u64 {
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    let quote = zero(word ^ (ONES * u64::from(b'"')));
    let backslash = zero(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (quote | backslash | control) & HIGH
}

/// Whether two byte strings of the same length are equal: eight bytes at a time, inline (keys
/// are short; a call to `memcmp` costs more than the comparison).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let word = |bytes: &[u8], at: usize| {
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
    };
    let mut at = 0;
    while at + 8 <= a.len() {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    while at < a.len() {
        if a[at] != b[at] {
            return false;
        }
        at += 1;
    }
    true
}

/// Reads the digits at `at` on into `value` (`overflow` once it no longer fits); returns the
/// position after them and how many there were.
#[inline]
fn digits(bytes: &[u8], mut at: usize, value: &mut u64, overflow: &mut bool) -> (usize, usize) {
    let start = at;
    while let Some(&digit @ b'0'..=b'9') = bytes.get(at) {
        match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit - b'0')))
        {
            Some(next) => *value = next,
            None => *overflow = true,
        }
        at += 1;
    }
    (at, at - start)
}

/// `text` as serde_json writes it: a string read without escapes holds no character it would
/// escape.
fn quoted(out: &mut String, text: Cow<'_, str>) {
    match text {
        Cow::Borrowed(text) => {
            out.push('"');
            out.push_str(text);
            out.push('"');
        }
        Cow::Owned(text) => out.push_str(&serde_json::Value::from(text).to_string()),
    }
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            at: 0,
            depth: 0,
        }
    }

    /// A syntax error at the reader's position.
    #[cold]
    fn syntax(&self, what: &str) -> Error {
        let before = &self.bytes[..self.at.min(self.bytes.len())];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = before.len()
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
        Error(Box::new(Failure {
            syntax: true,
            message: format!("{what} at line {line} column {}", column + 1),
            path: Vec::new(),
        }))
    }

    /// The next byte that is not whitespace, not consumed.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// The kind of the next value; the error says there is none.
    #[inline]
    pub fn kind(&mut self) -> Result<Kind> {
        Ok(match self.peek() {
            Some(b'"') => Kind::String,
            Some(b'{') => Kind::Object,
            Some(b'[') => Kind::Array,
            Some(b'-' | b'0'..=b'9') => Kind::Number,
            Some(b't' | b'f') => Kind::Bool,
            Some(b'n') => Kind::Null,
            Some(_) => return Err(self.syntax("expected value")),
            None => return Err(self.syntax("EOF while parsing a value")),
        })
    }

    /// An error for a value of the wrong kind (`expected` describes the right one).
    pub fn unexpected(&mut self, expected: &str) -> Error {
        match self.kind() {
            Ok(kind) => Error::data(format!(
                "invalid type: {}, expected {expected}",
                kind.name()
            )),
            Err(error) => error,
        }
    }

    /// Checks that nothing but whitespace follows.
    pub fn end(&mut self) -> Result<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.syntax("trailing characters")),
        }
    }

    #[inline]
    fn literal<const N: usize>(&mut self, word: &[u8; N]) -> Result<()> {
        let next = self.bytes.get(self.at..self.at + N);
        if next.and_then(|next| <&[u8; N]>::try_from(next).ok()) == Some(word) {
            self.at += N;
            Ok(())
        } else {
            Err(self.syntax("expected value"))
        }
    }

    /// `null`.
    pub fn null(&mut self) -> Result<()> {
        self.peek();
        self.literal(b"null")
    }

    /// `true` or `false`.
    pub fn boolean(&mut self) -> Result<bool> {
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|()| true),
            _ => self.literal(b"false").map(|()| false),
        }
    }

    /// A number.
    pub fn number(&mut self) -> Result<Number> {
        self.peek();
        let bytes = self.bytes;
        let start = self.at;
        let mut at = start;
        let negative = bytes.get(at) == Some(&b'-');
        if negative {
            at += 1;
        }
        let mut value: u64 = 0;
        let mut overflow = false;
        match bytes.get(at) {
            Some(b'0') => at += 1,
            Some(b'1'..=b'9') => at = digits(bytes, at, &mut value, &mut overflow).0,
            _ => {
                self.at = at;
                return Err(self.syntax("invalid number"));
            }
        }
        let mut fraction = false;
        // A fraction's digits after the integer's in `value` (while they fit), for the exact
        // conversion below.
        let mut decimals = 0;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            fraction = true;
            if !bytes.get(at).is_some_and(u8::is_ascii_digit) {
                self.at = at;
                return Err(self.syntax("invalid number"));
            }
            (at, decimals) = digits(bytes, at, &mut value, &mut overflow);
        }
        let mut exponent = false;
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            fraction = true;
            exponent = true;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            if !bytes.get(at).is_some_and(u8::is_ascii_digit) {
                self.at = at;
                return Err(self.syntax("invalid number"));
            }
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
        }
        self.at = at;
        if !fraction && !overflow {
            if !negative {
                return Ok(i64::try_from(value).map_or(Number::Big(value), Number::Int));
            }
            if value == 0 {
                // serde_json reads `-0` as the float -0.0.
                return Ok(Number::Float(-0.0));
            }
            if value <= i64::MAX as u64 + 1 {
                return Ok(Number::Int((value as i128).wrapping_neg() as i64));
            }
        }
        if !exponent && !overflow && value < 1 << 53 && decimals < POWERS_OF_TEN.len() {
            // Both exact in an f64, so one division rounds correctly (Clinger's fast path):
            // what parsing the text gives, without parsing it again.
            let float = value as f64 / POWERS_OF_TEN[decimals];
            return Ok(Number::Float(if negative { -float } else { float }));
        }
        let float: f64 = self.text[start..at]
            .parse()
            .map_err(|_| self.syntax("invalid number"))?;
        if float.is_finite() {
            Ok(Number::Float(float))
        } else {
            Err(self.syntax("number out of range"))
        }
    }

    /// A string: borrowed from the text unless it holds escapes.
    pub fn string(&mut self) -> Result<Cow<'a, str>> {
        if self.peek() != Some(b'"') {
            return Err(self.syntax("expected a string"));
        }
        let bytes = self.bytes;
        let start = self.at + 1;
        let mut at = start;
        let mut owned: Option<String> = None;
        let mut run = start;
        loop {
            while let Some(chunk) = bytes.get(at..at + 8) {
                let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
                let found = specials(word);
                if found != 0 {
                    at += found.trailing_zeros() as usize / 8;
                    break;
                }
                at += 8;
            }
            match bytes.get(at) {
                Some(b'"') => {
                    self.at = at + 1;
                    let plain = &self.text[run..at];
                    return Ok(match owned {
                        None => Cow::Borrowed(plain),
                        Some(mut text) => {
                            text.push_str(plain);
                            Cow::Owned(text)
                        }
                    });
                }
                Some(b'\\') => {
                    let text = owned.get_or_insert_with(String::new);
                    text.push_str(&self.text[run..at]);
                    self.at = at;
                    at = self.escape(text)?;
                    run = at;
                }
                Some(&byte) if byte < 0x20 => {
                    self.at = at;
                    return Err(self.syntax(
                        "control character (\\u0000-\\u001F) found while parsing a string",
                    ));
                }
                Some(_) => at += 1,
                None => {
                    self.at = at;
                    return Err(self.syntax("EOF while parsing a string"));
                }
            }
        }
    }

    /// The escape at the reader's position, appended to `text`; returns the position after it.
    fn escape(&mut self, text: &mut String) -> Result<usize> {
        let bytes = self.bytes;
        let at = self.at + 1;
        let simple = match bytes.get(at) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let (unit, mut after) = self.hex(at + 1)?;
                let code = if (0xD800..0xDC00).contains(&unit) {
                    if bytes.get(after..after + 2) != Some(b"\\u") {
                        self.at = after;
                        return Err(self.syntax("lone leading surrogate in hex escape"));
                    }
                    let (low, next) = self.hex(after + 2)?;
                    if !(0xDC00..0xE000).contains(&low) {
                        self.at = after;
                        return Err(self.syntax("lone leading surrogate in hex escape"));
                    }
                    after = next;
                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    unit
                };
                let Some(c) = char::from_u32(code) else {
                    self.at = at;
                    return Err(self.syntax("lone trailing surrogate in hex escape"));
                };
                text.push(c);
                return Ok(after);
            }
            _ => {
                self.at = at;
                return Err(self.syntax("invalid escape"));
            }
        };
        text.push(simple);
        Ok(at + 1)
    }

    /// Four hex digits at `at`: their value and the position after them.
    fn hex(&mut self, at: usize) -> Result<(u32, usize)> {
        let mut value = 0;
        for offset in 0..4 {
            let digit = self
                .bytes
                .get(at + offset)
                .and_then(|&b| char::from(b).to_digit(16));
            let Some(digit) = digit else {
                self.at = at + offset;
                return Err(self.syntax("invalid escape"));
            };
            value = value * 16 + digit;
        }
        Ok((value, at + 4))
    }

    /// Opens the object or list (`open` is `{` or `[`) that must come next; `expected`
    /// describes it for the error.
    #[inline]
    pub fn open(&mut self, open: u8, expected: impl FnOnce() -> String) -> Result<()> {
        if self.peek() != Some(open) {
            return Err(self.unexpected(&expected()));
        }
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.syntax("recursion limit exceeded"));
        }
        self.at += 1;
        Ok(())
    }

    /// Whether the object or list being read (closed by `close`) has another member; `first`
    /// tracks whether one was read.
    #[inline]
    fn more(&mut self, close: u8, first: &mut bool) -> Result<bool> {
        let next = self.peek();
        if next == Some(close) {
            self.at += 1;
            self.depth -= 1;
            return Ok(false);
        }
        if *first {
            *first = false;
            return Ok(true);
        }
        if next == Some(b',') {
            self.at += 1;
            return Ok(true);
        }
        Err(self.syntax(match (next, close) {
            (None, b'}') => "EOF while parsing an object",
            (None, _) => "EOF while parsing a list",
            (_, b'}') => "expected `,` or `}`",
            _ => "expected `,` or `]`",
        }))
    }

    /// The next key of the object being read (opened with [`Reader::open`]), or none at its
    /// end; its value comes next.
    #[inline]
    pub fn key(&mut self, first: &mut bool) -> Result<Option<Cow<'a, str>>> {
        if !self.key_follows(first)? {
            return Ok(None);
        }
        let key = self.string()?;
        self.colon()?;
        Ok(Some(key))
    }

    /// Like [`Reader::key`], but a key spelled exactly `expected` (the usual one, when keys
    /// come in a known order) is recognised without reading it as a string.
    #[inline]
    pub fn key_as(&mut self, first: &mut bool, expected: Option<&str>) -> Result<Option<Key<'a>>> {
        if !self.key_follows(first)? {
            return Ok(None);
        }
        let key = match expected {
            Some(name) if self.spelled(name) => {
                self.at += name.len() + 2;
                Key::Expected
            }
            _ => Key::Other(self.string()?),
        };
        self.colon()?;
        Ok(Some(key))
    }

    /// Whether the object being read has another key, which comes next.
    #[inline]
    fn key_follows(&mut self, first: &mut bool) -> Result<bool> {
        if !self.more(b'}', first)? {
            return Ok(false);
        }
        if self.peek() != Some(b'"') {
            return Err(self.syntax("key must be a string"));
        }
        Ok(true)
    }

    #[inline]
    fn colon(&mut self) -> Result<()> {
        if self.peek() != Some(b':') {
            return Err(self.syntax("expected `:`"));
        }
        self.at += 1;
        Ok(())
    }

    /// Whether the string at the reader's position is `"name"` as it stands.
    #[inline]
    fn spelled(&self, name: &str) -> bool {
        let start = self.at + 1;
        let end = start + name.len();
        self.bytes.get(end) == Some(&b'"') && same(&self.bytes[start..end], name.as_bytes())
    }

    /// Whether the list being read (opened with [`Reader::open`]) has another item, which
    /// comes next.
    #[inline]
    pub fn item(&mut self, first: &mut bool) -> Result<bool> {
        let more = self.more(b']', first)?;
        if more && self.peek() == Some(b']') {
            return Err(self.syntax("trailing comma"));
        }
        Ok(more)
    }

    /// Skips the next value (checking it).
    pub fn skip(&mut self) -> Result<()> {
        match self.kind()? {
            Kind::Null => self.null(),
            Kind::Bool => self.boolean().map(drop),
            Kind::Number => self.number().map(drop),
            Kind::String => self.string().map(drop),
            Kind::Array => {
                self.open(b'[', String::new)?;
                let mut first = true;
                while self.item(&mut first)? {
                    self.skip()?;
                }
                Ok(())
            }
            Kind::Object => {
                self.open(b'{', String::new)?;
                let mut first = true;
                while self.key(&mut first)?.is_some() {
                    self.skip()?;
                }
                Ok(())
            }
        }
    }

    /// Copies the next value into `out` as compact JSON (serde_json's spelling of strings and
    /// numbers, keys in their order).
    pub fn copy(&mut self, out: &mut String) -> Result<()> {
        match self.kind()? {
            Kind::Null => {
                self.null()?;
                out.push_str("null");
            }
            Kind::Bool => {
                let value = self.boolean()?;
                out.push_str(if value { "true" } else { "false" });
            }
            Kind::Number => match self.number()? {
                Number::Int(value) => {
                    let _ = write!(out, "{value}");
                }
                Number::Big(value) => {
                    let _ = write!(out, "{value}");
                }
                Number::Float(value) => {
                    out.push_str(&serde_json::Value::from(value).to_string());
                }
            },
            Kind::String => quoted(out, self.string()?),
            Kind::Array => {
                self.open(b'[', String::new)?;
                out.push('[');
                let (mut first, mut separator) = (true, "");
                while self.item(&mut first)? {
                    out.push_str(separator);
                    separator = ",";
                    self.copy(out)?;
                }
                out.push(']');
            }
            Kind::Object => {
                self.open(b'{', String::new)?;
                out.push('{');
                let (mut first, mut separator) = (true, "");
                while let Some(key) = self.key(&mut first)? {
                    out.push_str(separator);
                    separator = ",";
                    quoted(out, key);
                    out.push(':');
                    self.copy(out)?;
                }
                out.push('}');
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// The value `text` holds, read through [`Reader::copy`] (the reader's whole grammar).
    fn read(text: &str) -> std::result::Result<String, String> {
        let mut reader = Reader::new(text);
        let mut out = String::new();
        reader
            .copy(&mut out)
            .and_then(|()| reader.end())
            .map_err(Error::describe)?;
        Ok(out)
    }

    #[test]
    fn valid_json_reads_as_serde_json_reads_it() {
        let texts = [
            r#"{"a": [1, -2, 3.5, 1e3, -0.25E-2, 0, -0], "b": {"c": null, "d": true, "e": false}}"#,
            r#"["plain", "tab\there", "quote \" and \\ and \/", "\u00e9\u4e2d\ud83d\ude00", "é中"]"#,
            r#"  [ ]  "#,
            r#"{}"#,
            r#"[18446744073709551615, 18446744073709551616, -9223372036854775808, -9223372036854775809]"#,
            r#""a string long enough to take the eight-byte path, twice over, with \"quotes\"""#,
            "[\"\\n\", 12345678901234567890123]",
        ];
        for text in texts {
            let expected: Value = serde_json::from_str(text).expect("serde_json reads it");
            let copied = read(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(copied, expected.to_string(), "{text}");
        }
    }

    #[test]
    fn fractions_read_as_rust_parses_them() {
        let mut texts: Vec<String> = [
            "1387.0",
            "0.1",
            "-0.0",
            "0.30000000000000004",
            "9007199254740991.5",
            "9007199254740993.0",
            "123456789012345.678",
            "1.0000000000000000000001",
            "0.0000000000000000000001",
            "2.5e3",
            "-17.125",
            "4503599627370497.5",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        // Coordinates as the exports write them, and fractions up to 19 digits long.
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            seed >> 24
        };
        for _ in 0..5_000 {
            let whole = next() % 100_000;
            let decimals = (next() % 20) as usize;
            let fraction: String = (0..decimals.max(1))
                .map(|_| char::from(b'0' + (next() % 10) as u8))
                .collect();
            let sign = if next() % 4 == 0 { "-" } else { "" };
            texts.push(format!("{sign}{whole}.{fraction}"));
        }
        for text in texts {
            let expected: f64 = text.parse().expect("a number");
            let read = Reader::new(&text).number().expect("reads");
            match read {
                Number::Float(value) => {
                    assert_eq!(value.to_bits(), expected.to_bits(), "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn invalid_json_is_refused_with_its_position() {
        let texts = [
            "",
            "[1,]",
            "{\"a\":1,}",
            "[1 2]",
            "{\"a\" 1}",
            "{1: 2}",
            "[01]",
            "[1.]",
            "[.5]",
            "[1e]",
            "[-]",
            "\"unterminated",
            "\"bad \\x escape\"",
            "\"control \u{1} character\"",
            "\"\\ud800 lone\"",
            "\"\\udc00 lone\"",
            "[nul]",
            "[tru]",
            "{\"a\": 1} trailing",
            "[1e999]",
            "[\"\\u12G4\"]",
        ];
        for text in texts {
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
            let error = read(text).expect_err(text);
            assert!(error.starts_with("invalid JSON: "), "{text}: {error}");
            assert!(error.contains(" at line 1 column "), "{text}: {error}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(read(&deep).expect_err("deep").contains("recursion limit"));
        let error = read("{\n  \"a\": [1,\n  ]}").expect_err("trailing comma");
        assert!(error.ends_with("at line 3 column 3"), "{error}");
    }

    #[test]
    fn strings_borrow_unless_they_hold_escapes() {
        let mut reader = Reader::new(r#"["plain text", "esc\naped"]"#);
        reader.open(b'[', String::new).expect("list");
        let mut first = true;
        assert!(reader.item(&mut first).expect("item"));
        assert!(matches!(
            reader.string().expect("string"),
            Cow::Borrowed("plain text")
        ));
        assert!(reader.item(&mut first).expect("item"));
        let escaped = reader.string().expect("string");
        assert!(matches!(escaped, Cow::Owned(_)));
        assert_eq!(escaped, "esc\naped");
        assert!(!reader.item(&mut first).expect("end"));
        reader.end().expect("nothing after");
    }

    #[test]
    fn byte_strings_compare_eight_bytes_at_a_time() {
        let text = b"localization_reference_ids";
        for len in 0..text.len() {
            assert!(same(&text[..len], &text[..len]));
            let mut other = text[..len].to_vec();
            for at in 0..len {
                other[at] ^= 1;
                assert!(!same(&text[..len], &other), "{len} {at}");
                other[at] ^= 1;
            }
        }
        assert!(!same(b"text", b"texts"));
    }

    #[test]
    fn an_expected_key_is_matched_as_spelled() {
        let mut reader = Reader::new(r#"{"text": 1, "te\u0078t": 2, "tex": 3, "text2": 4}"#);
        reader.open(b'{', String::new).expect("object");
        let mut first = true;
        let mut keys = Vec::new();
        while let Some(key) = reader.key_as(&mut first, Some("text")).expect("key") {
            keys.push(match key {
                Key::Expected => "(expected)".to_string(),
                Key::Other(key) => key.into_owned(),
            });
            reader.skip().expect("value");
        }
        assert_eq!(keys, ["(expected)", "text", "tex", "text2"]);
        reader.end().expect("nothing after");
    }

    #[test]
    fn the_eight_byte_scan_finds_the_first_special_byte() {
        for at in 0..8 {
            for special in [b'"', b'\\', 0x01, 0x1f] {
                let mut word = *b"abcdefgh";
                word[at] = special;
                if at < 7 {
                    word[7] = b'"';
                }
                let found = specials(u64::from_le_bytes(word));
                assert_eq!(found.trailing_zeros() as usize / 8, at, "{word:?}");
            }
        }
        assert_eq!(specials(u64::from_le_bytes(*b" ~\x7f\x80\xff\xc3\xa9z")), 0);
    }
}
