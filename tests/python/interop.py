"""Reads Parquet files written by cxrlake with real duckdb and pandas/pyarrow and checks values.

Usage: interop.py QA_ALL.parquet QA_FT.parquet
QA_ALL holds the two sample questions of crates/cli/tests/it/interop.rs; QA_FT is the
`rating >= 'A'` subset cxrlake exported, which must hold exactly the A+ question.
"""
import sys

import duckdb
import pandas as pd
import pyarrow.parquet as pq

EXPECTED_BOXES = [
    ("02aa804e-bde0afdd-112c0b34-7bc16630-4e384014", 0, [1520.5, 1400.0, 2300.25, 2210.0]),
    ("174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962", 0, [10.0, 20.0, 30.0, 40.0]),
    ("174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962", 1, [50.0, 60.0, 70.0, 80.0]),
]


def check(condition, message):
    if not condition:
        print(f"FAIL: {message}")
        sys.exit(1)


def duckdb_boxes(path):
    con = duckdb.connect()
    rows = con.execute(
        f"""
        WITH parts AS (SELECT question_id, unnest(answers) AS a FROM read_parquet('{path}')),
             locs AS (SELECT question_id, a.answer_id AS answer_id, unnest(a.localization) AS l FROM parts),
             boxes AS (SELECT l.image_id AS image_id, unnest(l.bboxes) AS box,
                              generate_subscripts(l.bboxes, 1) - 1 AS box_index FROM locs)
        SELECT image_id, box_index, box FROM boxes ORDER BY image_id, box_index
        """
    ).fetchall()
    got = [(image, index, [float(v) for v in box]) for image, index, box in rows]
    check(got == EXPECTED_BOXES, f"duckdb boxes {got}")
    parts = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE a.from_report) "
        f"FROM (SELECT unnest(answers) AS a FROM read_parquet('{path}'))"
    ).fetchone()
    check(parts == (3, 1), f"duckdb answer parts {parts}")
    modifiers = con.execute(
        f"SELECT m.modifier_type, m.value FROM (SELECT unnest(a.modifiers) AS m FROM "
        f"(SELECT unnest(answers) AS a FROM read_parquet('{path}')))"
    ).fetchall()
    check(modifiers == [("temporal", "new")], f"duckdb modifiers {modifiers}")
    ranked = con.execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE rating_rank >= 4").fetchone()[0]
    check(ranked == 1, f"duckdb rating_rank filter {ranked}")


def pandas_boxes(path):
    frame = pd.read_parquet(path)
    check(len(frame) == 2, f"pandas rows {len(frame)}")
    parts = frame[["question_id", "answers"]].explode("answers", ignore_index=True)
    parts = pd.concat([parts.drop(columns="answers"), pd.json_normalize(parts["answers"])], axis=1)
    check(sorted(parts["answer_type"]) == ["details", "main_answer", "main_answer"], "pandas answer types")
    locs = parts[["localization"]].explode("localization", ignore_index=True).dropna()
    got = []
    for loc in locs["localization"]:
        for index, box in enumerate(loc["bboxes"]):
            got.append((loc["image_id"], index, [float(v) for v in box]))
    check(sorted(got) == EXPECTED_BOXES, f"pandas boxes {got}")
    check(list(frame.loc[frame["rating_rank"] >= 4, "rating"]) == ["A+"], "pandas rating_rank filter")
    table = pq.read_table(path)
    check(table.schema.field("answers").type.value_type.num_fields >= 20, "pyarrow nested schema")


def main():
    qa_all, qa_ft = sys.argv[1], sys.argv[2]
    duckdb_boxes(qa_all)
    pandas_boxes(qa_all)
    ft = pd.read_parquet(qa_ft)
    check(list(ft["rating"]) == ["A+"], f"cxrlake's rating >= 'A' export holds {list(ft['rating'])}")
    print("interop ok")


if __name__ == "__main__":
    main()
