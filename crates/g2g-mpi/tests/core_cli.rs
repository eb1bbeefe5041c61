//! The benchmark command line `g2gsim-core`: a report it cannot write (standard output closed,
//! as under `| head`) is an error message and a non-zero status, not a panic.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use g2g_trace::writer::{NativeWriter, Row};

fn tiny_trace(path: &Path) {
    let mut w = NativeWriter::create(path).unwrap();
    for rank in 0..2u32 {
        let mut row = Row::new("Compute");
        row.dur_ns = 1_000;
        w.push(rank, 0, &row);
    }
    w.end_window().unwrap();
    let meta = [("g2gsim.format_version".to_string(), "1".to_string()), ("g2gsim.nranks".to_string(), "2".to_string())];
    w.finish(&meta).unwrap();
}

/// A folder of its own with the two-rank trace, the Lassen preset, and the command
fn setup(name: &str) -> (PathBuf, PathBuf, PathBuf, &'static str) {
    let dir = std::env::temp_dir().join(format!("g2g-core-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("two.g2g.parquet");
    tiny_trace(&trace);
    let machine = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/g2gsim/presets/lassen.toml");
    (dir, trace, machine, env!("CARGO_BIN_EXE_g2gsim-core"))
}

#[test]
fn a_closed_standard_output_is_an_error_not_a_panic() {
    let (dir, trace, machine, core) = setup("stdout");

    // first, with standard output open: the report comes
    let ok = Command::new(core).arg(&trace).arg(&machine).arg("--json").output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("\"total_time_s\""));

    // then with the reading end of its standard output closed before it starts (closed after
    // the spawn, it raced the child: on a loaded host the child could write its report into the
    // pipe's buffer first, and end well)
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(core)
        .arg(&trace)
        .arg(&machine)
        .arg("--json")
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("writing the report to standard output"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A value the command line cannot read is an error naming the option, not the default run in
/// its place (`--sharing nope` ran exact max-min and said nothing); `--sharing` takes the study
/// model too and the report names the model that ran.
#[test]
fn a_bad_option_value_is_an_error_not_the_default() {
    let (dir, trace, machine, core) = setup("options");
    for (opt, val) in
        [("--sharing", "nope"), ("--gpus-per-node", "four"), ("--gpus-per-node", "0"), ("--solver", "fast")]
    {
        let out = Command::new(core).arg(&trace).arg(&machine).args([opt, val, "--json"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{opt} {val}: {err}");
        assert!(err.contains(opt) && out.stdout.is_empty(), "{opt} {val}: {err}");
    }
    let out =
        Command::new(core).arg(&trace).arg(&machine).args(["--sharing", "max-min-grouped", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: String = String::from_utf8_lossy(&out.stdout).chars().filter(|c| !c.is_whitespace()).collect();
    assert!(report.contains("\"sharing\":\"max-min-grouped\""), "{report}");
    // the solver of exact max-min, named in the engine block
    let out = Command::new(core).arg(&trace).arg(&machine).args(["--solver", "grouped", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: String = String::from_utf8_lossy(&out.stdout).chars().filter(|c| !c.is_whitespace()).collect();
    assert!(
        report.contains("\"sharing\":\"max-min\"") && report.contains("\"max_min_solver\":\"grouped\""),
        "{report}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
