"""Reads what cxrlake wrote to an S3-compatible server, through S3 (signed requests): the
release's Parquet tables and zips with pyarrow's S3 file system into pandas and duckdb, and the
lake's `qa` Delta table with the `deltalake` package (delta-rs).

Usage: s3.py ENDPOINT ACCESS_KEY SECRET_KEY RELEASE LAKE QA_ROWS FT_ROWS
RELEASE and LAKE are `bucket/prefix` locations; QA_ROWS is the number of QA pairs in the lake
and the release, FT_ROWS the number of them rated A or better.
"""
import io
import sys
import zipfile

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable
from pyarrow import fs


def check(condition, message):
    if not condition:
        print(f"FAIL: {message}")
        sys.exit(1)


def main():
    endpoint, key, secret, release, lake = sys.argv[1:6]
    qa_rows, ft_rows = int(sys.argv[6]), int(sys.argv[7])
    s3 = fs.S3FileSystem(
        access_key=key,
        secret_key=secret,
        endpoint_override=endpoint,
        scheme="http",
        region="us-east-1",
    )
    # The release's root tables, as a loader of the public release reads them.
    qa = pq.read_table(f"{release}/qa.parquet", filesystem=s3).to_pandas()
    check(len(qa) == qa_rows, f"qa.parquet rows {len(qa)} != {qa_rows}")
    questions = pq.read_table(
        f"{release}/metadata/question_metadata.parquet", filesystem=s3
    ).to_pandas()
    check(len(questions) == qa_rows, f"question_metadata rows {len(questions)}")
    con = duckdb.connect()
    con.register("questions", questions)
    (ft,) = con.execute(
        'SELECT count(*) FROM questions WHERE "question.quality.rating_rank" >= 4'
    ).fetchone()
    check(ft == ft_rows, f"duckdb: questions rated A or better {ft} != {ft_rows}")
    # qa.zip, fetched through S3 and read as the release's loaders do.
    with s3.open_input_file(f"{release}/qa.zip") as handle:
        archive = zipfile.ZipFile(io.BytesIO(handle.read()))
    members = [n for n in archive.namelist() if n.endswith(".qa.json")]
    check(members, "qa.zip has no .qa.json members")
    # The lake's qa table through delta-rs over S3 (deletion vectors applied by scan()).
    options = {
        "AWS_ENDPOINT_URL": f"http://{endpoint}",
        "AWS_ACCESS_KEY_ID": key,
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }
    table = DeltaTable(f"s3://{lake}/qa", storage_options=options)
    rows = pa.table(table.scan(columns=["study_id", "rating"])).num_rows
    check(rows == qa_rows, f"deltalake qa rows {rows} != {qa_rows}")
    print("s3 ok")


if __name__ == "__main__":
    main()
