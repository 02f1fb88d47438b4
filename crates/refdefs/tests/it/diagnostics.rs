//! One failing input per validator error class: exact code and file:line.

use cxrlake_refdefs::{Code, Error, RefDefs};

use crate::common::{Copy, expect_one};

#[test]
fn io_missing_file() {
    let copy = Copy::new();
    std::fs::remove_file(copy.path("changes.toml")).expect("remove");
    expect_one(&copy.check(), Code::Io, "changes.toml", 0);
    assert!(matches!(
        RefDefs::load(copy.dir.path()),
        Err(Error::Invalid(_))
    ));
}

#[test]
fn syntax_error() {
    let copy = Copy::new();
    let line = copy.edit("changes.toml", "name = \"resolved\"", "name = \"resolved");
    expect_one(&copy.check(), Code::Syntax, "changes.toml", line);
}

#[test]
fn missing_required_field() {
    let copy = Copy::new();
    let line = copy.edit(
        "changes.toml",
        "name = \"unchanged\"\nkind = \"stability\"\n",
        "name = \"unchanged\"\n",
    );
    // The error points at the `[[change]]` header of the table that lacks the field.
    let d = expect_one(&copy.check(), Code::MissingField, "changes.toml", line - 1);
    assert!(d.message.contains("`kind`"), "{d}");
}

#[test]
fn unknown_field() {
    let copy = Copy::new();
    let line = copy.edit(
        "modifiers.toml",
        "name = \"mild\"\ntype = \"severity\"",
        "name = \"mild\"\ntype = \"severity\"\nsynonym = \"x\"",
    );
    expect_one(
        &copy.check(),
        Code::UnknownField,
        "modifiers.toml",
        line + 2,
    );
}

#[test]
fn invalid_enum_value() {
    let copy = Copy::new();
    let line = copy.edit("regions.toml", "name = \"left lower lobe\"\nsynonyms = [\"lll\", \"left lower lobe of lung\"]\nlaterality = \"left\"", "name = \"left lower lobe\"\nsynonyms = [\"lll\", \"left lower lobe of lung\"]\nlaterality = \"lft\"");
    expect_one(&copy.check(), Code::InvalidValue, "regions.toml", line + 2);
}

#[test]
fn invalid_name_case() {
    let copy = Copy::new();
    let line = copy.edit(
        "findings.toml",
        "name = \"pleural effusion\"",
        "name = \"Pleural Effusion\"",
    );
    let diagnostics = copy.check();
    // Renaming breaks references to the old name too; the case error is the one at the edit.
    let at_edit: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.line == line)
        .cloned()
        .collect();
    let d = expect_one(&at_edit, Code::InvalidValue, "findings.toml", line);
    assert!(d.hint.contains("pleural effusion"), "{d}");
}

#[test]
fn duplicate_name() {
    let copy = Copy::new();
    let line = copy.append(
        "changes.toml",
        "[[change]]\nname = \"new\"\nkind = \"appearance\"\n",
    );
    let d = expect_one(&copy.check(), Code::DuplicateName, "changes.toml", line + 1);
    assert!(d.hint.contains("first defined at"), "{d}");
}

#[test]
fn duplicate_synonym_under_two_concepts() {
    let copy = Copy::new();
    let line = copy.edit(
        "findings.toml",
        "synonyms = [\"pneumonias\",",
        "synonyms = [\"effusion\", \"pneumonias\",",
    );
    let d = expect_one(&copy.check(), Code::DuplicateSynonym, "findings.toml", line);
    assert!(
        d.message.contains("pleural effusion") && d.message.contains("pneumonia"),
        "{d}"
    );
}

#[test]
fn unknown_region_reference_with_suggestion() {
    let copy = Copy::new();
    let line = copy.edit("findings.toml", "\"pericardial effusions\"]\ncategory = \"ANATOMICAL_FINDING\"\nsubcategories = [\"CARDIAC\"]\ndefault_regions = [\"pericardium\"]", "\"pericardial effusions\"]\ncategory = \"ANATOMICAL_FINDING\"\nsubcategories = [\"CARDIAC\"]\ndefault_regions = [\"pericardum\"]");
    let d = expect_one(
        &copy.check(),
        Code::UnknownReference,
        "findings.toml",
        line + 3,
    );
    assert!(d.hint.contains("did you mean 'pericardium'"), "{d}");
}

#[test]
fn unknown_reference_to_a_synonym() {
    let copy = Copy::new();
    let line = copy.edit("regions.toml", "parent = \"left upper lobe\"\nfallbacks = [\"left upper lobe\", \"left lung\"]\n[region.localization]\nkind = \"intersection\"", "parent = \"lul\"\nfallbacks = [\"left upper lobe\", \"left lung\"]\n[region.localization]\nkind = \"intersection\"");
    let d = expect_one(&copy.check(), Code::UnknownReference, "regions.toml", line);
    assert!(
        d.hint.contains("synonym of region 'left upper lobe'"),
        "{d}"
    );
}

#[test]
fn unknown_category() {
    let copy = Copy::new();
    let line = copy.edit("findings.toml", "name = \"cardiomegaly\"\nsynonyms = [\"enlarged heart\", \"heart enlargement\", \"cardiac enlargement\", \"enlarged heart size\", \"increased heart size\"]\ncategory = \"ANATOMICAL_FINDING\"", "name = \"cardiomegaly\"\nsynonyms = [\"enlarged heart\", \"heart enlargement\", \"cardiac enlargement\", \"enlarged heart size\", \"increased heart size\"]\ncategory = \"ANATOMY\"");
    expect_one(
        &copy.check(),
        Code::UnknownReference,
        "findings.toml",
        line + 2,
    );
}

#[test]
fn cycle_in_region_tree() {
    let copy = Copy::new();
    let line = copy.edit("regions.toml", "name = \"left lung\"\nsynonyms = [\"left lung field\", \"left pulmonary field\"]\nlaterality = \"left\"\nright = \"right lung\"\nbilateral = \"lungs\"\nparent = \"left hemithorax\"", "name = \"left lung\"\nsynonyms = [\"left lung field\", \"left pulmonary field\"]\nlaterality = \"left\"\nright = \"right lung\"\nbilateral = \"lungs\"\nparent = \"left lower lobe\"");
    let d = expect_one(&copy.check(), Code::Cycle, "regions.toml", line + 5);
    assert!(
        d.message
            .contains("left lung -> left lower lobe -> left lung"),
        "{d}"
    );
}

#[test]
fn cycle_in_finding_parents() {
    let copy = Copy::new();
    let line = copy.edit(
        "findings.toml",
        "name = \"lung opacity\"\nsynonyms",
        "name = \"lung opacity\"\nparents = [\"consolidation\"]\nsynonyms",
    );
    let d = expect_one(&copy.check(), Code::Cycle, "findings.toml", line + 1);
    assert!(
        d.message.starts_with("cycle in the finding hierarchy"),
        "{d}"
    );
}

#[test]
fn unknown_cxas_class() {
    let copy = Copy::new();
    let line = copy.edit(
        "regions.toml",
        "classes = [\"heart atrium left\"]",
        "classes = [\"left atrium\"]",
    );
    let d = expect_one(&copy.check(), Code::UnknownCxasClass, "regions.toml", line);
    assert!(d.hint.contains("cxas_classes.toml"), "{d}");
}

#[test]
fn unknown_imagenome_box() {
    let copy = Copy::new();
    let line = copy.edit(
        "regions.toml",
        "boxes = [\"cavoatrial junction\"]",
        "boxes = [\"cavo atrial junction\"]",
    );
    let d = expect_one(
        &copy.check(),
        Code::UnknownImagenomeBox,
        "regions.toml",
        line,
    );
    assert!(d.hint.contains("did you mean 'cavoatrial junction'"), "{d}");
}

#[test]
fn unknown_cxas_class_in_operand() {
    let copy = Copy::new();
    let line = copy.edit(
        "regions.toml",
        "of = [\"cxas:esophagus\", \"cxas:stomach\"]",
        "of = [\"cxas:esophagus\", \"cxas:gastric\"]",
    );
    expect_one(&copy.check(), Code::UnknownCxasClass, "regions.toml", line);
}

#[test]
fn recipe_with_field_of_another_kind() {
    let copy = Copy::new();
    let line = copy.edit(
        "regions.toml",
        "kind = \"cxas\"\nclasses = [\"trachea\"]",
        "kind = \"cxas\"\nclasses = [\"trachea\"]\nchildren = [\"carina\"]",
    );
    let d = expect_one(&copy.check(), Code::Recipe, "regions.toml", line + 2);
    assert!(d.message.contains("`children`"), "{d}");
}

#[test]
fn recipe_operand_without_prefix() {
    let copy = Copy::new();
    let line = copy.edit(
        "regions.toml",
        "of = [\"cxas:esophagus\", \"cxas:stomach\"]",
        "of = [\"cxas:esophagus\", \"stomach\"]",
    );
    expect_one(&copy.check(), Code::Recipe, "regions.toml", line);
}

#[test]
fn left_right_links_that_disagree() {
    let copy = Copy::new();
    // 'right lower lobe' now points at 'left upper lobe', which links back to 'right upper lobe'.
    let line = copy.edit(
        "regions.toml",
        "laterality = \"right\"\nleft = \"left lower lobe\"",
        "laterality = \"right\"\nleft = \"left upper lobe\"",
    );
    let diagnostics = copy.check();
    let lateral: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.line == line + 1)
        .cloned()
        .collect();
    let d = expect_one(&lateral, Code::LateralLink, "regions.toml", line + 1);
    assert!(d.message.contains("does not link back"), "{d}");
}

#[test]
fn lateral_link_to_wrong_side() {
    let copy = Copy::new();
    let line = copy.edit(
        "regions.toml",
        "laterality = \"left\"\nright = \"right lower lobe\"",
        "laterality = \"left\"\nright = \"left upper lobe\"",
    );
    let diagnostics = copy.check();
    let at_edit: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.line == line + 1)
        .cloned()
        .collect();
    let d = expect_one(&at_edit, Code::LateralLink, "regions.toml", line + 1);
    assert!(d.message.contains("whose laterality is left"), "{d}");
}

#[test]
fn load_error_lists_every_diagnostic() {
    let copy = Copy::new();
    copy.edit(
        "regions.toml",
        "boxes = [\"cavoatrial junction\"]",
        "boxes = [\"cavo atrial junction\"]",
    );
    copy.edit(
        "regions.toml",
        "classes = [\"heart atrium left\"]",
        "classes = [\"left atrium\"]",
    );
    let Err(Error::Invalid(diagnostics)) = RefDefs::load(copy.dir.path()) else {
        panic!("expected invalid definitions");
    };
    assert_eq!(diagnostics.len(), 2);
    let message = Error::Invalid(diagnostics).to_string();
    assert!(
        message.contains("error[unknown-cxas-class]")
            && message.contains("error[unknown-imagenome-box]"),
        "{message}"
    );
}

#[test]
fn recipe_using_a_region_that_is_not_localized() {
    let copy = Copy::new();
    let line = copy.edit(
        "regions.toml",
        "children = [\"right clavicle\", \"right scapula\"]",
        "children = [\"right clavicle\", \"right acromioclavicular joint\"]",
    );
    let d = expect_one(&copy.check(), Code::Recipe, "regions.toml", line);
    assert!(d.message.contains("not localized"), "{d}");
}

#[test]
fn lateral_link_on_a_midline_region() {
    let copy = Copy::new();
    let line = copy.edit(
        "regions.toml",
        "name = \"trachea\"\nsynonyms = [\"tracheal\", \"tracheal air column\", \"airway\"]\nlaterality = \"unknown\"",
        "name = \"trachea\"\nsynonyms = [\"tracheal\", \"tracheal air column\", \"airway\"]\nlaterality = \"unknown\"\nleft = \"left main bronchus\"",
    );
    expect_one(&copy.check(), Code::LateralLink, "regions.toml", line + 3);
}

#[test]
fn duplicate_synonym_between_modifier_and_probability() {
    let copy = Copy::new();
    let line = copy.edit(
        "modifiers.toml",
        "synonyms = [\"probably\",",
        "synonyms = [\"mildly\", \"probably\",",
    );
    expect_one(
        &copy.check(),
        Code::DuplicateSynonym,
        "modifiers.toml",
        line,
    );
}
