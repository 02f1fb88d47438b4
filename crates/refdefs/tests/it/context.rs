//! context.toml: the ConText triggers load, are validated with file and line, take part in the
//! fingerprint and the diff, and a directory without the file uses the built-in one.

use cxrlake_refdefs::{Code, Direction, FileKind, RefDefs, TriggerCategory};

use crate::common::{Copy, expect_one, shipped_dir};

#[test]
fn the_shipped_triggers_cover_every_category() {
    let defs = RefDefs::load(&shipped_dir()).expect("load");
    for category in TriggerCategory::ALL {
        assert!(
            defs.triggers().any(|t| *t.category.get_ref() == category),
            "{category:?}"
        );
    }
    for direction in Direction::ALL {
        assert!(
            defs.triggers()
                .any(|t| t.direction.as_ref().map(|d| *d.get_ref()) == Some(direction)),
            "{direction:?}"
        );
    }
    let no = defs
        .triggers()
        .find(|t| t.text.get_ref() == "no")
        .expect("the trigger no");
    assert_eq!(*no.category.get_ref(), TriggerCategory::Negated);
    assert_eq!(
        no.probability.as_ref().map(|p| p.get_ref().as_str()),
        Some("negative")
    );
    assert_eq!(defs.version(FileKind::Context), "1.0.0");
    assert_eq!(defs.trigger_hashes().len(), defs.triggers().count());
}

#[test]
fn a_directory_without_context_toml_uses_the_built_in_triggers() {
    let copy = Copy::new();
    std::fs::remove_file(copy.path("context.toml")).expect("remove");
    assert!(copy.check().is_empty());
    let defs = RefDefs::load(copy.dir.path()).expect("load");
    let shipped = RefDefs::load(&shipped_dir()).expect("load");
    assert_eq!(defs.fingerprint(), shipped.fingerprint());
}

#[test]
fn editing_a_trigger_changes_the_fingerprint_and_the_diff() {
    let copy = Copy::new();
    copy.edit(
        "context.toml",
        "text = \"free of\"\ncategory = \"negated\"\ndirection = \"forward\"",
        "text = \"free of\"\ncategory = \"negated\"\ndirection = \"bidirectional\"",
    );
    copy.append(
        "context.toml",
        "\n[[trigger]]\ntext = \"no sign whatsoever of\"\ncategory = \"negated\"\ndirection = \
         \"forward\"\nprobability = \"negative\"\n",
    );
    let old = RefDefs::load(&shipped_dir()).expect("load shipped");
    let new = RefDefs::load(copy.dir.path()).expect("load edited");
    assert_ne!(old.fingerprint(), new.fingerprint());
    assert_ne!(
        old.file_hash(FileKind::Context),
        new.file_hash(FileKind::Context)
    );
    assert_eq!(
        old.file_hash(FileKind::Findings),
        new.file_hash(FileKind::Findings)
    );
    let diff = RefDefs::diff(&old, &new);
    assert!(!diff.is_empty());
    assert!(
        diff.touched().is_empty(),
        "no entry of another file changed"
    );
    assert_eq!(diff.triggers.added, ["no sign whatsoever of"]);
    assert_eq!(diff.triggers.changed, ["free of"]);
    assert!(
        diff.to_string()
            .contains("triggers: 1 added, 0 removed, 1 changed")
    );
}

#[test]
fn a_duplicate_trigger_is_reported() {
    let copy = Copy::new();
    let line = copy.append(
        "context.toml",
        "\n[[trigger]]\ntext = \"free of\"\ncategory = \"negated\"\ndirection = \"forward\"\n\
         probability = \"negative\"\n",
    );
    expect_one(&copy.check(), Code::DuplicateName, "context.toml", line + 2);
}

#[test]
fn a_modifying_trigger_needs_a_direction_and_a_fitting_probability() {
    let copy = Copy::new();
    let line = copy.append(
        "context.toml",
        "\n[[trigger]]\ntext = \"sans\"\ncategory = \"negated\"\nprobability = \"negative\"\n",
    );
    let d = expect_one(&copy.check(), Code::MissingField, "context.toml", line + 1);
    assert!(d.message.contains("`direction`"), "{d}");

    let copy = Copy::new();
    let line = copy.append(
        "context.toml",
        "\n[[trigger]]\ntext = \"sans\"\ncategory = \"negated\"\ndirection = \"forward\"\n\
         probability = \"possible\"\n",
    );
    let d = expect_one(&copy.check(), Code::InvalidValue, "context.toml", line + 5);
    assert!(d.hint.contains("positiveness neg"), "{d}");

    let copy = Copy::new();
    let line = copy.append(
        "context.toml",
        "\n[[trigger]]\ntext = \"sans\"\ncategory = \"negated\"\ndirection = \"forward\"\n\
         probability = \"negatve\"\n",
    );
    let d = expect_one(
        &copy.check(),
        Code::UnknownReference,
        "context.toml",
        line + 5,
    );
    assert!(d.hint.contains("'negative'"), "{d}");
}

#[test]
fn pseudo_and_terminate_triggers_modify_nothing() {
    let copy = Copy::new();
    let line = copy.append(
        "context.toml",
        "\n[[trigger]]\ntext = \"and yet\"\ncategory = \"terminate\"\ndirection = \"forward\"\n",
    );
    expect_one(&copy.check(), Code::InvalidValue, "context.toml", line + 4);

    let copy = Copy::new();
    let line = copy.append(
        "context.toml",
        "\n[[trigger]]\ntext = \"no gross change\"\ncategory = \"pseudo\"\nchange = \"unchnged\"\n",
    );
    let d = expect_one(
        &copy.check(),
        Code::UnknownReference,
        "context.toml",
        line + 4,
    );
    assert!(d.hint.contains("'unchanged'"), "{d}");
}

#[test]
fn a_trigger_not_in_canonical_form_and_an_unknown_category_are_reported() {
    let copy = Copy::new();
    let line = copy.append(
        "context.toml",
        "\n[[trigger]]\ntext = \"No  Sign\"\ncategory = \"pseudo\"\n",
    );
    expect_one(&copy.check(), Code::InvalidValue, "context.toml", line + 2);

    let copy = Copy::new();
    let line = copy.append(
        "context.toml",
        "\n[[trigger]]\ntext = \"no sign\"\ncategory = \"negative\"\n",
    );
    expect_one(&copy.check(), Code::InvalidValue, "context.toml", line + 3);
}
