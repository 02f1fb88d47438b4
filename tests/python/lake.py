"""Reads a cxrlake lake table whose replaced rows are deleted by a Delta deletion vector, through
the `deltalake` package (delta-rs) into pandas and duckdb, and checks that they stay deleted.

Usage: lake.py QA_TABLE_DIR
The table holds the two sample questions of crates/cli/tests/it/interop.rs for study s50414267
and, after a replace of study s50414268, one question of it rated A (its two old rows deleted).
"""
import sys

import duckdb
import pyarrow as pa
from deltalake import DeltaTable


def check(condition, message):
    if not condition:
        print(f"FAIL: {message}")
        sys.exit(1)


def main():
    table = DeltaTable(sys.argv[1])
    features = table.protocol().reader_features or []
    check("deletionVectors" in features, f"reader features {features}")
    # DeltaTable.scan() applies deletion vectors (to_pandas()/to_pyarrow_table() refuse them). It
    # returns string views, which pandas converts in flat columns but not inside lists.
    rows = pa.table(table.scan(columns=["study_id", "question_id", "rating", "rating_rank"]))
    frame = rows.to_pandas()
    counts = frame.groupby("study_id").size().to_dict()
    check(counts == {"s50414267": 2, "s50414268": 1}, f"pandas rows per study {counts}")
    replaced = frame.loc[frame["study_id"] == "s50414268", "rating"].tolist()
    check(replaced == ["A"], f"pandas: the replaced study's rows {replaced}")
    con = duckdb.connect()
    got = con.execute(
        "SELECT study_id, count(*), min(rating_rank) FROM rows GROUP BY 1 ORDER BY 1"
    ).fetchall()
    check(got == [("s50414267", 2, 3), ("s50414268", 1, 4)], f"duckdb {got}")
    print("lake ok")


if __name__ == "__main__":
    main()
