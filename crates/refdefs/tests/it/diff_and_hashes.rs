//! Content hashes are stable and `diff` names exactly the edited entries.

use cxrlake_refdefs::{EntryKind, FileKind, RefDefs};

use crate::common::{Copy, shipped_dir};

#[test]
fn hashes_are_stable_across_loads() {
    let a = RefDefs::load(&shipped_dir()).expect("load");
    let b = RefDefs::load(&shipped_dir()).expect("load");
    assert_eq!(a.fingerprint(), b.fingerprint());
    for file in FileKind::ALL {
        assert_eq!(a.file_hash(file), b.file_hash(file));
        assert_eq!(a.file_hash(file).len(), 64);
    }
    assert_eq!(
        a.entry_hash(EntryKind::Region, "left lung"),
        b.entry_hash(EntryKind::Region, "left lung")
    );
}

#[test]
fn formatting_changes_do_not_change_hashes() {
    let copy = Copy::new();
    copy.edit(
        "regions.toml",
        "name = \"left lung\"\n",
        "# a curator's note\nname   =   \"left lung\"\n",
    );
    let edited = RefDefs::load(copy.dir.path()).expect("load");
    let shipped = RefDefs::load(&shipped_dir()).expect("load");
    assert_eq!(edited.fingerprint(), shipped.fingerprint());
    assert!(RefDefs::diff(&shipped, &edited).is_empty());
}

#[test]
fn diff_names_exactly_the_edited_entries() {
    let copy = Copy::new();
    copy.edit("regions.toml", "synonyms = [\"rml\", \"middle lobe\", \"right middle lobe of lung\"]", "synonyms = [\"rml\", \"middle lobe\", \"right middle lobe of lung\", \"right middle lobe region\"]");
    copy.edit(
        "findings.toml",
        "\"pericardial effusions\"]\ncategory",
        "\"pericardial effusions\", \"pericardial collection\"]\ncategory",
    );
    copy.edit("modifiers.toml", "[[modifier]]\nname = \"massive\"\ntype = \"severity\"\nsynonyms = [\"huge\", \"very large\", \"giant\", \"complete\", \"total\", \"whiteout\"]\n", "");
    copy.append("changes.toml", "\n[[change]]\nname = \"relocated\"\nkind = \"device\"\nsynonyms = [\"moved to a new site\"]\n");
    let old = RefDefs::load(&shipped_dir()).expect("load shipped");
    let new = RefDefs::load(copy.dir.path()).expect("load edited");
    let diff = RefDefs::diff(&old, &new);
    let mut touched = diff.touched();
    touched.sort();
    assert_eq!(
        touched,
        vec![
            (EntryKind::Region, "right middle lobe"),
            (EntryKind::Finding, "pericardial effusion"),
            (EntryKind::Modifier, "massive"),
            (EntryKind::Change, "relocated"),
        ]
    );
    let regions = diff.kind(EntryKind::Region).expect("regions");
    assert_eq!(regions.changed, ["right middle lobe"]);
    assert_eq!(
        diff.kind(EntryKind::Modifier).expect("modifiers").removed,
        ["massive"]
    );
    assert_eq!(
        diff.kind(EntryKind::Change).expect("changes").added,
        ["relocated"]
    );
    let text = diff.to_string();
    assert!(
        text.contains("  ~ right middle lobe")
            && text.contains("  + relocated")
            && text.contains("  - massive"),
        "{text}"
    );

    assert_ne!(
        old.entry_hash(EntryKind::Region, "right middle lobe"),
        new.entry_hash(EntryKind::Region, "right middle lobe")
    );
    assert_eq!(
        old.entry_hash(EntryKind::Region, "left lung"),
        new.entry_hash(EntryKind::Region, "left lung")
    );
    assert_ne!(
        old.file_hash(FileKind::Regions),
        new.file_hash(FileKind::Regions)
    );
    assert_eq!(
        old.file_hash(FileKind::CxasClasses),
        new.file_hash(FileKind::CxasClasses)
    );
    assert_ne!(old.fingerprint(), new.fingerprint());
}

#[test]
fn version_bump_changes_file_hash_but_no_entry() {
    let copy = Copy::new();
    copy.edit("changes.toml", "version = \"1.0.0\"", "version = \"1.0.1\"");
    let old = RefDefs::load(&shipped_dir()).expect("load");
    let new = RefDefs::load(copy.dir.path()).expect("load");
    assert!(RefDefs::diff(&old, &new).is_empty());
    assert_ne!(
        old.file_hash(FileKind::Changes),
        new.file_hash(FileKind::Changes)
    );
}
