//! MIMIC-CXR-JPG image metadata: views, sizes, dates and times of the images of a study.

use rand::Rng;
use rand::seq::IndexedRandom;

use crate::ids;

/// The `ViewPosition` of an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum View {
    /// Postero-anterior.
    Pa,
    /// Antero-posterior (portable).
    Ap,
    /// Lateral.
    Lateral,
    /// Left lateral.
    Ll,
    /// Missing `ViewPosition` (a frontal image whose DICOM header lacked it).
    Unknown,
}

impl View {
    /// `ViewPosition` cell.
    pub fn position(self) -> &'static str {
        match self {
            Self::Pa => "PA",
            Self::Ap => "AP",
            Self::Lateral => "LATERAL",
            Self::Ll => "LL",
            Self::Unknown => "",
        }
    }

    /// `ViewCodeSequence_CodeMeaning` cell.
    pub fn code_meaning(self) -> &'static str {
        match self {
            Self::Pa => "postero-anterior",
            Self::Ap => "antero-posterior",
            Self::Lateral => "lateral",
            Self::Ll => "left lateral",
            Self::Unknown => "",
        }
    }

    /// PA or AP: gets ImaGenome boxes.
    pub fn is_frontal(self) -> bool {
        matches!(self, Self::Pa | Self::Ap)
    }

    /// Lateral or left lateral.
    pub fn is_lateral(self) -> bool {
        matches!(self, Self::Lateral | Self::Ll)
    }
}

/// One image of a study.
#[derive(Debug, Clone)]
pub struct ImageMeta {
    /// `dicom_id`.
    pub dicom_id: String,
    /// View position.
    pub view: View,
    /// Rows (height in pixels).
    pub rows: u32,
    /// Columns (width in pixels).
    pub columns: u32,
    /// `StudyTime`, e.g. `213014.531`.
    pub study_time: String,
    /// `PatientOrientationCodeSequence_CodeMeaning`: Erect or Recumbent.
    pub orientation: &'static str,
}

/// The images of a study and the study-level metadata shared by them.
#[derive(Debug, Clone)]
pub struct StudyImages {
    /// Images in acquisition order.
    pub images: Vec<ImageMeta>,
    /// `PerformedProcedureStepDescription` (and procedure code meaning).
    pub procedure: &'static str,
    /// Exam line for the report.
    pub exam: &'static str,
    /// Portable AP study.
    pub portable: bool,
}

const PA_SIZES: &[(u32, u32)] = &[
    (3056, 2544),
    (3056, 2544),
    (3056, 2544),
    (3050, 2539),
    (2992, 2544),
    (3056, 2500),
];
const AP_SIZES: &[(u32, u32)] = &[
    (2544, 3056),
    (3056, 2544),
    (2539, 3050),
    (2022, 2022),
    (2500, 3056),
    (2705, 2022),
];
const LATERAL_SIZES: &[(u32, u32)] = &[(3056, 2544), (3056, 2544), (2544, 3056), (3050, 2539)];

/// Draws the images of one study (about 1.65 per study on average).
pub fn study_images<R: Rng>(rng: &mut R) -> StudyImages {
    let roll: f64 = rng.random();
    let count = match roll {
        r if r < 0.45 => 1,
        r if r < 0.92 => 2,
        r if r < 0.99 => 3,
        _ => 4,
    };
    let views: Vec<View> = match count {
        1 => vec![if rng.random_bool(0.78) {
            View::Ap
        } else {
            View::Pa
        }],
        2 => match rng.random_range(0..100) {
            0..85 => vec![View::Pa, View::Lateral],
            85..95 => vec![View::Ap, View::Lateral],
            _ => vec![View::Ap, View::Ap],
        },
        3 => vec![
            View::Pa,
            View::Lateral,
            if rng.random_bool(0.5) {
                View::Ap
            } else {
                View::Lateral
            },
        ],
        _ => vec![View::Ap, View::Pa, View::Lateral, View::Ll],
    };
    let views: Vec<View> = views
        .into_iter()
        .map(|v| {
            if rng.random_bool(0.004) {
                View::Unknown
            } else {
                v
            }
        })
        .collect();
    let portable = views.first().is_some_and(|v| *v == View::Ap)
        && count <= 2
        && !views.contains(&View::Lateral);
    let (procedure, exam) = if portable {
        ("CHEST (PORTABLE AP)", "CHEST (PORTABLE AP)")
    } else if views.len() == 1 {
        ("CHEST (SINGLE VIEW)", "CHEST (SINGLE VIEW)")
    } else if rng.random_bool(0.1) {
        ("CHEST (PRE-OP PA & LAT)", "CHEST (PRE-OP PA AND LAT)")
    } else {
        ("CHEST (PA AND LAT)", "CHEST (PA AND LAT)")
    };
    let hour = rng.random_range(0..24u32);
    let minute = rng.random_range(0..60u32);
    let images = views
        .into_iter()
        .enumerate()
        .map(|(i, view)| {
            let sizes = match view {
                View::Pa => PA_SIZES,
                View::Lateral | View::Ll => LATERAL_SIZES,
                View::Ap | View::Unknown => AP_SIZES,
            };
            let (rows, columns) = sizes.choose(rng).copied().unwrap_or((3056, 2544));
            let second = (rng.random_range(0..40u32) + 15 * i as u32).min(59);
            let millis = rng.random_range(0..1000u32);
            let orientation = if view == View::Ap && rng.random_bool(0.6) {
                "Recumbent"
            } else {
                "Erect"
            };
            ImageMeta {
                dicom_id: ids::dicom_id(rng),
                view,
                rows,
                columns,
                study_time: format!("{hour:02}{minute:02}{second:02}.{millis:03}"),
                orientation,
            }
        })
        .collect();
    StudyImages {
        images,
        procedure,
        exam,
        portable,
    }
}

/// Days since 2100-01-01 → `YYYYMMDD` (proleptic Gregorian; MIMIC dates are shifted to 21xx).
pub fn format_date(days: u32) -> String {
    let mut year = 2100u32;
    let mut left = days;
    loop {
        let len = if is_leap(year) { 366 } else { 365 };
        if left < len {
            break;
        }
        left -= len;
        year += 1;
    }
    let months = [
        31,
        if is_leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while left >= months[month] {
        left -= months[month];
        month += 1;
    }
    format!("{year:04}{:02}{:02}", month + 1, left + 1)
}

fn is_leap(year: u32) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn dates_format() {
        assert_eq!(format_date(0), "21000101");
        assert_eq!(format_date(31 + 28), "21000301");
        assert_eq!(format_date(365 + 365), "21020101");
        assert_eq!(format_date(4 * 365 + 31 + 28), "21040229");
    }

    #[test]
    fn about_1_65_images_per_study() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let n = 20_000;
        let total: usize = (0..n).map(|_| study_images(&mut rng).images.len()).sum();
        let mean = total as f64 / n as f64;
        assert!((1.58..1.72).contains(&mean), "{mean}");
    }
}
