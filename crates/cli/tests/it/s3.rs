//! The lake, ingest sources and exports on S3: a real S3-compatible server on loopback
//! (`s3s-fs`, which checks request signatures and honours put-if-absent, the Delta commit
//! protocol's one requirement), credentials from a `[storage]` config file.
//!
//! The same synthetic corpus goes through the whole pipeline twice, into a folder lake from a
//! local folder and into an `s3://` lake from an `s3://` prefix; every table must have the same
//! rows (order-independent digests), `export release` to `s3://` must give the same files as to a
//! folder, and pandas, duckdb and delta-rs must read both back through S3. A missing bucket,
//! refused credentials and an unreachable endpoint are each named as such.
//!
//! Needs the `s3s-fs` binary (`cargo install s3s-fs --version 0.14.1`, which the README's test
//! command runs when it is missing; or `S3S_FS=/path/to/s3s-fs`).

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::snapshot::Snapshot;
use crate::{count_by, cxrlake, ingested_lake, ok};

const BUCKET: &str = "lakes";
const ACCESS_KEY: &str = "cxrlake-test";
const SECRET_KEY: &str = "cxrlake-test-secret";

/// An `s3s-fs` server on a free loopback port, serving `<dir>/s3` (bucket `lakes` = the folder
/// `<dir>/s3/lakes`), stopped when dropped.
struct S3Server {
    child: Child,
    endpoint: String,
    root: PathBuf,
    config: PathBuf,
}

impl S3Server {
    fn start(dir: &Path) -> S3Server {
        let root = dir.join("s3");
        std::fs::create_dir_all(root.join(BUCKET)).expect("bucket folder");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = Command::new(s3s_fs())
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(&root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start s3s-fs");
        let endpoint = format!("127.0.0.1:{port}");
        let started = Instant::now();
        while TcpStream::connect(&endpoint).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "s3s-fs did not listen on {endpoint}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let config = dir.join("s3.toml");
        std::fs::write(&config, storage_config(&endpoint, SECRET_KEY)).expect("config");
        S3Server {
            child,
            endpoint,
            root,
            config,
        }
    }

    /// Runs `cxrlake --lake <lake> --config <the server's config> <args>`.
    fn cxrlake(&self, lake: &str, args: &[&str]) -> Output {
        cxrlake_with(&self.config, lake, args)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `[storage]` options of the server at `endpoint` with secret key `secret`.
fn storage_config(endpoint: &str, secret: &str) -> String {
    format!(
        "[storage]\naws_endpoint = \"http://{endpoint}\"\naws_access_key_id = \"{ACCESS_KEY}\"\n\
         aws_secret_access_key = \"{secret}\"\naws_region = \"us-east-1\"\naws_allow_http = \"true\"\n"
    )
}

fn cxrlake_with(config: &Path, lake: &str, args: &[&str]) -> Output {
    let config = config.to_str().expect("utf8");
    cxrlake(Path::new(lake), &[&["--config", config], args].concat())
}

/// The `s3s-fs` binary: `$S3S_FS`, on `PATH`, or in `~/.cargo/bin`.
fn s3s_fs() -> PathBuf {
    if let Some(path) = std::env::var_os("S3S_FS") {
        return PathBuf::from(path);
    }
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cargo/bin"));
    }
    candidates
        .into_iter()
        .map(|dir| dir.join("s3s-fs"))
        .find(|path| path.is_file())
        .expect(
            "s3s-fs is not installed: `cargo install s3s-fs --version 0.14.1` (scripts/test does)",
        )
}

/// Every file under `root` (relative path → bytes).
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let name = path.strip_prefix(root).expect("under root");
                let name = name.to_string_lossy().replace('\\', "/");
                out.insert(name, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// The members of a zip (name → bytes).
fn members(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
    (0..archive.len())
        .map(|i| {
            let mut member = archive.by_index(i).expect("member");
            let mut data = Vec::new();
            member.read_to_end(&mut data).expect("inflate");
            (member.name().to_string(), data)
        })
        .collect()
}

/// The lines of a gzipped CSV file, sorted (the header among them).
fn csv_lines(bytes: &[u8]) -> Vec<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .expect("gzip");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Asserts that every table of the server's lake `lake` has the rows of the folder lake `local`
/// (which has QA pairs).
fn same_tables(server: &S3Server, lake: &str, local: &Path) {
    let want = Snapshot::of(local);
    let got = Snapshot::by(&|args| server.cxrlake(lake, args));
    assert!(want.rows("qa") > 0, "the local run wrote no QA pairs");
    assert_eq!(
        got.content(),
        want.content(),
        "tables differ from the local run's"
    );
}

/// `tests/python/s3.py` reads, through S3, the release `s3://<bucket>/<release>` (pandas, duckdb,
/// the zips) and the qa table of the `s3://<bucket>/lake` lake `lake` (delta-rs), and finds the
/// lake's QA pairs and those rated A or better; the lake's QA pairs.
fn outside_tools_read(server: &S3Server, lake: &str, release: &str) -> u64 {
    let in_lake = |args: &[&str]| server.cxrlake(lake, args);
    let qa = count_by(&in_lake, "SELECT count(*) FROM qa");
    let ft = count_by(&in_lake, "SELECT count(*) FROM qa WHERE rating >= 'A'");
    let (qa_text, ft_text) = (qa.to_string(), ft.to_string());
    let release = format!("{BUCKET}/{release}");
    let lake_key = format!("{BUCKET}/lake");
    assert_eq!(
        lake,
        format!("s3://{lake_key}"),
        "s3.py reads the lake at {lake_key}"
    );
    let args = [
        server.endpoint.as_str(),
        ACCESS_KEY,
        SECRET_KEY,
        &release,
        &lake_key,
        &qa_text,
        &ft_text,
    ];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    crate::python_check("s3.py", &args, "s3 ok");
    qa
}

/// Order-independent digest of a table file read by `cxrlake sql` (local path or URL).
fn file_digest(run: &dyn Fn(&[&str]) -> Output, location: &str) -> (usize, u64) {
    let rows = crate::snapshot::rows(run, &format!("'{location}'"));
    let mut lines: Vec<String> = rows.iter().map(ToString::to_string).collect();
    lines.sort();
    (lines.len(), crate::snapshot::hash(&lines))
}

/// A release: its folder on this machine (an S3 server's folder for a bucket's), where
/// `cxrlake sql` reads it, and how to run `cxrlake` there.
type Release<'a> = (&'a Path, &'a str, &'a dyn Fn(&[&str]) -> Output);

/// Asserts that release `got` has the files of release `want`: zips with the same members,
/// table files with the same rows (read by `cxrlake sql`), the rest byte for byte. The
/// provenance table names commit times, which differ between two runs.
fn same_release(want: Release<'_>, got: Release<'_>) {
    let (want_files, got_files) = (files(want.0), files(got.0));
    let names = |f: &BTreeMap<String, Vec<u8>>| f.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&got_files), names(&want_files));
    let mut tables = 0;
    for (name, bytes) in &want_files {
        let other = &got_files[name];
        if name.ends_with(".zip") {
            assert_eq!(members(other), members(bytes), "{name}");
        } else if name.ends_with(".csv.gz") {
            assert_eq!(csv_lines(other), csv_lines(bytes), "{name}");
        } else if name.ends_with(".parquet") {
            let digest = |(_, location, run): Release<'_>| {
                file_digest(run, &format!("{}/{name}", location.trim_end_matches('/')))
            };
            assert_eq!(digest(got), digest(want), "{name}");
            tables += 1;
        } else if !name.ends_with("provenance.csv") && !name.ends_with("index.html") {
            assert_eq!(other, bytes, "{name}");
        }
    }
    assert!(tables >= 5, "only {tables} Parquet files compared");
}

#[test]
fn the_pipeline_on_s3_equals_the_local_run_and_exports_to_s3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = S3Server::start(dir.path());

    // Local: folder corpus → folder lake → folder release.
    let local = ingested_lake(dir.path(), 12, 5);
    ok(cxrlake(&local, &["run"]));
    let local_release = dir.path().join("release");
    ok(cxrlake(
        &local,
        &[
            "export",
            "release",
            "--out",
            local_release.to_str().expect("utf8"),
        ],
    ));

    // S3: the same corpus as objects (written into the bucket's folder, read through S3) →
    // s3:// lake → s3:// release.
    let corpus = dir.path().join("corpus");
    let objects = server.root.join(BUCKET).join("corpus");
    for (name, bytes) in files(&corpus) {
        let target = objects.join(&name);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(target, bytes).expect("object");
    }
    let lake = format!("s3://{BUCKET}/lake");
    ok(server.cxrlake(&lake, &["init"]));
    let ingested = ok(server.cxrlake(&lake, &["ingest", &format!("s3://{BUCKET}/corpus")]));
    assert!(
        ingested.contains(&format!("from s3://{BUCKET}/corpus/")),
        "{ingested}"
    );
    ok(server.cxrlake(&lake, &["run"]));
    let exported = ok(server.cxrlake(
        &lake,
        &[
            "export",
            "release",
            "--out",
            &format!("s3://{BUCKET}/release"),
        ],
    ));
    assert!(
        exported.contains(&format!("to s3://{BUCKET}/release/")),
        "{exported}"
    );

    // Every table has the same rows.
    same_tables(&server, &lake, &local);

    // The release on S3 has the same files as the local one.
    let local_run = |args: &[&str]| cxrlake(&local, args);
    let remote_run = |args: &[&str]| server.cxrlake(&lake, args);
    same_release(
        (&local_release, &local_release.to_string_lossy(), &local_run),
        (
            &server.root.join(BUCKET).join("release"),
            &format!("s3://{BUCKET}/release"),
            &remote_run,
        ),
    );

    // Outside tools read both back through S3.
    let qa = outside_tools_read(&server, &lake, "release");

    // The release imports back from S3.
    let imported = format!("s3://{BUCKET}/imported");
    ok(server.cxrlake(
        &imported,
        &["import", "release", &format!("s3://{BUCKET}/release")],
    ));
    let back = count_by(
        &|args: &[&str]| server.cxrlake(&imported, args),
        "SELECT count(*) FROM qa",
    );
    assert_eq!(back, qa);
}

#[test]
fn a_missing_bucket_refused_credentials_and_no_endpoint_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = S3Server::start(dir.path());
    let lake = format!("s3://{BUCKET}/lake");
    ok(server.cxrlake(&lake, &["init"]));

    let failure = |output: Output| {
        assert!(!output.status.success(), "the command succeeded");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let err = failure(server.cxrlake("s3://no-such-bucket/lake", &["tables"]));
    assert!(
        err.contains("the bucket 'no-such-bucket' does not exist"),
        "{err}"
    );
    let err = failure(server.cxrlake(
        &lake,
        &["export", "release", "--out", "s3://no-such-bucket/release"],
    ));
    assert!(
        err.contains("the bucket 'no-such-bucket' does not exist"),
        "{err}"
    );
    let err = failure(server.cxrlake(&lake, &["ingest", "s3://lakes/nothing-here"]));
    assert!(err.contains("there is nothing at this location"), "{err}");

    let wrong = dir.path().join("wrong.toml");
    std::fs::write(&wrong, storage_config(&server.endpoint, "not-the-secret")).expect("config");
    let err = failure(cxrlake_with(&wrong, &lake, &["tables"]));
    assert!(
        err.contains("the object store refused the credentials"),
        "{err}"
    );

    let closed = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port");
    let nowhere = dir.path().join("nowhere.toml");
    std::fs::write(&nowhere, storage_config(&closed.to_string(), SECRET_KEY)).expect("config");
    let err = failure(cxrlake_with(&nowhere, &lake, &["tables"]));
    assert!(err.contains("cannot be reached"), "{err}");
}

/// The stages of an offline run (rules extractor, lexical embedder, heuristic judge): their SQL
/// runs on the cluster.
const STAGES_ON_THE_CLUSTER: [&str; 8] = [
    "localize", "extract", "map", "graph", "balance", "qa", "judge", "grade",
];

#[test]
fn the_pipeline_on_ballista_with_the_lake_on_s3_equals_the_local_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = S3Server::start(dir.path());
    // Local: folder corpus → folder lake, every stage in this process. Chunks of 6 patients
    // (two per stage): distributed.rs runs the cluster over many small chunks, this test the lake
    // on S3 (each chunk is a round of cluster jobs, the bulk of its time).
    let local = ingested_lake(dir.path(), 12, 9);
    ok(cxrlake(&local, &["run", "--set", "chunk_patients=6"]));
    // The same corpus into an s3:// lake, every stage planned by the scheduler; the scheduler
    // and the executors read the lake's tables on S3 with the same options.
    let lake = format!("s3://{BUCKET}/lake");
    ok(server.cxrlake(&lake, &["init"]));
    let corpus = dir.path().join("corpus");
    ok(server.cxrlake(&lake, &["ingest", corpus.to_str().expect("utf8")]));
    let config = server.config.to_str().expect("utf8");
    let cluster = crate::distributed::Cluster::start_with(dir.path(), &["--config", config]);
    let engine = cluster.engine.as_str();
    let output = server.cxrlake(
        &lake,
        &["-v", "--engine", engine, "run", "--set", "chunk_patients=6"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    for stage in STAGES_ON_THE_CLUSTER {
        let line = stderr
            .lines()
            .find(|l| {
                crate::distributed::names_stage(l, stage) && l.contains("the stage's SQL runs")
            })
            .unwrap_or_else(|| panic!("no line says where {stage} runs:\n{stderr}"));
        assert!(line.contains(&format!("runs on {engine}")), "{line}");
    }
    // The executors wrote the tables' data files, which the cxrlake process committed.
    for table in [
        "region_boxes",
        "sentences",
        "observations",
        "scene_graphs",
        "qa",
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains("files written by the executors")
                    && l.contains(&format!("statement=\"{table}\""))),
            "{table} was not written by the executors:\n{stderr}"
        );
    }
    // Every table has the rows of the local run, and no scratch table is left.
    same_tables(&server, &lake, &local);
    let scratch = server.root.join(BUCKET).join("lake/_cxrlake/scratch");
    assert!(
        !scratch.exists() || files(&scratch).is_empty(),
        "scratch left in {}",
        scratch.display()
    );

    // An incremental run over some studies (new synonyms: the reports that use them are
    // extracted and mapped again): the executors' files replace those studies' rows.
    let edited = crate::commands::copy_refdefs(&dir.path().join("refdefs"));
    let findings = std::fs::read_to_string(edited.join("findings.toml")).expect("read");
    let synonym = r#""pleural fluid", "hydrothorax""#;
    assert!(findings.contains(synonym));
    let findings = findings.replacen(
        synonym,
        r#""pleural fluid", "hydrothorax", "cardiopulmonary process", "radiograph""#,
        1,
    );
    std::fs::write(edited.join("findings.toml"), findings).expect("write");
    let refdefs = edited.to_str().expect("utf8");
    ok(cxrlake(&local, &["run", "--refdefs", refdefs]));
    let output = server.cxrlake(
        &lake,
        &["-v", "--engine", engine, "run", "--refdefs", refdefs],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.lines().any(|l| l.contains("incremental run")
            && crate::distributed::names_stage(l, "extract")
            && l.contains(" studies")),
        "extract did not run over some studies:\n{stderr}"
    );
    same_tables(&server, &lake, &local);

    // The release exported with the lake's scan on the cluster equals the one exported here.
    let export = |out: &str, on: &[&str]| {
        let out = format!("s3://{BUCKET}/{out}");
        let mut args = vec!["-v"];
        args.extend_from_slice(on);
        args.extend(["export", "release", "--out", &out, "--sample", "40"]);
        let output = server.cxrlake(&lake, &args);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        stderr
    };
    let logged = export("release-distributed", &["--engine", engine]);
    assert!(
        logged.contains(&format!("the export's scan of the lake runs on {engine}")),
        "{logged}"
    );
    export("release-local", &[]);
    let run = |args: &[&str]| server.cxrlake(&lake, args);
    let release = |name: &str| server.root.join(BUCKET).join(name);
    same_release(
        (
            &release("release-local"),
            &format!("s3://{BUCKET}/release-local"),
            &run,
        ),
        (
            &release("release-distributed"),
            &format!("s3://{BUCKET}/release-distributed"),
            &run,
        ),
    );

    // Outside tools read what the executors wrote: delta-rs the lake's qa table (its files in
    // the executors' folders, with the statistics committed here), pandas and duckdb the
    // release exported with the cluster's scan.
    let qa = outside_tools_read(&server, &lake, "release-distributed");
    assert!(qa > 0, "the cluster's lake has no QA pairs");

    // Queries on the cluster equal the local ones.
    for query in [
        "SELECT rating, count(*) AS n FROM qa GROUP BY rating ORDER BY rating",
        "SELECT q.study_id, count(*) AS pairs, max(q.rating) AS best FROM qa q \
         JOIN reports r ON q.study_id = r.study_id WHERE q.rating >= 'A' \
         GROUP BY q.study_id ORDER BY q.study_id",
    ] {
        let local = ok(server.cxrlake(&lake, &["sql", query, "--format", "csv"]));
        let distributed = ok(server.cxrlake(
            &lake,
            &["--engine", engine, "sql", query, "--format", "csv"],
        ));
        assert_eq!(distributed, local, "{query}");
        assert!(local.lines().count() > 3, "{local}");
    }
}
