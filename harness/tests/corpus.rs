//! The validator on files a user could write by mistake.
//!
//! - `tests/corpus/impossible/`: one file per impossible timeline value (and
//!   a few for the quick form). `harness validate` must refuse each with
//!   exit code 2 and `file:line:column: field: message`, the field being the
//!   one the file's first line names (`# expect: FIELD`).
//! - Every file of `experiments/` is accepted, both forms, and so is the
//!   user guide's tutorial experiment (`docs/tutorial/`).
//! - Mutations of the seed experiments (numbers replaced by impossible ones,
//!   lines dropped, doubled or cut, keys misspelt) never panic the
//!   validator, and every rejection is located.

mod common;

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/impossible");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

fn validate(path: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("validate")
        .arg(path)
        .output()
        .expect("running harness validate");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `error: FILE:LINE:COLUMN: FIELD: ...` with LINE and COLUMN >= 1.
fn located(stderr: &str, file: &Path) -> bool {
    let prefix = format!("error: {}:", file.display());
    let Some(rest) = stderr.lines().find_map(|l| l.strip_prefix(&prefix)) else {
        return false;
    };
    let mut parts = rest.splitn(3, ':');
    let n = |p: Option<&str>| p.and_then(|x| x.trim().parse::<u64>().ok()).unwrap_or(0);
    n(parts.next()) >= 1 && n(parts.next()) >= 1
}

#[test]
fn every_impossible_value_is_refused_with_its_location() {
    let files = corpus();
    assert!(files.len() >= 30, "the corpus has {} files", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{}: first line must be `# expect: FIELD`", f.display()));
        let (field, quick) = match expect.strip_suffix(" (quick form)") {
            Some(f) => (f, true),
            None => (expect, false),
        };
        let (code, stderr) = validate(&f);
        assert_eq!(code, 2, "{}: {stderr}", f.display());
        assert!(
            located(&stderr, &f),
            "{}: not located: {stderr}",
            f.display()
        );
        assert!(
            stderr.contains(field),
            "{}: does not name {field:?}: {stderr}",
            f.display()
        );
        assert_eq!(
            stderr.contains("in the quick form"),
            quick,
            "{}: says which form: {stderr}",
            f.display()
        );
        assert!(!stderr.contains("panicked"), "{}: {stderr}", f.display());
    }
}

#[test]
fn every_experiment_is_accepted_in_both_forms() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let shipped = std::fs::read_dir(root.join("experiments")).unwrap();
    let tutorial = std::fs::read_dir(root.join("docs/tutorial")).unwrap();
    let time_shape = std::fs::read_dir(root.join("experiments/time-shape")).unwrap();
    for e in shipped.chain(tutorial).chain(time_shape).flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "yaml") {
            if let Some(why) = common::proxy_missing(&std::fs::read_to_string(&p).unwrap()) {
                eprintln!("SKIPPED {}: {why}", p.display());
                continue;
            }
            let (code, stderr) = validate(&p);
            assert_eq!(code, 0, "{}: {stderr}", p.display());
        }
    }
}

fn seeds() -> Vec<String> {
    ["retry-storm", "queue-overflow", "zone-failover"]
        .iter()
        .map(|n| {
            std::fs::read_to_string(format!(
                "{}/../experiments/{n}.yaml",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap()
        })
        .collect()
}

/// One mutation of a text, chosen by `kind` at position `at` (both taken modulo what fits).
fn mutate(text: &str, kind: u8, at: usize, pick: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let i = at % lines.len().max(1);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    const NUMBERS: &[&str] = &[
        "0",
        "-1",
        "-0.5",
        "1e12",
        "0.0000001",
        "nan",
        ".inf",
        "99999999999999999999",
    ];
    const WORDS: &[&str] = &[
        "durration",
        "ratoi",
        "lanse",
        "zonee",
        "facotr",
        "atx",
        "",
        "[",
        "{",
        "}:",
        "~",
    ];
    match kind % 6 {
        // A number replaced by an impossible one.
        0 => {
            let line = &out[i];
            let digit = line.char_indices().find(|(_, c)| c.is_ascii_digit());
            if let Some((p, _)) = digit {
                let end = line[p..]
                    .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .map_or(line.len(), |e| p + e);
                out[i] = format!(
                    "{}{}{}",
                    &line[..p],
                    NUMBERS[pick % NUMBERS.len()],
                    &line[end..]
                );
            }
        }
        // A line dropped.
        1 => {
            out.remove(i);
        }
        // A line doubled (duplicate keys).
        2 => {
            let l = out[i].clone();
            out.insert(i, l);
        }
        // A key misspelt or broken.
        3 => {
            if let Some(p) = out[i].find(':') {
                let start = out[i][..p].rfind([' ', '{', ',']).map_or(0, |s| s + 1);
                out[i] = format!(
                    "{}{}{}",
                    &out[i][..start],
                    WORDS[pick % WORDS.len()],
                    &out[i][p..]
                );
            }
        }
        // The file cut short.
        4 => out.truncate(i),
        // A line's indentation changed.
        _ => out[i] = format!("   {}", out[i]),
    }
    out.join("\n") + "\n"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_experiments_never_panic_and_every_rejection_is_located(
        which in 0usize..3,
        kinds in proptest::collection::vec((0u8..6, 0usize..200, 0usize..20), 1..4),
    ) {
        let mut text = seeds()[which].clone();
        for (kind, at, pick) in kinds {
            text = mutate(&text, kind, at, pick);
        }
        let r = std::panic::catch_unwind(|| harness::experiment::parse_forms(&text, "mutated.yaml"));
        let result = r.map_err(|_| TestCaseError::fail(format!("the validator panicked on:\n{text}")))?;
        if let Err(e) = result {
            prop_assert!(e.line >= 1 && e.column >= 1, "not located: {e}\n{text}");
            prop_assert!(!e.field.is_empty(), "no field: {e}");
        }
    }
}
