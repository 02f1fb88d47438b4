"""Reads a release written by `cxrlake export release` with real duckdb, pandas and zipfile.

Usage: release.py RELEASE_DIR SUMMARY
RELEASE_DIR holds the lake of crates/cli/tests/it/release.rs exported with --subset all;
SUMMARY is what the command printed ("<folder> (<subset>): N questions, M answer parts, ...").
"""
import json
import re
import sys
import zipfile
from pathlib import Path

import duckdb
import pandas as pd

FRONTAL = "02aa804e-bde0afdd-112c0b34-7bc16630-4e384014"
INDEX = {
    "patient": ["patient_id"],
    "study": ["patient_id", "study_id"],
    "image": ["patient_id", "study_id", "image_id"],
    "question": ["patient_id", "study_id", "question_id"],
    "question_image": ["patient_id", "study_id", "question_id", "image_id"],
    "answer": ["patient_id", "study_id", "question_id", "answer_id"],
    "answer_image": ["patient_id", "study_id", "question_id", "answer_id", "image_id"],
}
SUMMARY_TABLES = {"questions": "question", "answer parts": "answer", "studies": "study",
                  "patients": "patient", "images": "image"}


def check(condition, message):
    if not condition:
        print(f"FAIL: {message}")
        sys.exit(1)


def summary_counts(summary):
    """{folder: {what: n}} from the command's summary lines."""
    counts = {}
    for line in summary.splitlines():
        match = re.match(r"^(\S+) \((\S+)\): (.*)$", line)
        if match:
            numbers = dict((what, int(n)) for n, what in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", match.group(3).split(";")[0]))
            counts[match.group(1)] = numbers
    return counts


EXTRACTION = [f"question.quality.{aspect}" for aspect in (
    "region_extract_quality", "entity_extract_quality", "sentence_name_quality", "change_quality",
    "general_issue_level")]


def tables(folder):
    frames = {}
    for level, index in INDEX.items():
        path = folder / "metadata" / f"{level}_metadata.parquet"
        frame = pd.read_parquet(path)
        check(list(frame.index.names) == index, f"{path}: index {frame.index.names}")
        plain = frame.reset_index()
        check(list(plain.columns[: len(index)]) == index, f"{path}: reset_index {list(plain.columns)}")
        check(all("." in c for c in plain.columns[len(index):] if c != "split"), f"{path}: dotted names")
        # Every table has the split, patients too (loaders split by patient).
        check("split" in plain.columns and plain["split"].notna().all(), f"{path}: split")
        rows = duckdb.sql(f"SELECT count(*) FROM read_parquet('{path}')").fetchall()[0][0]
        csv = pd.read_csv(folder / "metadata" / f"{level}_metadata.csv.gz")
        check(rows == len(frame) == len(csv), f"{path}: duckdb {rows}, pandas {len(frame)}, csv {len(csv)}")
        check(list(csv.columns[: len(index)]) == index, f"{path}: csv index first")
        if level == "answer":
            first = plain.groupby(["patient_id", "study_id", "question_id"])["answer_id"].min()
            check(bool(first.eq(1).all()), f"{path}: answer ids count from 1")
        if level == "image":
            views = set(plain["img.view_position"].unique())
            check(views <= {"frontal", "lateral"}, f"{path}: views {views}")
        frames[level] = plain
    return frames


def boxes(folder):
    return duckdb.sql(
        f"""WITH parts AS (SELECT unnest(answers) AS a FROM read_parquet('{folder / "qa.parquet"}')),
                 locs AS (SELECT unnest(a.localization) AS l FROM parts)
            SELECT l.image_id, unnest(l.bboxes) AS box FROM locs"""
    ).fetchall()


def members(path):
    with zipfile.ZipFile(path) as archive:
        return {name: json.loads(archive.read(name)) for name in archive.namelist()}


def main():
    root, summary = Path(sys.argv[1]), summary_counts(sys.argv[2])
    check(set(summary) == {".", "exports/A_frontal", "exports/B_frontal"}, f"summary {summary}")
    for name, counts in summary.items():
        folder = root / name
        frames = tables(folder)
        for what, level in SUMMARY_TABLES.items():
            check(len(frames[level]) == counts[what], f"{name}: {what} {len(frames[level])} vs summary {counts[what]}")
        qa = duckdb.sql(f"SELECT count(*) FROM read_parquet('{folder / 'qa.parquet'}')").fetchall()[0][0]
        check(qa == counts["questions"], f"{name}: qa.parquet {qa}")
        questions = sum(len(v["questions"]) for k, v in members(folder / "qa.zip").items())
        check(questions == counts["questions"], f"{name}: qa.zip {questions}")
        # As loaders of the real release read it: joined to its images, no question is lost, and
        # every quality value is an integer (no NaN), in the tables and in qa.json.
        q, qi = frames["question"], frames["question_image"]
        keys = ["patient_id", "study_id", "question_id"]
        joined = q.merge(qi, on=keys, how="inner")[keys].drop_duplicates()
        check(len(joined) == len(q), f"{name}: {len(q) - len(joined)} questions without image rows")
        for column in EXTRACTION + ["question_img.quality.localization_quality"]:
            frame = qi if column.startswith("question_img.") else q
            check(pd.api.types.is_integer_dtype(frame[column]), f"{name}: {column} is {frame[column].dtype}")
        for study in members(folder / "qa.zip").values():
            for asked in study["questions"]:
                levels = list(asked["extraction_quality"].values()) + list(asked["question_img_localization_quality"].values())
                check(asked["question_img_localization_quality"] and all(isinstance(v, int) for v in levels),
                      f"{name}: {asked['question_id']} quality {levels}")
                check(asked["answers"][0]["answer_id"] == 1, f"{name}: {asked['question_id']} answer ids from 1")

    every = tables(root)
    check(len(every["question"]) == 3 and len(every["image"]) == 3, "root: every question and image")
    check(len(boxes(root)) == 1 + 2 + 1 + 2, f"root boxes {boxes(root)}")

    ft_dir = root / "exports" / "A_frontal"
    ft = tables(ft_dir)
    question = ft["question"].iloc[0]
    check(list(ft["question"]["question_id"]) == ["D02_has_finding_001"], "FT holds the A+ question")
    check(question["question.quality.rating"] == "5_A+" and question["question.quality.rating_rank"] == 5, f"{question}")
    check(question["question.quality.general_issue_level"] == 3, "FIXABLE is 3")
    check(set(ft["answer_image"]["image_id"]) == {FRONTAL}, "FT answer images are frontal")
    check(list(ft["image"]["img.view_position"]) == ["frontal"], "FT images")
    check(bool(ft["answer_image"]["answer_img.has_masks"].iloc[0]), "BOX_AND_MASK → has_masks")
    check([image for image, _ in boxes(ft_dir)] == [FRONTAL], f"FT boxes {boxes(ft_dir)}")
    qa = members(ft_dir / "qa.zip")
    check(list(qa) == ["qa/p10/p10000032/s50414267.qa.json"], f"qa.zip members {list(qa)}")
    part = qa["qa/p10/p10000032/s50414267.qa.json"]["questions"][0]["answers"][0]["sub_answers"][0]
    check(list(part["localization"]) == [FRONTAL] and part["answer_quality"]["entailment"] == 3, f"{part}")
    scene = members(ft_dir / "scene_graph.zip")
    meta = scene["scene_data/p10/p10000032/s50414267.metadata.json"]
    check([i["view_position"] for i in meta["images"]] == ["frontal"] and meta["split"] == "train", f"{meta}")
    graph = scene["scene_data/p10/p10000032/s50414267.scene_graph.json"]
    check(graph["study_img_localization_quality"] == {FRONTAL: 3}, f"{graph['study_img_localization_quality']}")

    pt = pd.read_parquet(root / "exports" / "B_frontal" / "metadata" / "question_metadata.parquet")
    check(len(pt) == 2 and len(pt[pt["question.quality.rating_rank"] >= 4]) == 1, "PT and its rating_rank filter")
    ranked = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{root / 'exports/B_frontal/qa.parquet'}') WHERE rating_rank >= 4"
    ).fetchall()[0][0]
    check(ranked == 1, f"duckdb rating_rank filter {ranked}")
    sample = pd.read_parquet(ft_dir / "metadata" / "q1M" / "question_metadata.parquet")
    check(len(sample) <= 1, "the q1M sample of one question")

    mappings = pd.read_csv(root / "quality_mappings.csv")
    check(not mappings.duplicated(["key", "value"]).any(), "quality_mappings: (key, value) unique")
    check(set(mappings.columns) == {"aspect", "key", "value", "level", "rating"}, f"{mappings.columns}")
    # A loader that grades from the criteria keeps FT's questions: no scene-graph code of an FT
    # question maps to a rating below A (aspects that do not apply are NOT_APPLICABLE, A++).
    rating_of = {(m.key, int(m.value)): m.rating for m in mappings.itertuples() if m.key != "rating"}
    rank = {"D": 1, "C": 2, "B": 3, "A": 4, "A+": 5, "A++": 6}
    graded = [(column, ft["question"], column.rsplit(".", 1)[1]) for column in EXTRACTION]
    graded.append(("question_img.quality.localization_quality", ft["question_image"], "localization_quality"))
    for column, frame, key in graded:
        worst = min(rank[rating_of[(key, int(v))]] for v in frame[column])
        check(worst >= rank["A"], f"FT: {column} grades below A")
    # The vocabulary is in every folder's metadata/ (where the release's loaders look), and the
    # folder's self-description has a name of its own.
    for folder in (root, ft_dir, root / "exports" / "B_frontal"):
        info = json.loads((folder / "metadata" / "dataset_info.json").read_text())
        check(len(info["finding_entities"]) > 100, f"{folder}: dataset_info finding entities")
        check(len(info["region_names"]) > 20, f"{folder}: dataset_info regions")
        described = json.loads((folder / "cxrlake_info.json").read_text())
        check(described["name"] == "MIMIC-Ext-CXR-QBA", f"{folder}: cxrlake_info.json")
    check("| exports/A_frontal | ft |" in (root / "README.md").read_text(), "README counts")
    print("release ok")


if __name__ == "__main__":
    main()
