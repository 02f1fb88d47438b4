//! A simple geometric chest model shared by the ImaGenome boxes and the CXAS masks.
//!
//! Each structure is a union of convex outlines (polygons, ellipses) optionally clipped to a
//! rectangle, so every image column meets it in at most one interval: masks are rasterised
//! straight into column runs and boxes are the extents of those runs, which makes a box and the
//! mask of the same structure agree to the pixel. Radiological convention: the patient's right
//! is on the image's left (small x).
//!
//! ```text
//!   x →      right lung        mediastinum        left lung
//!   y ↓    (image left)   trachea/spine/heart   (image right)
//! ```

use rand::Rng;

use crate::rle::{Rle, RleBuilder};

/// A convex outline in pixel coordinates.
#[derive(Debug, Clone)]
pub enum Outline {
    /// Convex polygon (any winding).
    Polygon(Vec<(f64, f64)>),
    /// Axis-aligned ellipse.
    Ellipse {
        /// Centre x.
        cx: f64,
        /// Centre y.
        cy: f64,
        /// Half width.
        rx: f64,
        /// Half height.
        ry: f64,
    },
}

impl Outline {
    fn x_range(&self) -> (f64, f64) {
        match self {
            Self::Polygon(points) => points
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                    (lo.min(p.0), hi.max(p.0))
                }),
            Self::Ellipse { cx, rx, .. } => (cx - rx, cx + rx),
        }
    }
}

/// A structure: the per-column hull of its outlines, clipped to a rectangle.
#[derive(Debug, Clone)]
pub struct Shape {
    outlines: Vec<Outline>,
    clip: [f64; 4],
}

impl Shape {
    /// A shape from outlines, unclipped.
    pub fn new(outlines: Vec<Outline>) -> Self {
        Self {
            outlines,
            clip: [
                f64::NEG_INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
                f64::INFINITY,
            ],
        }
    }

    /// An axis-aligned rectangle `[x0, y0, x1, y1]`.
    pub fn rect(x0: f64, y0: f64, x1: f64, y1: f64) -> Self {
        Self::new(vec![Outline::Polygon(vec![
            (x0, y0),
            (x1, y0),
            (x1, y1),
            (x0, y1),
        ])])
    }

    /// The same shape restricted to `[x0, y0, x1, y1]`.
    pub fn clipped(&self, x0: f64, y0: f64, x1: f64, y1: f64) -> Self {
        let [a, b, c, d] = self.clip;
        Self {
            outlines: self.outlines.clone(),
            clip: [a.max(x0), b.max(y0), c.min(x1), d.min(y1)],
        }
    }

    /// The union (per-column hull) of two shapes; clips are dropped, so clip afterwards.
    pub fn union(&self, other: &Self) -> Self {
        Self::new(
            self.outlines
                .iter()
                .chain(&other.outlines)
                .cloned()
                .collect(),
        )
    }

    /// Rasterises into runs for an image of `height` x `width` (pixel centres inside).
    pub fn rasterize(&self, height: u32, width: u32) -> Raster {
        let builder = self.raster(
            height,
            width,
            RleBuilder::new(height, width),
            |b, x, y0, y1| {
                b.push_column(x, y0, y1);
            },
        );
        let extent = builder.extent();
        Raster {
            rle: builder.finish(),
            extent,
        }
    }

    /// Inclusive pixel extent `[x0, y0, x1, y1]` of the rasterised shape, if any pixel is set.
    pub fn extent(&self, height: u32, width: u32) -> Option<[u32; 4]> {
        self.raster(
            height,
            width,
            None,
            |acc: &mut Option<[u32; 4]>, x, y0, y1| {
                if y0 < y1 {
                    *acc = Some(match *acc {
                        None => [x, y0, x, y1 - 1],
                        Some([bx0, by0, _, by1]) => [bx0, by0.min(y0), x, by1.max(y1 - 1)],
                    });
                }
            },
        )
    }

    fn raster<A>(
        &self,
        height: u32,
        width: u32,
        mut acc: A,
        mut emit: impl FnMut(&mut A, u32, u32, u32),
    ) -> A {
        let (mut x_lo, mut x_hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for outline in &self.outlines {
            let (a, b) = outline.x_range();
            x_lo = x_lo.min(a);
            x_hi = x_hi.max(b);
        }
        let x_lo = x_lo.max(self.clip[0]).max(0.0) as u32;
        let x_hi = ((x_hi.min(self.clip[2]).max(0.0) as u32) + 1).min(width);
        let h = f64::from(height);
        let mut scan = ColumnScan::new(self);
        for px in x_lo..x_hi {
            if let Some((a, b)) = scan.interval(f64::from(px) + 0.5) {
                // Rows whose centre y + 0.5 lies in [a, b]: y0 = ceil(a - 0.5), y1 = floor(b - 0.5) + 1.
                let a = (a - 0.5).clamp(0.0, h);
                let b = (b + 0.5).clamp(0.0, h);
                let y0 = a as u32 + u32::from(a.fract() > 0.0);
                let y1 = b as u32;
                emit(&mut acc, px, y0, y1.min(height));
            }
        }
        acc
    }
}

/// One polygon edge, kept in its outline's winding order.
#[derive(Debug, Clone, Copy)]
struct Edge {
    /// Smaller and larger x of the two ends.
    xa: f64,
    xb: f64,
    from: (f64, f64),
    to: (f64, f64),
}

impl Edge {
    /// The edge's y range at `x` (`xa <= x <= xb`): both ends for a vertical edge.
    fn span(&self, x: f64) -> (f64, f64) {
        let ((x0, y0), (x1, y1)) = (self.from, self.to);
        if (x1 - x0).abs() < 1e-9 {
            (y0.min(y1), y0.max(y1))
        } else {
            let y = y0 + (y1 - y0) * (x - x0) / (x1 - x0);
            (y, y)
        }
    }
}

/// An outline walked column by column.
enum OutlineScan {
    /// Edges sorted by `xa`; `next` is the first not yet reached, `active` those spanning x.
    Polygon {
        edges: Vec<Edge>,
        next: usize,
        active: Vec<Edge>,
    },
    Ellipse {
        cx: f64,
        cy: f64,
        rx: f64,
        ry: f64,
    },
}

/// A shape walked left to right: a polygon's edges enter an active list when x reaches them
/// and leave it once x passes them, so a column costs the few edges spanning it instead of
/// every edge of every outline. x must not decrease between calls.
struct ColumnScan {
    outlines: Vec<OutlineScan>,
    clip: [f64; 4],
}

impl ColumnScan {
    fn new(shape: &Shape) -> Self {
        let outlines = shape
            .outlines
            .iter()
            .map(|outline| match outline {
                Outline::Polygon(points) => {
                    let mut edges: Vec<Edge> = (0..points.len())
                        .map(|i| {
                            let (from, to) = (points[i], points[(i + 1) % points.len()]);
                            Edge {
                                xa: from.0.min(to.0),
                                xb: from.0.max(to.0),
                                from,
                                to,
                            }
                        })
                        .collect();
                    edges.sort_by(|a, b| a.xa.total_cmp(&b.xa));
                    OutlineScan::Polygon {
                        edges,
                        next: 0,
                        active: Vec::with_capacity(4),
                    }
                }
                &Outline::Ellipse { cx, cy, rx, ry } => OutlineScan::Ellipse { cx, cy, rx, ry },
            })
            .collect();
        Self {
            outlines,
            clip: shape.clip,
        }
    }

    /// The shape's y interval in column `x`: the hull of its outlines' intervals, clipped.
    fn interval(&mut self, x: f64) -> Option<(f64, f64)> {
        if x < self.clip[0] || x > self.clip[2] {
            return None;
        }
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for outline in &mut self.outlines {
            let (a, b) = match outline {
                OutlineScan::Polygon {
                    edges,
                    next,
                    active,
                } => {
                    while *next < edges.len() && edges[*next].xa <= x {
                        active.push(edges[*next]);
                        *next += 1;
                    }
                    active.retain(|edge| edge.xb >= x);
                    let (mut a, mut b) = (f64::INFINITY, f64::NEG_INFINITY);
                    for edge in active.iter() {
                        let (y0, y1) = edge.span(x);
                        a = a.min(y0);
                        b = b.max(y1);
                    }
                    if a >= b {
                        continue;
                    }
                    (a, b)
                }
                &mut OutlineScan::Ellipse { cx, cy, rx, ry } => {
                    let dx = (x - cx) / rx;
                    if dx.abs() < 1.0 {
                        let dy = ry * (1.0 - dx * dx).sqrt();
                        (cy - dy, cy + dy)
                    } else {
                        continue;
                    }
                }
            };
            lo = lo.min(a);
            hi = hi.max(b);
        }
        let (lo, hi) = (lo.max(self.clip[1]), hi.min(self.clip[3]));
        (lo < hi).then_some((lo, hi))
    }
}

/// A rasterised structure: its runs and inclusive pixel extent.
#[derive(Debug, Clone)]
pub struct Raster {
    /// Column-major runs.
    pub rle: Rle,
    /// Inclusive `[x0, y0, x1, y1]`, if any pixel is set.
    pub extent: Option<[u32; 4]>,
}

impl Raster {
    /// COCO `[x, y, w, h]` box (zeros when empty).
    pub fn coco_bbox(&self) -> [u32; 4] {
        self.extent.map_or([0; 4], |[x0, y0, x1, y1]| {
            [x0, y0, x1 - x0 + 1, y1 - y0 + 1]
        })
    }
}

/// A named structure of one image. Names are CXAS labels, or `ig:` + an ImaGenome box name
/// for boxes that have no CXAS counterpart (never written as masks).
#[derive(Debug, Clone)]
pub struct Structure {
    /// CXAS label or `ig:`-prefixed ImaGenome-only name.
    pub name: &'static str,
    /// Geometry in pixels.
    pub shape: Shape,
}

/// The structures of one image.
#[derive(Debug, Clone)]
pub struct Anatomy {
    /// Image width (Columns).
    pub width: u32,
    /// Image height (Rows).
    pub height: u32,
    /// All structures, CXAS ones first in CXAS label order of the source table.
    pub structures: Vec<Structure>,
}

impl Anatomy {
    /// Looks a structure up by name.
    pub fn get(&self, name: &str) -> Option<&Structure> {
        self.structures.iter().find(|s| s.name == name)
    }
}

fn convex_hull(mut points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let cross = |o: (f64, f64), a: (f64, f64), b: (f64, f64)| {
        (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
    };
    let mut hull: Vec<(f64, f64)> = Vec::with_capacity(points.len() * 2);
    for pass in 0..2 {
        let start = hull.len();
        let iter: Box<dyn Iterator<Item = &(f64, f64)>> = if pass == 0 {
            Box::new(points.iter())
        } else {
            Box::new(points.iter().rev())
        };
        for &p in iter {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], p) <= 0.0
            {
                hull.pop();
            }
            hull.push(p);
        }
        hull.pop();
    }
    hull
}

fn ellipse_points(cx: f64, cy: f64, rx: f64, ry: f64) -> Vec<(f64, f64)> {
    (0..16)
        .map(|i| {
            let t = f64::from(i) * std::f64::consts::TAU / 16.0;
            (cx + rx * t.cos(), cy + ry * t.sin())
        })
        .collect()
}

/// Frontal (PA/AP) anatomy. `heart_enlargement` 0..=3 widens the heart (cardiomegaly).
pub fn frontal<R: Rng>(rng: &mut R, width: u32, height: u32, heart_enlargement: u8) -> Anatomy {
    let (w, h) = (f64::from(width), f64::from(height));
    let base = w.min(h);
    let cx = w * rng.random_range(0.47..0.53);
    let half = base * rng.random_range(0.36..0.42);
    let top = h * if h >= w {
        rng.random_range(0.07..0.12)
    } else {
        rng.random_range(0.04..0.08)
    };
    let lh = (base * rng.random_range(0.62..0.72)).min(h * 0.84 - top);
    let bottom_r = top + lh;
    let bottom_l = bottom_r + base * rng.random_range(0.0..0.03);
    let side = |sign: f64, bottom: f64, medial_low: f64| {
        vec![
            (cx + sign * 0.55 * half, top),
            (cx + sign * 0.90 * half, top + 0.16 * lh),
            (cx + sign * 0.98 * half, bottom),
            (cx + sign * medial_low * half, bottom - 0.10 * lh),
            (cx + sign * 0.10 * half, top + 0.14 * lh),
        ]
    };
    let right_lung = Shape::new(vec![Outline::Polygon(side(-1.0, bottom_r, 0.20))]);
    let left_lung = Shape::new(vec![Outline::Polygon(side(1.0, bottom_l, 0.30))]);
    let band = |lung: &Shape, bottom: f64, f0: f64, f1: f64| {
        let span = bottom - top;
        lung.clipped(
            f64::NEG_INFINITY,
            top + f0 * span,
            f64::INFINITY,
            top + f1 * span,
        )
    };
    let zones = |lung: &Shape, bottom: f64| {
        [
            band(lung, bottom, 0.0, 0.15),
            band(lung, bottom, 0.15, 0.40),
            band(lung, bottom, 0.40, 0.68),
            band(lung, bottom, 0.68, 1.0),
        ]
    };
    let [r_apical, r_upper, r_mid, r_base] = zones(&right_lung, bottom_r);
    let [l_apical, l_upper, l_mid, l_base] = zones(&left_lung, bottom_l);

    let ctr = rng.random_range(0.42..0.50) + 0.06 * f64::from(heart_enlargement);
    let rx = ctr * half;
    let ry = rx * rng.random_range(0.72..0.82);
    let hcx = cx + 0.35 * rx;
    let hcy = bottom_r - 0.75 * ry;
    let heart = Shape::new(vec![Outline::Ellipse {
        cx: hcx,
        cy: hcy,
        rx,
        ry,
    }])
    .clipped(
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        bottom_l,
    );
    let heart_top = hcy - ry;
    let mediastinum_top = top - 0.03 * lh;
    let mut hull_points = ellipse_points(hcx, hcy, rx, ry);
    hull_points.push((cx - 0.15 * half, mediastinum_top));
    hull_points.push((cx + 0.17 * half, mediastinum_top));
    let cardiomediastinum = Shape::new(vec![Outline::Polygon(convex_hull(hull_points))]).clipped(
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        bottom_l,
    );
    let upper_mediastinum = Shape::rect(
        cx - 0.15 * half,
        mediastinum_top,
        cx + 0.17 * half,
        heart_top,
    );
    let lower_mediastinum =
        cardiomediastinum.clipped(f64::NEG_INFINITY, heart_top, f64::INFINITY, f64::INFINITY);

    let trachea_top = (top - 0.15 * lh).max(0.0);
    let carina_y = top + 0.30 * lh;
    let trachea = Shape::rect(cx - 0.035 * half, trachea_top, cx + 0.035 * half, carina_y);
    let bifurcation = Shape::new(vec![Outline::Polygon(vec![
        (cx, carina_y - 0.03 * lh),
        (cx - 0.09 * half, carina_y + 0.06 * lh),
        (cx + 0.09 * half, carina_y + 0.06 * lh),
    ])]);
    let spine_x = (cx - 0.08 * half, cx + 0.08 * half);
    let spine_bottom = (bottom_l + 0.25 * lh).min(h);
    let thoracic_top = top - 0.08 * lh;
    let thoracic_bottom = bottom_l + 0.02 * lh;
    let spine = Shape::rect(spine_x.0, 0.0, spine_x.1, spine_bottom);
    let cervical = Shape::rect(spine_x.0, 0.0, spine_x.1, thoracic_top.max(1.0));
    let thoracic = Shape::rect(spine_x.0, thoracic_top, spine_x.1, thoracic_bottom);
    let lumbar = Shape::rect(spine_x.0, thoracic_bottom, spine_x.1, spine_bottom);
    let vertebra = |i: usize| {
        let step = (thoracic_bottom - thoracic_top) / 12.0;
        let y0 = thoracic_top + step * i as f64;
        Shape::rect(spine_x.0, y0 + 0.08 * step, spine_x.1, y0 + step)
    };

    let clavicle = |sign: f64| {
        let t = 0.035 * lh;
        let (mx, my) = (cx + sign * 0.07 * half, top + 0.07 * lh);
        let (lx, ly) = (cx + sign * 0.85 * half, top - 0.02 * lh);
        Shape::new(vec![Outline::Polygon(vec![
            (mx, my),
            (lx, ly),
            (lx, ly + t),
            (mx, my + t),
        ])])
    };
    let clavicle_right = clavicle(-1.0);
    let clavicle_left = clavicle(1.0);
    let hemidiaphragm = |sign: f64, bottom: f64| {
        Shape::new(vec![Outline::Polygon(vec![
            (cx + sign * 0.98 * half, bottom),
            (cx + sign * 0.55 * half, bottom - 0.08 * lh),
            (cx + sign * 0.12 * half, bottom - 0.04 * lh),
            (cx + sign * 0.12 * half, bottom + 0.03 * lh),
            (cx + sign * 0.98 * half, bottom + 0.03 * lh),
        ])])
    };
    let right_hemidiaphragm = hemidiaphragm(-1.0, bottom_r);
    let left_hemidiaphragm = hemidiaphragm(1.0, bottom_l);

    let arch_y = top + 0.22 * lh;
    let aortic_arch = Shape::new(vec![Outline::Ellipse {
        cx: cx + 0.06 * half,
        cy: arch_y,
        rx: 0.13 * half,
        ry: 0.05 * lh,
    }]);
    let descending = Shape::rect(
        cx + 0.07 * half,
        arch_y,
        cx + 0.17 * half,
        bottom_l - 0.05 * lh,
    );
    let ascending = Shape::rect(
        cx - 0.10 * half,
        arch_y,
        cx - 0.01 * half,
        heart_top + 0.05 * lh,
    );
    let aorta = aortic_arch.union(&descending).union(&ascending);
    let below = |y: f64| (y + 0.3 * lh).min(h);
    let stomach = Shape::new(vec![Outline::Ellipse {
        cx: cx + 0.5 * half,
        cy: bottom_l + 0.13 * lh,
        rx: 0.28 * half,
        ry: 0.10 * lh,
    }])
    .clipped(0.0, 0.0, w, h);
    let liver = Shape::new(vec![Outline::Polygon(vec![
        (cx - 0.98 * half, bottom_r + 0.01 * lh),
        (cx - 0.55 * half, bottom_r - 0.06 * lh),
        (cx + 0.15 * half, bottom_r + 0.02 * lh),
        (cx + 0.10 * half, below(bottom_r) - 0.05 * lh),
        (cx - 0.90 * half, below(bottom_r)),
    ])]);

    let heart_part = |x0: f64, y0: f64, x1: f64, y1: f64| heart.clipped(x0, y0, x1, y1);
    let inf = f64::INFINITY;
    let lobe = |lung: &Shape, bottom: f64, f0: f64, f1: f64| band(lung, bottom, f0, f1);
    let right_middle =
        lobe(&right_lung, bottom_r, 0.45, 0.88).clipped(cx - 0.65 * half, -inf, inf, inf);

    let hilum = |sign: f64| {
        let (a, b) = (cx + sign * 0.08 * half, cx + sign * 0.45 * half);
        Shape::rect(a.min(b), top + 0.30 * lh, a.max(b), top + 0.58 * lh)
    };
    let costophrenic = |sign: f64, bottom: f64| {
        let (a, b) = (cx + sign * 1.0 * half, cx + sign * 0.70 * half);
        Shape::rect(a.min(b), bottom - 0.15 * lh, a.max(b), bottom + 0.02 * lh)
    };
    let svc = Shape::rect(
        cx - 0.14 * half,
        top + 0.08 * lh,
        cx - 0.03 * half,
        heart_top + 0.05 * lh,
    );
    let cavoatrial = Shape::rect(
        cx - 0.16 * half,
        heart_top,
        cx - 0.02 * half,
        heart_top + 0.10 * lh,
    );
    let abdomen = Shape::rect(
        cx - half,
        bottom_r,
        cx + half,
        (bottom_l + 0.25 * lh).min(h - 1.0),
    );

    let mut structures: Vec<Structure> = Vec::with_capacity(64);
    let mut add = |name: &'static str, shape: Shape| structures.push(Structure { name, shape });
    add("spine", spine);
    add("cervical spine", cervical);
    add("thoracic spine", thoracic);
    add("lumbar spine", lumbar);
    for (i, name) in VERTEBRAE_T.iter().enumerate() {
        add(name, vertebra(i));
    }
    add("clavicles", clavicle_right.union(&clavicle_left));
    add("clavicle left", clavicle_left);
    add("clavicle right", clavicle_right);
    add("diaphragm", right_hemidiaphragm.union(&left_hemidiaphragm));
    add("left hemidiaphragm", left_hemidiaphragm);
    add("right hemidiaphragm", right_hemidiaphragm);
    add("stomach", stomach);
    add("liver", liver);
    add("cardiomediastinum", cardiomediastinum.clone());
    add("upper mediastinum", upper_mediastinum);
    add("lower mediastinum", lower_mediastinum);
    add("heart", heart.clone());
    add(
        "heart atrium left",
        heart_part(hcx - 0.2 * rx, -inf, hcx + 0.5 * rx, hcy - 0.4 * ry),
    );
    add(
        "heart atrium right",
        heart_part(-inf, -inf, hcx - 0.45 * rx, inf),
    );
    add(
        "heart ventricle left",
        heart_part(hcx, hcy - 0.2 * ry, inf, inf),
    );
    add(
        "heart ventricle right",
        heart_part(hcx - 0.3 * rx, hcy, hcx + 0.4 * rx, inf),
    );
    add("aorta", aorta);
    add("ascending aorta", ascending);
    add("descending aorta", descending);
    add("aortic arch", aortic_arch);
    add("lung", right_lung.union(&left_lung));
    add("right lung", right_lung.clone());
    add("left lung", left_lung.clone());
    add(
        "lung base",
        right_lung
            .union(&left_lung)
            .clipped(-inf, top + 0.68 * lh, inf, inf),
    );
    add(
        "mid zone lung",
        r_mid
            .union(&l_mid)
            .clipped(-inf, top + 0.40 * lh, inf, top + 0.68 * (bottom_l - top)),
    );
    add(
        "upper zone lung",
        r_upper
            .union(&l_upper)
            .clipped(-inf, top + 0.15 * lh, inf, top + 0.40 * (bottom_l - top)),
    );
    add(
        "apical zone lung",
        r_apical
            .union(&l_apical)
            .clipped(-inf, top, inf, top + 0.15 * (bottom_l - top)),
    );
    add("right upper zone lung", r_upper);
    add("right mid zone lung", r_mid);
    add("right lung base", r_base);
    add("right apical zone lung", r_apical);
    add("left upper zone lung", l_upper);
    add("left mid zone lung", l_mid);
    add("left lung base", l_base);
    add("left apical zone lung", l_apical);
    add(
        "lung lower lobe left",
        lobe(&left_lung, bottom_l, 0.35, 1.0),
    );
    add(
        "lung upper lobe left",
        lobe(&left_lung, bottom_l, 0.0, 0.62),
    );
    add(
        "lung lower lobe right",
        lobe(&right_lung, bottom_r, 0.35, 1.0),
    );
    add("lung middle lobe right", right_middle);
    add(
        "lung upper lobe right",
        lobe(&right_lung, bottom_r, 0.0, 0.48),
    );
    add("trachea", trachea);
    add("tracheal bifurcation", bifurcation);
    // Cervical and lumbar vertebrae: equal slices of their spine segments.
    let slices = |y0: f64, y1: f64, n: usize, i: usize| {
        let step = (y1 - y0) / n as f64;
        Shape::rect(
            spine_x.0,
            y0 + step * i as f64 + 0.08 * step,
            spine_x.1,
            y0 + step * (i + 1) as f64,
        )
    };
    for (i, name) in VERTEBRAE_C.iter().enumerate() {
        add(name, slices(0.0, thoracic_top.max(1.0), 7, i));
    }
    for (i, name) in VERTEBRAE_L.iter().enumerate() {
        add(name, slices(thoracic_bottom, spine_bottom, 5, i));
    }
    // Ribs: posterior ribs run from the spine laterally and slightly down; anterior ribs from the
    // lateral chest wall medially and down. Rib n sits at the level of thoracic vertebra n.
    let rib_t = 0.022 * lh;
    let rib_y =
        |i: usize| thoracic_top + (thoracic_bottom - thoracic_top) * (i as f64 + 0.5) / 12.0;
    let band = |(x0, y0): (f64, f64), (x1, y1): (f64, f64)| {
        Shape::new(vec![Outline::Polygon(vec![
            (x0, y0),
            (x1, y1),
            (x1, y1 + rib_t),
            (x0, y0 + rib_t),
        ])])
        .clipped(0.0, 0.0, w, h)
    };
    let posterior_rib = |i: usize, sign: f64| {
        band(
            (cx + sign * 0.09 * half, rib_y(i)),
            (cx + sign * 0.96 * half, rib_y(i) + 0.05 * lh),
        )
    };
    let anterior_rib = |i: usize, sign: f64| {
        let y = rib_y(i) + 0.07 * lh;
        band(
            (cx + sign * 0.92 * half, y),
            (cx + sign * 0.22 * half, y + 0.14 * lh),
        )
    };
    for (i, names) in RIBS.iter().enumerate() {
        let [post_r, post_l, ant_r, ant_l, post_both, ant_both] = *names;
        let (pr, pl) = (posterior_rib(i, -1.0), posterior_rib(i, 1.0));
        add(post_both, pr.union(&pl));
        add(post_r, pr);
        add(post_l, pl);
        if !ant_r.is_empty() {
            let (ar, al) = (anterior_rib(i, -1.0), anterior_rib(i, 1.0));
            add(ant_both, ar.union(&al));
            add(ant_r, ar);
            add(ant_l, al);
        }
    }
    add(
        "rib_cartilage",
        Shape::rect(
            cx - 0.30 * half,
            top + 0.25 * lh,
            cx - 0.12 * half,
            top + 0.75 * lh,
        )
        .union(&Shape::rect(
            cx + 0.12 * half,
            top + 0.25 * lh,
            cx + 0.30 * half,
            top + 0.75 * lh,
        )),
    );
    add(
        "sternum",
        Shape::rect(
            cx - 0.05 * half,
            top + 0.04 * lh,
            cx + 0.05 * half,
            top + 0.55 * lh,
        ),
    );
    let scapula = |sign: f64| {
        Shape::new(vec![Outline::Ellipse {
            cx: cx + sign * 0.86 * half,
            cy: top + 0.24 * lh,
            rx: 0.16 * half,
            ry: 0.20 * lh,
        }])
        .clipped(0.0, 0.0, w, h)
    };
    add("scapulas", scapula(-1.0).union(&scapula(1.0)));
    add("scapula left", scapula(1.0));
    add("scapula right", scapula(-1.0));
    let organ = |ox: f64, oy: f64, orx: f64, ory: f64| {
        Shape::new(vec![Outline::Ellipse {
            cx: cx + ox * half,
            cy: oy,
            rx: orx * half,
            ry: ory * lh,
        }])
        .clipped(0.0, 0.0, w, h)
    };
    add("small bowel", organ(-0.05, below(bottom_l), 0.45, 0.10));
    add("duodenum", organ(0.05, bottom_r + 0.12 * lh, 0.10, 0.05));
    add("pancreas", organ(0.22, bottom_l + 0.10 * lh, 0.22, 0.04));
    add("kidney left", organ(0.38, bottom_l + 0.20 * lh, 0.10, 0.10));
    add(
        "kidney right",
        organ(-0.38, bottom_r + 0.22 * lh, 0.10, 0.10),
    );
    add(
        "anterior mediastinum",
        cardiomediastinum.clipped(-inf, mediastinum_top, inf, hcy),
    );
    add(
        "middle mediastinum",
        heart.union(&Shape::rect(
            cx - 0.12 * half,
            carina_y,
            cx + 0.14 * half,
            heart_top + 0.05 * lh,
        )),
    );
    add(
        "posterior mediastinum",
        Shape::rect(
            spine_x.0 - 0.04 * half,
            mediastinum_top,
            spine_x.1 + 0.04 * half,
            bottom_l,
        ),
    );
    add("heart myocardium", heart.clone());
    add(
        "pulmonary artery",
        organ(0.20, heart_top + 0.02 * lh, 0.10, 0.05),
    );
    add(
        "inferior vena cava",
        Shape::rect(
            cx - 0.16 * half,
            bottom_r - 0.05 * lh,
            cx - 0.06 * half,
            (bottom_r + 0.10 * lh).min(h),
        ),
    );
    add(
        "esophagus",
        Shape::rect(cx - 0.02 * half, trachea_top, cx + 0.03 * half, bottom_l),
    );
    let breast = |sign: f64, bottom: f64| organ(sign * 0.62, bottom - 0.12 * lh, 0.30, 0.14);
    add(
        "breast",
        breast(-1.0, bottom_r).union(&breast(1.0, bottom_l)),
    );
    add("breast left", breast(1.0, bottom_l));
    add("breast right", breast(-1.0, bottom_r));
    add("ig:right hilar structures", hilum(-1.0));
    add("ig:left hilar structures", hilum(1.0));
    add("ig:right costophrenic angle", costophrenic(-1.0, bottom_r));
    add("ig:left costophrenic angle", costophrenic(1.0, bottom_l));
    add("ig:svc", svc);
    add("ig:cavoatrial junction", cavoatrial);
    add("ig:abdomen", abdomen);
    Anatomy {
        width,
        height,
        structures,
    }
}

/// Lateral anatomy (patient facing image left).
pub fn lateral<R: Rng>(rng: &mut R, width: u32, height: u32, heart_enlargement: u8) -> Anatomy {
    let (w, h) = (f64::from(width), f64::from(height));
    let j = |rng: &mut R| rng.random_range(-0.02..0.02);
    let dx = j(rng);
    let dy = j(rng);
    let p = |x: f64, y: f64| ((x + dx) * w, (y + dy) * h);
    let lung = Shape::new(vec![Outline::Polygon(vec![
        p(0.28, 0.10),
        p(0.66, 0.08),
        p(0.84, 0.32),
        p(0.88, 0.78),
        p(0.16, 0.70),
        p(0.13, 0.35),
    ])]);
    let grow = 1.0 + 0.08 * f64::from(heart_enlargement);
    let (hx, hy) = p(0.34, 0.56);
    let heart = Shape::new(vec![Outline::Ellipse {
        cx: hx,
        cy: hy,
        rx: 0.17 * w * grow,
        ry: 0.14 * h * grow,
    }]);
    let spine = Shape::new(vec![Outline::Polygon(vec![
        p(0.74, 0.0),
        p(0.84, 0.0),
        p(0.92, 0.95),
        p(0.82, 0.95),
    ])]);
    let thoracic = spine.clipped(
        f64::NEG_INFINITY,
        p(0.0, 0.10).1,
        f64::INFINITY,
        p(0.0, 0.80).1,
    );
    let trachea = Shape::new(vec![Outline::Polygon(vec![
        p(0.44, 0.0),
        p(0.50, 0.0),
        p(0.56, 0.36),
        p(0.50, 0.36),
    ])]);
    let diaphragm = Shape::new(vec![Outline::Polygon(vec![
        p(0.16, 0.70),
        p(0.50, 0.64),
        p(0.88, 0.78),
        p(0.88, 0.82),
        p(0.16, 0.74),
    ])]);
    let sternum = Shape::new(vec![Outline::Polygon(vec![
        p(0.14, 0.20),
        p(0.18, 0.20),
        p(0.13, 0.58),
        p(0.09, 0.58),
    ])]);
    let aorta = Shape::new(vec![Outline::Polygon(vec![
        p(0.66, 0.25),
        p(0.72, 0.25),
        p(0.78, 0.75),
        p(0.72, 0.75),
    ])]);
    let structures = vec![
        Structure {
            name: "spine",
            shape: spine,
        },
        Structure {
            name: "thoracic spine",
            shape: thoracic,
        },
        Structure {
            name: "sternum",
            shape: sternum,
        },
        Structure {
            name: "diaphragm",
            shape: diaphragm,
        },
        Structure {
            name: "heart",
            shape: heart,
        },
        Structure {
            name: "descending aorta",
            shape: aorta,
        },
        Structure {
            name: "lung",
            shape: lung,
        },
        Structure {
            name: "trachea",
            shape: trachea,
        },
    ];
    Anatomy {
        width,
        height,
        structures,
    }
}

const VERTEBRAE_C: [&str; 7] = [
    "vertebrae C1",
    "vertebrae C2",
    "vertebrae C3",
    "vertebrae C4",
    "vertebrae C5",
    "vertebrae C6",
    "vertebrae C7",
];

const VERTEBRAE_L: [&str; 5] = [
    "vertebrae L1",
    "vertebrae L2",
    "vertebrae L3",
    "vertebrae L4",
    "vertebrae L5",
];

/// Per rib (1st…12th): posterior right, posterior left, anterior right, anterior left, posterior
/// both sides, anterior both sides (CXAS has no anterior 12th rib; its "12th rib" is posterior).
const RIBS: [[&str; 6]; 12] = [
    [
        "posterior 1st rib right",
        "posterior 1st rib left",
        "anterior 1st rib right",
        "anterior 1st rib left",
        "posterior 1st rib",
        "anterior 1st rib",
    ],
    [
        "posterior 2nd rib right",
        "posterior 2nd rib left",
        "anterior 2nd rib right",
        "anterior 2nd rib left",
        "posterior 2nd rib",
        "anterior 2nd rib",
    ],
    [
        "posterior 3rd rib right",
        "posterior 3rd rib left",
        "anterior 3rd rib right",
        "anterior 3rd rib left",
        "posterior 3rd rib",
        "anterior 3rd rib",
    ],
    [
        "posterior 4th rib right",
        "posterior 4th rib left",
        "anterior 4th rib right",
        "anterior 4th rib left",
        "posterior 4th rib",
        "anterior 4th rib",
    ],
    [
        "posterior 5th rib right",
        "posterior 5th rib left",
        "anterior 5th rib right",
        "anterior 5th rib left",
        "posterior 5th rib",
        "anterior 5th rib",
    ],
    [
        "posterior 6th rib right",
        "posterior 6th rib left",
        "anterior 6th rib right",
        "anterior 6th rib left",
        "posterior 6th rib",
        "anterior 6th rib",
    ],
    [
        "posterior 7th rib right",
        "posterior 7th rib left",
        "anterior 7th rib right",
        "anterior 7th rib left",
        "posterior 7th rib",
        "anterior 7th rib",
    ],
    [
        "posterior 8th rib right",
        "posterior 8th rib left",
        "anterior 8th rib right",
        "anterior 8th rib left",
        "posterior 8th rib",
        "anterior 8th rib",
    ],
    [
        "posterior 9th rib right",
        "posterior 9th rib left",
        "anterior 9th rib right",
        "anterior 9th rib left",
        "posterior 9th rib",
        "anterior 9th rib",
    ],
    [
        "posterior 10th rib right",
        "posterior 10th rib left",
        "anterior 10th rib right",
        "anterior 10th rib left",
        "posterior 10th rib",
        "anterior 10th rib",
    ],
    [
        "posterior 11th rib right",
        "posterior 11th rib left",
        "anterior 11th rib right",
        "anterior 11th rib left",
        "posterior 11th rib",
        "anterior 11th rib",
    ],
    [
        "posterior 12th rib right",
        "posterior 12th rib left",
        "",
        "",
        "12th rib",
        "",
    ],
];

const VERTEBRAE_T: [&str; 12] = [
    "vertebrae T1",
    "vertebrae T2",
    "vertebrae T3",
    "vertebrae T4",
    "vertebrae T5",
    "vertebrae T6",
    "vertebrae T7",
    "vertebrae T8",
    "vertebrae T9",
    "vertebrae T10",
    "vertebrae T11",
    "vertebrae T12",
];

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn lungs_are_inside_the_thorax_and_on_the_right_sides() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (w, h) in [(2544, 3056), (3056, 2544), (2022, 2022)] {
            let a = frontal(&mut rng, w, h, 0);
            let ext = |n: &str| a.get(n).and_then(|s| s.shape.extent(h, w)).expect(n);
            let right = ext("right lung");
            let left = ext("left lung");
            assert!(right[2] < left[0], "right lung must be on the image left");
            let spine = ext("thoracic spine");
            assert!(right[2] <= spine[2] && left[0] >= spine[0]);
            let lungs = ext("lung");
            assert!(lungs[0] == right[0] && lungs[2] == left[2]);
            for zone in [
                "right upper zone lung",
                "right lung base",
                "lung lower lobe right",
            ] {
                let z = ext(zone);
                assert!(
                    z[0] >= right[0] && z[2] <= right[2] && z[1] >= right[1] && z[3] <= right[3]
                );
            }
            let heart = ext("heart");
            assert!(heart[3] < h && heart[1] > right[1]);
        }
    }

    #[test]
    fn mask_bbox_equals_extent() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let a = frontal(&mut rng, 1000, 1200, 1);
        for s in &a.structures {
            let raster = s.shape.rasterize(1200, 1000);
            assert_eq!(raster.extent, s.shape.extent(1200, 1000), "{}", s.name);
            let xywh = raster.rle.bbox().map_or([0; 4], |b| {
                [
                    b[0] as u32,
                    b[1] as u32,
                    (b[2] - b[0]) as u32,
                    (b[3] - b[1]) as u32,
                ]
            });
            assert_eq!(xywh, raster.coco_bbox(), "{}", s.name);
        }
    }
}
