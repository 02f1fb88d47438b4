//! `cxrlake scheduler`, two `cxrlake executor`s and `cxrlake --engine ballista://… sql`: the
//! same output as a local run, lake tables, cxrlake's functions, ordered ratings and the
//! zero-copy unnest included; and a clear error without a scheduler.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use crate::{cxrlake, ingested_lake, ok};

/// A scheduler and its executors, killed when the test ends however it ends.
pub(crate) struct Cluster {
    children: Vec<(Child, BufReader<ChildStdout>)>,
    /// `ballista://127.0.0.1:PORT`.
    pub(crate) engine: String,
    /// `HOST:PORT` of the scheduler.
    scheduler: String,
    /// Arguments every process gets (e.g. `--config FILE`).
    common: Vec<String>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (child, _) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

impl Cluster {
    /// Starts `cxrlake ARGS` and returns the first line it prints (its readiness line).
    fn spawn(&mut self, args: &[&str]) -> String {
        let mut child = crate::command()
            .args(&self.common)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start cxrlake");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        // Kept before any check, so that it is killed whatever happens next.
        self.children.push((child, stdout));
        read.expect("read the readiness line");
        assert!(
            !line.is_empty(),
            "cxrlake {args:?} exited before it was ready"
        );
        line
    }

    /// A scheduler and two executors with two task slots each, on loopback; the executors'
    /// shuffle files in `dir`.
    fn start(dir: &Path) -> Self {
        Self::start_with(dir, &[])
    }

    /// Like [`Cluster::start`], every process started with `common` arguments first.
    pub(crate) fn start_with(dir: &Path, common: &[&str]) -> Self {
        let mut cluster = Self {
            children: Vec::new(),
            engine: String::new(),
            scheduler: String::new(),
            common: common.iter().map(ToString::to_string).collect(),
        };
        let line = cluster.spawn(&["scheduler", "--bind", "127.0.0.1:0"]);
        cluster.scheduler = line
            .trim()
            .strip_prefix("scheduler listening on ")
            .unwrap_or_else(|| panic!("unexpected readiness line {line:?}"))
            .to_string();
        cluster.engine = format!("ballista://{}", cluster.scheduler);
        for n in 0..2 {
            cluster.add_executor(dir, n);
        }
        cluster
    }

    /// Starts executor number `n` and waits until it serves.
    fn add_executor(&mut self, dir: &Path, n: usize) {
        let (bind, grpc) = (
            format!("127.0.0.1:{}", free_port()),
            free_port().to_string(),
        );
        let work = dir.join(format!("executor-{n}"));
        let scheduler = self.scheduler.clone();
        let line = self.spawn(&[
            "executor",
            "--scheduler",
            &scheduler,
            "--bind",
            &bind,
            "--grpc-port",
            &grpc,
            "--slots",
            "2",
            "--work-dir",
            work.to_str().expect("utf8"),
        ]);
        assert!(line.starts_with("executor "), "{line}");
        // The executor serves its results once it registered with the scheduler.
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&bind).is_err() {
            assert!(Instant::now() < deadline, "executor on {bind} not ready");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills executor number `n` (SIGKILL).
    fn kill_executor(&mut self, n: usize) {
        let (child, _) = &mut self.children[n + 1];
        child.kill().expect("kill the executor");
        child.wait().expect("reap the executor");
    }
}

/// `query`'s CSV output on the lake, locally and on the cluster: equal, and at least `rows`.
fn same_output(lake: &Path, cluster: &Cluster, query: &str, rows: usize) {
    let local = ok(cxrlake(lake, &["sql", query, "--format", "csv"]));
    let distributed = ok(cxrlake(
        lake,
        &["--engine", &cluster.engine, "sql", query, "--format", "csv"],
    ));
    assert_eq!(local, distributed, "{query}");
    assert!(
        local.lines().count() > rows,
        "{query} gave too few rows:\n{local}"
    );
}

#[test]
fn sql_on_ballista_equals_local() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 20, 5);
    // Small chunks: tables of several files, so that scans have several partitions.
    ok(cxrlake(&lake, &["run", "--set", "chunk_patients=2"]));
    let cluster = Cluster::start(dir.path());

    // An aggregate over the qa table, ordered by rating (cxrlake's rating order).
    same_output(
        &lake,
        &cluster,
        "SELECT rating, count(*) AS n, count(DISTINCT study_id) AS studies FROM qa \
         GROUP BY rating ORDER BY rating",
        2,
    );
    // A join of two lake tables.
    same_output(
        &lake,
        &cluster,
        "SELECT q.study_id, count(*) AS pairs, min(length(r.text)) AS report_length \
         FROM qa q JOIN reports r ON q.study_id = r.study_id \
         GROUP BY q.study_id ORDER BY q.study_id",
        10,
    );
    // A cxrlake function (box_area, after an unnest) and an ordered-rating comparison.
    same_output(
        &lake,
        &cluster,
        "SELECT question_type, count(*) AS n, max(rating) AS best FROM qa \
         WHERE rating >= 'A' GROUP BY question_type ORDER BY question_type",
        5,
    );
    same_output(
        &lake,
        &cluster,
        "SELECT region, count(*) AS boxes, round(sum(box_area(b)), 1) AS area \
         FROM (SELECT region, unnest(bboxes) AS b FROM region_boxes) \
         GROUP BY region ORDER BY region",
        10,
    );
    // Unnest of a list of structs twice (cxrlake's zero-copy unnest on the executors).
    same_output(
        &lake,
        &cluster,
        "SELECT study_id, count(*) AS images, sum(array_length(f['bboxes'])) AS boxes \
         FROM (SELECT study_id, unnest(r['localization']) AS f \
               FROM (SELECT study_id, unnest(regions) AS r FROM scene_graphs)) \
         GROUP BY study_id ORDER BY study_id",
        10,
    );
}

/// Whether a log line of `cxrlake -v` is about stage `stage`.
pub(crate) fn names_stage(line: &str, stage: &str) -> bool {
    line.contains(&format!("stage=\"{stage}\"")) || line.contains(&format!("stage={stage} "))
}

#[test]
fn stages_run_on_ballista_when_their_functions_travel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 20, 6);
    ok(cxrlake(&lake, &["run", "--set", "chunk_patients=2"]));
    let cluster = Cluster::start(dir.path());
    let tables = "SELECT * FROM qa_balance ORDER BY kind, name";
    let graphs = "SELECT study_id, regions, observations FROM scene_graphs ORDER BY study_id";
    let local = [tables, graphs].map(|q| ok(cxrlake(&lake, &["sql", q, "--format", "json"])));
    let before = [
        table_version(&lake, "qa_balance"),
        table_version(&lake, "scene_graphs"),
    ];
    let on_cluster = format!("runs on {}", cluster.engine);
    for (args, stage, where_) in [
        (&["balance"][..], "balance", on_cluster.as_str()),
        // The functions of graph and map (lexical embedder) hold the run's definitions: they
        // travel with their recipe.
        (&["graph"][..], "graph", on_cluster.as_str()),
        (&["map"][..], "map", on_cluster.as_str()),
        // The offline ReXVQA generator has no recipe: it stays here.
        (
            &["--flavour", "rexvqa"][..],
            "rexvqa_generate",
            "runs in this process",
        ),
    ] {
        let output = cxrlake(
            &lake,
            &[&["-v", "--engine", &cluster.engine, "run"][..], args].concat(),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        let line = stderr
            .lines()
            .find(|l| names_stage(l, stage) && l.contains("the stage's SQL runs"))
            .unwrap_or_else(|| panic!("no line says where {stage} runs:\n{stderr}"));
        assert!(line.contains(where_), "{stage}: {line}");
    }
    let after = [
        table_version(&lake, "qa_balance"),
        table_version(&lake, "scene_graphs"),
    ];
    assert_ne!(after[0], before[0], "balance did not commit");
    assert_ne!(after[1], before[1], "graph did not commit");
    let distributed = [tables, graphs].map(|q| ok(cxrlake(&lake, &["sql", q, "--format", "json"])));
    assert_eq!(local, distributed);
    assert!(local[0].matches("\"kind\"").count() > 10, "{}", local[0]);
    assert!(
        local[1].matches("\"study_id\"").count() == 20,
        "{}",
        local[1]
    );
}

#[test]
fn unreachable_scheduler_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    ok(cxrlake(&lake, &["init"]));
    let scheduler = format!("127.0.0.1:{}", free_port());
    let output = cxrlake(
        &lake,
        &[
            "--engine",
            &format!("ballista://{scheduler}"),
            "sql",
            "SELECT count(*) FROM reports",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot reach the Ballista scheduler at {scheduler}"
        )) && stderr.contains("cxrlake scheduler"),
        "{stderr}"
    );
    let output = cxrlake(&lake, &["--engine", "spark://x:1", "sql", "SELECT 1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("expected `local` or `ballista://HOST:PORT`"),
        "{stderr}"
    );
}

/// The Delta version of `table` as `cxrlake tables` lists it.
fn table_version(lake: &Path, table: &str) -> String {
    let tables = ok(cxrlake(lake, &["tables"]));
    tables
        .lines()
        .find(|line| line.starts_with(&format!("{table} ")))
        .and_then(|line| line.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| panic!("{table} in `tables`:\n{tables}"))
}

#[test]
fn an_executor_killed_mid_stage_leaves_nothing_half_committed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 20, 8);
    ok(cxrlake(&lake, &["run", "--set", "chunk_patients=2"]));
    let balance = "SELECT * FROM qa_balance ORDER BY kind, name";
    let want = ok(cxrlake(&lake, &["sql", balance, "--format", "json"]));
    let mut cluster = Cluster::start(dir.path());
    let before = table_version(&lake, "qa_balance");

    // The stage starts on the cluster; one executor is SIGKILLed as soon as it does.
    let mut run = crate::command()
        .arg("--lake")
        .arg(&lake)
        .args(["-v", "--engine", &cluster.engine, "run", "balance"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cxrlake run");
    let mut stderr = BufReader::new(run.stderr.take().expect("piped stderr"));
    let mut log = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).expect("read the run's log") > 0 {
        log.push_str(&line);
        if line.contains("the stage's SQL runs on ballista://") {
            cluster.kill_executor(0);
            break;
        }
        line.clear();
    }
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).map(|_| rest)
    });
    let deadline = Instant::now() + Duration::from_secs(240);
    let status = loop {
        if let Some(status) = run.try_wait().expect("wait for the run") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = run.kill();
            panic!("the run did not end within 240 s after an executor was killed:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    log.push_str(&rest.join().expect("log reader").unwrap_or_default());
    assert!(log.contains("runs on ballista://"), "{log}");
    let after = table_version(&lake, "qa_balance");
    if status.success() {
        // Ballista ran the lost tasks again on the other executor.
        assert_ne!(after, before, "a successful run committed nothing:\n{log}");
    } else {
        assert_eq!(after, before, "a failed stage committed:\n{log}");
    }
    assert_eq!(
        ok(cxrlake(&lake, &["sql", balance, "--format", "json"])),
        want
    );

    // A replacement executor joins; the stage run again completes with the same rows.
    cluster.add_executor(dir.path(), 2);
    ok(cxrlake(
        &lake,
        &["--engine", &cluster.engine, "run", "balance"],
    ));
    assert_ne!(table_version(&lake, "qa_balance"), before);
    assert_eq!(
        ok(cxrlake(&lake, &["sql", balance, "--format", "json"])),
        want
    );
}
