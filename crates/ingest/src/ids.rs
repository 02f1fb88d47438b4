//! MIMIC identifier patterns: `p` + 8 digits (patient), `s` + 8 digits (study), DICOM ids of five
//! dash-separated hex groups. Ids are stored with their prefixes, as the release writes them.

/// `p10000032` from `10000032` or `p10000032`; `None` when it is not 8 digits.
pub fn patient_id(raw: &str) -> Option<String> {
    prefixed('p', raw)
}

/// `s50414267` from `50414267` or `s50414267`; `None` when it is not 8 digits.
pub fn study_id(raw: &str) -> Option<String> {
    prefixed('s', raw)
}

fn prefixed(prefix: char, raw: &str) -> Option<String> {
    let raw = raw.trim();
    let digits = raw.strip_prefix(prefix).unwrap_or(raw);
    (digits.len() == 8 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("{prefix}{digits}"))
}

/// Whether `raw` is a MIMIC-CXR DICOM id: five non-empty dash-separated groups of hex digits
/// (`02aa804e-bde0afdd-112c0b34-7bc16630-4e384014`).
pub fn is_dicom_id(raw: &str) -> bool {
    let groups: Vec<&str> = raw.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .all(|g| !g.is_empty() && g.len() <= 16 && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert_eq!(patient_id("10000032").as_deref(), Some("p10000032"));
        assert_eq!(patient_id("p10000032").as_deref(), Some("p10000032"));
        assert_eq!(study_id(" 50414267").as_deref(), Some("s50414267"));
        assert_eq!(study_id("5041426"), None);
        assert_eq!(study_id("p50414267"), None);
        assert_eq!(patient_id("1000003x"), None);
        assert!(is_dicom_id("02aa804e-bde0afdd-112c0b34-7bc16630-4e384014"));
        assert!(!is_dicom_id("02aa804e-bde0afdd-112c0b34-7bc16630"));
        assert!(!is_dicom_id("02aa804e-bde0afdd-112c0b34-7bc16630-4e38401g"));
        assert!(!is_dicom_id("02aa804e--112c0b34-7bc16630-4e384014"));
    }
}
