//! Box coordinate frames: the lake keeps boxes in original pixels; Chest ImaGenome's resized
//! frame, in which GEMeX's examples give locations, is 224 × 224.
//!
//! ```text
//!  original (w × h) ──× s, + pad──► 224 × 224     s = 224 / max(w, h)
//!                                                 pad = ((224 − w·s) / 2, (224 − h·s) / 2)
//! ```
//!
//! The image is scaled so that its longer side is 224 and centred with padding on the shorter
//! side, as Chest ImaGenome's `x1..y2` relate to its `original_x1..original_y2` (and as
//! `cxrlake-synth` writes them). Coordinates stay fractional; exports round them.

/// The side of Chest ImaGenome's resized frame.
pub const SIZE: f32 = 224.0;

/// The scale and the padding (x, y) from original pixels to the 224 frame.
fn transform(width: u32, height: u32) -> (f32, f32, f32) {
    let longer = width.max(height).max(1) as f32;
    let scale = SIZE / longer;
    (
        scale,
        (SIZE - width as f32 * scale) / 2.0,
        (SIZE - height as f32 * scale) / 2.0,
    )
}

/// A box `[x1, y1, x2, y2]` of a `width` × `height` image in the 224 × 224 frame.
pub fn to_224(bbox: [f32; 4], width: u32, height: u32) -> [f32; 4] {
    let (scale, pad_x, pad_y) = transform(width, height);
    [
        bbox[0] * scale + pad_x,
        bbox[1] * scale + pad_y,
        bbox[2] * scale + pad_x,
        bbox[3] * scale + pad_y,
    ]
}

/// A box of the 224 × 224 frame in original pixels of a `width` × `height` image (the inverse of
/// [`to_224`]).
pub fn from_224(bbox: [f32; 4], width: u32, height: u32) -> [f32; 4] {
    let (scale, pad_x, pad_y) = transform(width, height);
    [
        (bbox[0] - pad_x) / scale,
        (bbox[1] - pad_y) / scale,
        (bbox[2] - pad_x) / scale,
        (bbox[3] - pad_y) / scale,
    ]
}

/// A box cut to the image `[0, width] × [0, height]` (Chest ImaGenome's silver boxes run past the
/// border now and then), with its corners ordered.
pub fn clamp(bbox: [f32; 4], width: u32, height: u32) -> [f32; 4] {
    let (w, h) = (width as f32, height as f32);
    let x = |v: f32| v.clamp(0.0, w);
    let y = |v: f32| v.clamp(0.0, h);
    [
        x(bbox[0].min(bbox[2])),
        y(bbox[1].min(bbox[3])),
        x(bbox[0].max(bbox[2])),
        y(bbox[1].max(bbox[3])),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: [f32; 4], b: [f32; 4], tolerance: f32) -> bool {
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= tolerance)
    }

    #[test]
    fn the_longer_side_fills_the_frame_and_the_shorter_is_centred() {
        // Portrait 2000 × 2500: scale 224/2500, x padding (224 − 179.2) / 2 = 22.4.
        assert!(close(
            to_224([0.0, 0.0, 2000.0, 2500.0], 2000, 2500),
            [22.4, 0.0, 201.6, 224.0],
            1e-3
        ));
        // Landscape 3000 × 2000: y padding (224 − 149.33) / 2.
        assert!(close(
            to_224([1500.0, 1000.0, 3000.0, 2000.0], 3000, 2000),
            [112.0, 112.0, 224.0, 186.666_67],
            1e-3
        ));
        // Square: a plain scale.
        assert_eq!(
            to_224([112.0, 224.0, 336.0, 448.0], 448, 448),
            [56.0, 112.0, 168.0, 224.0]
        );
    }

    #[test]
    fn boxes_round_trip() {
        // A seeded sweep over image sizes and boxes (a small LCG; no dependency needed).
        let mut state: u64 = 0x5eed;
        let mut next = |bound: u32| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % u64::from(bound)) as u32
        };
        for _ in 0..1000 {
            let (width, height) = (200 + next(4000), 200 + next(4000));
            let x1 = next(width) as f32;
            let y1 = next(height) as f32;
            let bbox = [
                x1,
                y1,
                x1 + next(width - x1 as u32 + 1) as f32,
                y1 + next(height - y1 as u32 + 1) as f32,
            ];
            let framed = to_224(bbox, width, height);
            assert!(
                framed.iter().all(|v| (0.0..=SIZE + 1e-3).contains(v)),
                "{framed:?}"
            );
            let back = from_224(framed, width, height);
            assert!(close(back, bbox, 0.01), "{bbox:?} → {framed:?} → {back:?}");
        }
    }

    #[test]
    fn clamping_keeps_boxes_inside_the_image() {
        assert_eq!(
            clamp([-5.0, 10.0, 120.0, 90.0], 100, 80),
            [0.0, 10.0, 100.0, 80.0]
        );
        assert_eq!(
            clamp([50.0, 40.0, 10.0, 5.0], 100, 80),
            [10.0, 5.0, 50.0, 40.0]
        );
    }
}
