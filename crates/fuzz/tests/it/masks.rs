//! COCO compressed RLE: `decode_counts`, `summarize` and `Rle`. The input is `height width`
//! on the first line and the counts string after it, so mutations reach the size too. Besides
//! "no panic", two properties: `summarize` agrees with decoding and asking [`Rle`] (its
//! documented contract), and decoding what `encode_counts` wrote gives the runs back.

use cxrlake_fuzz::{Outcome, Target, check};
use cxrlake_masks::{Rle, decode_counts, encode_counts, summarize};

/// `height width\ncounts`; a size that does not read is 0 (and a huge one is capped at u32).
fn split_input(data: &[u8]) -> (u32, u32, String) {
    let text = String::from_utf8_lossy(data);
    let (size, counts) = text.split_once('\n').unwrap_or(("", &text));
    let mut numbers = size.split_whitespace().map(|n| {
        n.parse::<u64>()
            .map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX))
    });
    let height = numbers.next().unwrap_or(0);
    let width = numbers.next().unwrap_or(0);
    (height, width, counts.to_string())
}

fn rle_outcome(data: &[u8]) -> Outcome {
    let (height, width, counts) = split_input(data);
    let summary = summarize(&counts, height, width);
    let decoded = decode_counts(&counts);
    if let Ok(runs) = &decoded {
        let again = decode_counts(&encode_counts(runs));
        if again.as_ref() != Ok(runs) {
            return Outcome::Broken(format!(
                "encode then decode changed the runs: {runs:?} → {again:?}"
            ));
        }
    }
    let rle = decoded.and_then(|runs| Rle::new(height, width, runs));
    match (&summary, &rle) {
        (Ok(summary), Ok(rle)) => {
            if (summary.area, summary.bbox) != (rle.area(), rle.bbox()) {
                return Outcome::Broken(format!(
                    "summarize says area {} box {:?}, Rle says area {} box {:?}",
                    summary.area,
                    summary.bbox,
                    rle.area(),
                    rle.bbox()
                ));
            }
            if summary.area > u64::from(height) * u64::from(width) {
                return Outcome::Broken(format!(
                    "area {} of a {height}x{width} mask",
                    summary.area
                ));
            }
            Outcome::Accepted
        }
        (Err(a), Err(b)) => Outcome::Rejected(a.to_string()).and(Outcome::Rejected(b.to_string())),
        (Ok(_), Err(err)) => Outcome::Broken(format!("summarize accepts what Rle refuses: {err}")),
        (Err(err), Ok(_)) => Outcome::Broken(format!("Rle accepts what summarize refuses: {err}")),
    }
}

#[test]
fn rle_counts() {
    let mask = |height: u32, width: u32, runs: &[u32]| {
        format!("{height} {width}\n{}", encode_counts(runs)).into_bytes()
    };
    let seeds = vec![
        mask(4, 5, &[2, 6, 4, 3, 5]),
        mask(4, 5, &[20]),
        mask(4, 5, &[0, 20]),
        mask(3, 1, &[0, 1, 1, 1]),
        mask(1, 1, &[1]),
        mask(0, 0, &[]),
        mask(
            3056,
            2544,
            &[1_000_000, 4_000, 3_000_000, 70_000, 3_700_464],
        ),
        mask(65_535, 65_535, &[0, 4_294_836_225]),
        mask(65_535, 65_535, &[4_294_836_225]),
        // A real-looking CXAS counts string (a disc: many small deltas).
        {
            let dense: Vec<u8> = (0..64 * 64)
                .map(|i| {
                    let (y, x) = (i / 64 - 30, i % 64 - 34);
                    u8::from(x * x + y * y < 400)
                })
                .collect();
            let rle = Rle::from_dense(&dense, 64, 64).expect("a 64x64 mask");
            mask(64, 64, rle.counts())
        },
    ];
    check(
        &Target::new("rle_counts", seeds, rle_outcome)
            .with_dictionary(["0", "1", "?", "_", "o", "`", "P", "\n", " ", "4294967295"])
            .with_max_len(64 << 10),
    );
}

#[test]
fn sizes_read_from_the_first_line() {
    assert_eq!(split_input(b"4 5\n0"), (4, 5, "0".to_string()));
    assert_eq!(split_input(b"99999999999 x\n0").0, u32::MAX);
    assert_eq!(split_input(b"no size"), (0, 0, "no size".to_string()));
}
