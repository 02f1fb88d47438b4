//! A small deterministic mutation fuzzer for cxrlake's parsers (no libFuzzer, no nightly): a
//! target is a function from bytes to an [`Outcome`], a list of realistic seeds and a
//! dictionary of tokens its format cares about. [`run`] feeds it the seeds, then mutants of
//! them, and checks each input's properties:
//!
//! ```text
//!  iteration i ─► ChaCha8(FUZZ_SEED, target, i) ─► seed (i < seeds: as is) ─► 1..8 mutations
//!             ─► catch_unwind(target(input)) ─► Accepted | Rejected(non-empty why) | Broken
//!             ─► time ≤ the bound (a hung input is reported by a watchdog, not waited for)
//! ```
//!
//! Mutations: for binary containers (zip, gzip) a target lists its header and directory fields
//! ([`Target::with_fields`]: sizes, counts, offsets, name lengths) and 40 % of mutations set one
//! to an extreme (0, 1, 2^(n−1), the maximum, off by one, doubled); then bit flips, random bytes set / inserted / deleted, truncation, duplication and
//! repetition of a slice, splicing two seeds, numbers replaced by huge / negative / NaN-ish
//! values, and insertion of structural tokens (`"` `,` `\n` `{` `[` `\0`, invalid UTF-8) and of
//! the target's dictionary.
//!
//! `FUZZ_ITERATIONS` (inputs per target, default [`DEFAULT_ITERATIONS`]), `FUZZ_SEED` (default
//! 0) and `FUZZ_TIME_LIMIT_MS` (per input, default 2,000) tune a run. Every iteration has its
//! own generator, so a failure names the iteration and `FUZZ_SEED` that reproduce it; the whole
//! input is also written to a file.

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Inputs per target when `FUZZ_ITERATIONS` is not set (the bounded run of the tests).
pub const DEFAULT_ITERATIONS: u64 = 1_000;
/// Largest input a mutation may produce, in bytes.
pub const DEFAULT_MAX_LEN: usize = 256 << 10;

/// What a target made of one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The parser read it.
    Accepted,
    /// The parser refused it (or part of it), saying why; the reason must not be empty.
    Rejected(String),
    /// A property of the target does not hold (e.g. two decoders disagree).
    Broken(String),
}

impl Outcome {
    /// `Rejected(why)` for an error, `Accepted` for a value.
    pub fn of<T, E: std::fmt::Display>(result: &Result<T, E>) -> Self {
        match result {
            Ok(_) => Self::Accepted,
            Err(err) => Self::Rejected(err.to_string()),
        }
    }

    /// The worse of two outcomes (Broken > Rejected > Accepted; an empty reason is kept).
    pub fn and(self, other: Self) -> Self {
        match (self, other) {
            (Self::Broken(a), _) => Self::Broken(a),
            (_, Self::Broken(b)) => Self::Broken(b),
            (Self::Rejected(a), Self::Rejected(b)) => {
                if b.trim().is_empty() && !a.trim().is_empty() {
                    Self::Rejected(b)
                } else {
                    Self::Rejected(a)
                }
            }
            (Self::Rejected(a), Self::Accepted) => Self::Rejected(a),
            (Self::Accepted, other) => other,
        }
    }
}

/// The function a target runs on each input.
pub type TargetFn = Arc<dyn Fn(&[u8]) -> Outcome + Send + Sync>;

/// A little-endian integer field of a binary format: where it starts and how many bytes wide
/// (1, 2, 4 or 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Offset of its first byte.
    pub at: usize,
    /// Width in bytes.
    pub width: usize,
}

/// The header and directory fields of an input (found again in every mutant).
pub type FieldsFn = Arc<dyn Fn(&[u8]) -> Vec<Field> + Send + Sync>;

/// A fuzz target: its name, seeds, dictionary and function.
#[derive(Clone)]
pub struct Target {
    /// Name in reports (`reports`, `cxas_json`, …).
    pub name: &'static str,
    /// Realistic valid inputs; each must be [`Outcome::Accepted`].
    pub seeds: Vec<Vec<u8>>,
    /// Tokens of the format, inserted or overwritten by mutations.
    pub dictionary: Vec<Vec<u8>>,
    /// Largest mutant in bytes.
    pub max_len: usize,
    /// The parser call and its checks.
    pub run: TargetFn,
    /// For binary containers: where their header fields are.
    pub fields: Option<FieldsFn>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("name", &self.name)
            .field("seeds", &self.seeds.len())
            .field("dictionary", &self.dictionary.len())
            .field("max_len", &self.max_len)
            .field("fields", &self.fields.is_some())
            .finish()
    }
}

impl Target {
    /// A target with the given seeds, no dictionary and the default size limit.
    pub fn new(
        name: &'static str,
        seeds: Vec<Vec<u8>>,
        run: impl Fn(&[u8]) -> Outcome + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            seeds,
            dictionary: Vec::new(),
            max_len: DEFAULT_MAX_LEN,
            run: Arc::new(run),
            fields: None,
        }
    }

    /// Mutates the header fields `fields` finds (sizes, counts, offsets) besides the bytes.
    pub fn with_fields(
        mut self,
        fields: impl Fn(&[u8]) -> Vec<Field> + Send + Sync + 'static,
    ) -> Self {
        self.fields = Some(Arc::new(fields));
        self
    }

    /// Adds tokens to the dictionary.
    pub fn with_dictionary<T: AsRef<[u8]>>(mut self, tokens: impl IntoIterator<Item = T>) -> Self {
        self.dictionary
            .extend(tokens.into_iter().map(|t| t.as_ref().to_vec()));
        self
    }

    /// Sets the largest mutant.
    pub fn with_max_len(mut self, max_len: usize) -> Self {
        self.max_len = max_len.max(1);
        self
    }
}

/// How a run is set up (from the environment by [`Config::from_env`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Inputs per target (the seeds included).
    pub iterations: u64,
    /// Base seed of the generators.
    pub seed: u64,
    /// Most time one input may take.
    pub time_limit: Duration,
}

impl Config {
    /// `FUZZ_ITERATIONS`, `FUZZ_SEED`, `FUZZ_TIME_LIMIT_MS`, else 1,000 inputs, seed 0, 2 s.
    pub fn from_env() -> Self {
        let number = |name: &str| {
            std::env::var(name).ok().map(|v| {
                v.trim()
                    .replace('_', "")
                    .parse::<u64>()
                    .unwrap_or_else(|_| panic!("{name}={v} is not a whole number"))
            })
        };
        Self {
            iterations: number("FUZZ_ITERATIONS").unwrap_or(DEFAULT_ITERATIONS),
            seed: number("FUZZ_SEED").unwrap_or(0),
            time_limit: Duration::from_millis(number("FUZZ_TIME_LIMIT_MS").unwrap_or(2_000)),
        }
    }
}

/// What one target's run found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// The target.
    pub target: String,
    /// Inputs run.
    pub executions: u64,
    /// Inputs read.
    pub accepted: u64,
    /// Inputs refused with a reason.
    pub rejected: u64,
    /// Inputs that panicked.
    pub panics: u64,
    /// Inputs over the time bound.
    pub slow: u64,
    /// Inputs refused without a reason, or breaking a property of the target.
    pub broken: u64,
    /// Seeds that were not accepted.
    pub bad_seeds: u64,
    /// The slowest input's time.
    pub slowest: Duration,
    /// Its length in bytes.
    pub slowest_len: usize,
    /// The whole run's time.
    pub elapsed: Duration,
    /// One line per failure (at most 20), with how to reproduce it.
    pub failures: Vec<String>,
}

impl Report {
    /// Whether every input met the properties.
    pub fn passed(&self) -> bool {
        self.panics == 0 && self.slow == 0 && self.broken == 0 && self.bad_seeds == 0
    }

    /// The `fuzz-result` line `scripts/fuzz` reads.
    pub fn line(&self) -> String {
        format!(
            "fuzz-result target={} executions={} accepted={} rejected={} panics={} slow={} \
             broken={} bad_seeds={} slowest_ms={:.3} slowest_len={} elapsed_s={:.2}",
            self.target,
            self.executions,
            self.accepted,
            self.rejected,
            self.panics,
            self.slow,
            self.broken,
            self.bad_seeds,
            self.slowest.as_secs_f64() * 1e3,
            self.slowest_len,
            self.elapsed.as_secs_f64(),
        )
    }
}

thread_local! {
    /// The last panic of a fuzz worker thread: message and location.
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Installs (once) a panic hook that records the panics of fuzz worker threads instead of
/// printing them, and leaves other threads' panics to the previous hook.
fn install_panic_hook() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let is_worker = std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("fuzz-"));
            if is_worker {
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(non-text panic payload)".to_string());
                let location = info
                    .location()
                    .map_or_else(String::new, |l| format!(" at {}:{}", l.file(), l.line()));
                LAST_PANIC.with(|last| *last.borrow_mut() = Some(format!("{message}{location}")));
            } else {
                previous(info);
            }
        }));
    });
}

/// The generator of iteration `i` of `target` under `seed` (independent of other iterations).
fn generator(seed: u64, target: &str, iteration: u64) -> ChaCha8Rng {
    // FNV-1a of the name, then splitmix64 of the mix: stable across platforms and versions.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in target.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut x = seed ^ hash.rotate_left(17) ^ iteration.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ChaCha8Rng::seed_from_u64(x ^ (x >> 31))
}

/// The input of iteration `i`: seed `i` as is for the first iterations, else a mutant of a
/// random seed. Returns the input and the index of the seed it comes from.
pub fn input(target: &Target, seed: u64, iteration: u64) -> (Vec<u8>, usize) {
    let seeds = target.seeds.len();
    if seeds == 0 {
        let mut rng = generator(seed, target.name, iteration);
        let len = rng.random_range(0..64);
        return ((0..len).map(|_| rng.random()).collect(), 0);
    }
    if (iteration as usize) < seeds {
        return (target.seeds[iteration as usize].clone(), iteration as usize);
    }
    let mut rng = generator(seed, target.name, iteration);
    let index = rng.random_range(0..seeds);
    let mut data = target.seeds[index].clone();
    let rounds = 1 + rng.random_range(0..8u32).min(rng.random_range(0..8u32));
    for _ in 0..rounds {
        mutate(&mut data, target, &mut rng);
    }
    data.truncate(target.max_len);
    (data, index)
}

/// Structural tokens every target gets: delimiters, quotes, escapes, control and invalid UTF-8.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b",",
    b"\n",
    b"\r\n",
    b"\r",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b"\0",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"'",
    b"`",
    b"```",
    b"\t",
    b" ",
    b"null",
    b"true",
    b"-",
    b".",
    b"e",
    b"___",
    b"\xff",
    b"\xc3\x28",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf0\x9f\x98",
    b"\xef\xbb\xbf",
    "↪".as_bytes(),
    "é".as_bytes(),
];

/// Numbers that break naive parsers: bounds of integer types, overflow, NaN-ish, floats.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1",
    "2",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "999999999999999999999999999999",
    "1e309",
    "-1e309",
    "1e-400",
    "NaN",
    "nan",
    "-inf",
    "Infinity",
    "1.5",
    "0.0",
    "-1.0",
    "1e5",
    "0x10",
    "00000001",
    "",
];

/// Applies one random mutation to `data`.
fn mutate(data: &mut Vec<u8>, target: &Target, rng: &mut ChaCha8Rng) {
    if let Some(fields) = &target.fields
        && rng.random_bool(0.4)
    {
        let found: Vec<Field> = fields(data)
            .into_iter()
            .filter(|f| matches!(f.width, 1 | 2 | 4 | 8) && f.at + f.width <= data.len())
            .collect();
        if !found.is_empty() {
            set_field(data, found[rng.random_range(0..found.len())], rng);
            return;
        }
    }
    let len = data.len();
    let at = |rng: &mut ChaCha8Rng, len: usize| rng.random_range(0..=len);
    match rng.random_range(0..13u32) {
        // Flip a bit.
        0 if len > 0 => {
            let i = rng.random_range(0..len);
            data[i] ^= 1 << rng.random_range(0..8);
        }
        // Set a byte (often an interesting one).
        1 if len > 0 => {
            let i = rng.random_range(0..len);
            data[i] = match rng.random_range(0..4u32) {
                0 => *[0u8, 0x7f, 0x80, 0xff, b'"', b',', b'\n', b'0', b'9']
                    .get(rng.random_range(0..9))
                    .unwrap_or(&0),
                _ => rng.random(),
            };
        }
        // Insert random bytes.
        2 => {
            let i = at(rng, len);
            let n = rng.random_range(1..=8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            data.splice(i..i, bytes);
        }
        // Delete a range.
        3 if len > 0 => {
            let i = rng.random_range(0..len);
            let n = rng.random_range(1..=(len - i).min(64));
            data.drain(i..i + n);
        }
        // Truncate.
        4 => {
            let i = at(rng, len);
            data.truncate(i);
        }
        // Duplicate a slice somewhere.
        5 if len > 0 => {
            let (start, end) = slice(rng, len, 256);
            let piece = data[start..end].to_vec();
            let i = at(rng, len);
            data.splice(i..i, piece);
        }
        // Repeat a slice many times in place (super-linear behaviour).
        6 if len > 0 => {
            let (start, end) = slice(rng, len, 32);
            let piece = data[start..end].to_vec();
            let times = rng.random_range(2..=512usize);
            let room = target.max_len.saturating_sub(len) / piece.len().max(1);
            let repeated = piece.repeat(times.min(room));
            data.splice(end..end, repeated);
        }
        // Splice with another seed: a prefix of this one and a suffix of the other.
        7 if !target.seeds.is_empty() => {
            let other = &target.seeds[rng.random_range(0..target.seeds.len())];
            let i = at(rng, len);
            let j = rng.random_range(0..=other.len());
            data.truncate(i);
            data.extend_from_slice(&other[j..]);
        }
        // Replace a number by an interesting one.
        8 => {
            let numbers: Vec<(usize, usize)> = number_spans(data);
            let value = NUMBERS[rng.random_range(0..NUMBERS.len())].as_bytes();
            if numbers.is_empty() {
                let i = at(rng, len);
                data.splice(i..i, value.iter().copied());
            } else {
                let (start, end) = numbers[rng.random_range(0..numbers.len())];
                data.splice(start..end, value.iter().copied());
            }
        }
        // Insert a structural token.
        9 | 10 => {
            let token = TOKENS[rng.random_range(0..TOKENS.len())];
            let i = at(rng, len);
            data.splice(i..i, token.iter().copied());
        }
        // Insert or overwrite with a dictionary token.
        11 if !target.dictionary.is_empty() => {
            let token = &target.dictionary[rng.random_range(0..target.dictionary.len())];
            let i = at(rng, len);
            if rng.random_bool(0.5) {
                data.splice(i..i, token.iter().copied());
            } else {
                let end = (i + token.len()).min(len);
                data.splice(i..end, token.iter().copied());
            }
        }
        // Swap two bytes.
        12 if len > 1 => {
            let (i, j) = (rng.random_range(0..len), rng.random_range(0..len));
            data.swap(i, j);
        }
        // The chosen mutation did not apply (empty input): insert a token instead.
        _ => {
            let token = TOKENS[rng.random_range(0..TOKENS.len())];
            let i = at(rng, len);
            data.splice(i..i, token.iter().copied());
        }
    }
}

/// Sets a header field to an extreme value of its width, or just off its current one.
fn set_field(data: &mut [u8], field: Field, rng: &mut ChaCha8Rng) {
    let bytes = &mut data[field.at..field.at + field.width];
    let mut current = [0u8; 8];
    current[..field.width].copy_from_slice(bytes);
    let current = u64::from_le_bytes(current);
    let max = if field.width == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * field.width)) - 1
    };
    let value = match rng.random_range(0..9u32) {
        0 => 0,
        1 => 1,
        2 => max,
        3 => max / 2 + 1,
        4 => max - 1,
        5 => current.wrapping_add(1) & max,
        6 => current.wrapping_sub(1) & max,
        7 => current.wrapping_mul(2) & max,
        _ => rng.random::<u64>() & max,
    };
    bytes.copy_from_slice(&value.to_le_bytes()[..field.width]);
}

/// A random non-empty slice `start..end` of at most `most` bytes of a `len`-byte input.
fn slice(rng: &mut ChaCha8Rng, len: usize, most: usize) -> (usize, usize) {
    let start = rng.random_range(0..len);
    let end = start + rng.random_range(1..=(len - start).min(most));
    (start, end)
}

/// The spans of the numbers in `data` (an optional `-`, digits, `.`, digits).
fn number_spans(data: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if data[i].is_ascii_digit() {
            let start = if i > 0 && data[i - 1] == b'-' {
                i - 1
            } else {
                i
            };
            while i < data.len() && (data[i].is_ascii_digit() || data[i] == b'.') {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// The first `most` bytes of `data`, escaped (printable ASCII as is, the rest `\xNN`).
pub fn escaped(data: &[u8], most: usize) -> String {
    let mut out: String = data
        .iter()
        .take(most)
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect();
    if data.len() > most {
        out.push_str(&format!("… ({} bytes in all)", data.len()));
    }
    out
}

/// Writes a failing input where it can be found again; the path, or why not.
fn save(target: &str, iteration: u64, data: &[u8]) -> String {
    let dir = std::env::temp_dir().join("cxrlake-fuzz");
    let path = dir.join(format!("{target}-{iteration}.bin"));
    let written = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, data));
    match written {
        Ok(()) => path.display().to_string(),
        Err(err) => format!("(not saved: {err})"),
    }
}

/// The iteration being run and since when, for the watchdog.
struct Current {
    iteration: u64,
    seed_index: usize,
    data: Vec<u8>,
    started: Instant,
}

/// Runs `target` for `config.iterations` inputs on a worker thread and reports what happened.
/// An input that runs longer than 10 × the time bound (at least 10 s) is reported as hung and
/// the run stops there (the worker is left behind).
pub fn run(target: &Target, config: Config) -> Report {
    install_panic_hook();
    let started = Instant::now();
    let current = Arc::new(Mutex::new(None::<Current>));
    let done = Arc::new(AtomicU64::new(0));
    let worker = {
        let (target, current, done) = (target.clone(), current.clone(), done.clone());
        std::thread::Builder::new()
            .name(format!("fuzz-{}", target.name))
            .stack_size(16 << 20)
            .spawn(move || fuzz_loop(&target, config, &current, &done))
            .expect("spawn the fuzz worker")
    };
    let hang_limit = (config.time_limit * 10).max(Duration::from_secs(10));
    loop {
        if worker.is_finished() {
            let mut report = worker.join().unwrap_or_else(|_| Report {
                failures: vec!["the fuzz worker itself panicked".to_string()],
                broken: 1,
                ..Report::default()
            });
            report.target = target.name.to_string();
            report.elapsed = started.elapsed();
            return report;
        }
        std::thread::sleep(Duration::from_millis(20));
        let guard = current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(now) = guard.as_ref()
            && now.started.elapsed() > hang_limit
        {
            let saved = save(target.name, now.iteration, &now.data);
            return Report {
                target: target.name.to_string(),
                executions: done.load(Ordering::Relaxed) + 1,
                slow: 1,
                slowest: now.started.elapsed(),
                slowest_len: now.data.len(),
                elapsed: started.elapsed(),
                failures: vec![format!(
                    "HUNG > {:.0?} at iteration {} (seed {}, {} bytes, saved to {saved}): \
                     {}\n  reproduce: FUZZ_SEED={} FUZZ_ITERATIONS={}",
                    hang_limit,
                    now.iteration,
                    now.seed_index,
                    now.data.len(),
                    escaped(&now.data, 600),
                    config.seed,
                    now.iteration + 1,
                )],
                ..Report::default()
            };
        }
    }
}

fn fuzz_loop(
    target: &Target,
    config: Config,
    current: &Mutex<Option<Current>>,
    done: &AtomicU64,
) -> Report {
    let mut report = Report::default();
    for iteration in 0..config.iterations {
        let (data, seed_index) = input(target, config.seed, iteration);
        let started = Instant::now();
        *current.lock().unwrap_or_else(|e| e.into_inner()) = Some(Current {
            iteration,
            seed_index,
            data: data.clone(),
            started,
        });
        LAST_PANIC.with(|last| last.borrow_mut().take());
        let outcome = catch_unwind(AssertUnwindSafe(|| (target.run)(&data)));
        let took = started.elapsed();
        report.executions += 1;
        done.store(report.executions, Ordering::Relaxed);
        if took > report.slowest {
            report.slowest = took;
            report.slowest_len = data.len();
        }
        let is_seed = (iteration as usize) < target.seeds.len();
        let failure = match outcome {
            Err(_) => {
                report.panics += 1;
                let message = LAST_PANIC
                    .with(|last| last.borrow_mut().take())
                    .unwrap_or_else(|| "(no message)".to_string());
                Some(format!("PANIC {message}"))
            }
            Ok(Outcome::Accepted) => {
                report.accepted += 1;
                None
            }
            Ok(Outcome::Rejected(reason)) if reason.trim().is_empty() => {
                report.broken += 1;
                Some("REJECTED WITHOUT A REASON".to_string())
            }
            Ok(Outcome::Rejected(reason)) => {
                report.rejected += 1;
                is_seed.then(|| {
                    report.bad_seeds += 1;
                    format!("SEED NOT ACCEPTED: {reason}")
                })
            }
            Ok(Outcome::Broken(why)) => {
                report.broken += 1;
                Some(format!("PROPERTY BROKEN: {why}"))
            }
        };
        let failure = failure.or_else(|| {
            (took > config.time_limit).then(|| {
                report.slow += 1;
                format!("SLOW {took:.2?} > {:.0?}", config.time_limit)
            })
        });
        if let Some(what) = failure
            && report.failures.len() < 20
        {
            let saved = save(target.name, iteration, &data);
            report.failures.push(format!(
                "{what}\n  iteration {iteration} (seed {seed_index}, {} bytes, saved to {saved}): \
                 {}\n  reproduce: FUZZ_SEED={} FUZZ_ITERATIONS={}",
                data.len(),
                escaped(&data, 600),
                config.seed,
                iteration + 1,
            ));
        }
    }
    *current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    report
}

/// Runs `target` under [`Config::from_env`], prints its `fuzz-result` line and the failures on
/// stderr, and panics when an input broke a property (the test fails).
pub fn check(target: &Target) -> Report {
    let report = run(target, Config::from_env());
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", report.line());
    for failure in &report.failures {
        let _ = writeln!(err, "  {}: {failure}", report.target);
    }
    drop(err);
    assert!(
        report.passed(),
        "fuzz target {}: {} panic(s), {} slow, {} broken, {} bad seed(s) in {} executions:\n{}",
        report.target,
        report.panics,
        report.slow,
        report.broken,
        report.bad_seeds,
        report.executions,
        report.failures.join("\n"),
    );
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> Target {
        Target::new(
            "echo",
            vec![b"{\"a\": [1, 2.5, -3]}".to_vec(), b"x,y\n1,2\n".to_vec()],
            |d| {
                if d.is_empty() {
                    Outcome::Rejected("empty".into())
                } else {
                    Outcome::Accepted
                }
            },
        )
        .with_dictionary(["counts"])
        .with_max_len(4096)
    }

    #[test]
    fn inputs_are_deterministic_and_bounded() {
        let target = echo();
        for i in 0..500 {
            let (a, seed_a) = input(&target, 7, i);
            let (b, seed_b) = input(&target, 7, i);
            assert_eq!((a.clone(), seed_a), (b, seed_b));
            assert!(a.len() <= 4096);
        }
        assert_eq!(input(&target, 7, 0).0, target.seeds[0]);
        let differ = (2..100)
            .filter(|&i| input(&target, 1, i) != input(&target, 2, i))
            .count();
        assert!(differ > 50, "{differ}");
    }

    #[test]
    fn numbers_are_found() {
        assert_eq!(number_spans(b"a -12.5 b 7"), [(2, 7), (10, 11)]);
        assert_eq!(escaped(b"a\n\xff", 10), "a\\n\\xff");
    }

    #[test]
    fn panics_and_missing_reasons_fail_the_run() {
        let seeds = vec![b"ok".to_vec(), b"x".to_vec()];
        let target = Target::new("boom", seeds, |d| match d.first() {
            Some(b'o') if d.len() == 2 => Outcome::Accepted,
            Some(b'x') => panic!("boom"),
            _ => Outcome::Rejected(String::new()),
        });
        let config = Config {
            iterations: 200,
            seed: 3,
            time_limit: Duration::from_secs(2),
        };
        let report = run(&target, config);
        assert_eq!(report.executions, 200);
        assert!(!report.passed());
        assert!(report.broken > 0);
        // The second seed panics: reported with its message, place and input.
        assert!(report.panics > 0);
        let first = &report.failures[0];
        assert!(first.starts_with("PANIC boom at "), "{first}");
        assert!(first.contains("iteration 1 (seed 1, 1 bytes"), "{first}");
        assert_eq!(
            report.accepted + report.rejected + report.panics + report.broken,
            200
        );
    }

    #[test]
    fn outcomes_combine_to_the_worst() {
        let rejected = Outcome::Rejected("why".into());
        assert_eq!(Outcome::Accepted.and(rejected.clone()), rejected);
        assert_eq!(rejected.clone().and(Outcome::Accepted), rejected);
        let broken = Outcome::Broken("b".into());
        assert_eq!(rejected.clone().and(broken.clone()), broken);
        let empty = Outcome::Rejected(" ".into());
        assert_eq!(rejected.and(empty.clone()), empty);
    }
}
