//! The outputs of a threshold search (`harness threshold`): for each variant,
//! the probes of one trigger value each (several seeds per probe), the
//! bracket around the smallest value that tips the variant into a
//! metastable failure, and the page, JSON and chart written from them.
//! Pure functions of [`ThresholdReport`]; the harness only runs the probes.

mod chart;
mod page;

pub use page::write_threshold;

use serde::Serialize;

/// One seed of one probe.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeRun {
    pub seed: u64,
    /// The verdict's class (`metastable`, `recovered`, ...), or `not run`.
    pub class: String,
    /// The verdict in words.
    pub verdict: String,
    /// The run's report folder, relative to the search's folder.
    pub report: Option<String>,
}

/// What the seeds of one probe said, by majority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeCall {
    /// A majority of the seeds was metastable.
    Tips,
    /// A majority came back (stable or recovered).
    Holds,
    /// Neither: too many seeds could not be judged.
    Undecided,
}

/// One trigger value tried, with every seed's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Probe {
    pub value: f64,
    /// The value as set in the experiment, e.g. `2.25s`.
    pub text: String,
    pub runs: Vec<ProbeRun>,
    pub metastable: usize,
    pub came_back: usize,
    pub call: ProbeCall,
}

impl Probe {
    /// Classifies a probe from its runs' classes by majority of all seeds.
    pub fn new(value: f64, text: String, runs: Vec<ProbeRun>) -> Probe {
        let metastable = runs.iter().filter(|r| r.class == "metastable").count();
        let came_back = runs
            .iter()
            .filter(|r| r.class == "stable" || r.class == "recovered")
            .count();
        let n = runs.len();
        let call = if 2 * metastable > n {
            ProbeCall::Tips
        } else if 2 * came_back > n {
            ProbeCall::Holds
        } else {
            ProbeCall::Undecided
        };
        Probe {
            value,
            text,
            runs,
            metastable,
            came_back,
            call,
        }
    }

    /// e.g. "2/3 seeds".
    pub fn tally(&self, k: usize) -> String {
        format!("{k}/{} seeds", self.runs.len())
    }
}

/// Where a variant's search ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Recovers at `holds_at`, metastable at `tips_at`: the tipping point lies between.
    Bracket { holds_at: String, tips_at: String },
    /// Came back even at the severe end of the range: what a fix should show.
    NoTippingPoint { up_to: String },
    /// Already metastable at the mild end of the range (the low end, or the
    /// high one for a trigger that grows as its value falls).
    TipsAtLow { at: String },
    /// A probe's seeds could not be judged by majority.
    Undecided { at: String },
    /// Interrupted, or a probe could not be run.
    Stopped { reason: String },
}

/// One variant's search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantThreshold {
    pub variant: String,
    /// In the order they ran.
    pub probes: Vec<Probe>,
    pub outcome: Outcome,
}

impl VariantThreshold {
    fn probe(&self, text: &str) -> Option<&Probe> {
        self.probes.iter().find(|p| p.text == text)
    }

    /// The result in one sentence, with the tallies it rests on.
    pub fn sentence(&self) -> String {
        match &self.outcome {
            Outcome::Bracket { holds_at, tips_at } => {
                let h = self
                    .probe(holds_at)
                    .map_or(String::new(), |p| p.tally(p.came_back));
                let t = self
                    .probe(tips_at)
                    .map_or(String::new(), |p| p.tally(p.metastable));
                format!("recovers at {holds_at} ({h}), metastable at {tips_at} ({t})")
            }
            Outcome::NoTippingPoint { up_to } => {
                let h = self
                    .probe(up_to)
                    .map_or(String::new(), |p| p.tally(p.came_back));
                format!("no tipping point up to {up_to}, the severe end (came back in {h})")
            }
            Outcome::TipsAtLow { at } => {
                let t = self
                    .probe(at)
                    .map_or(String::new(), |p| p.tally(p.metastable));
                format!("already metastable at the mild end of the range, {at} ({t})")
            }
            Outcome::Undecided { at } => format!(
                "stopped at {at}: no majority of its seeds was judged metastable or recovered \
                 (lengthen the run or add seeds)"
            ),
            Outcome::Stopped { reason } => format!("stopped: {reason}"),
        }
    }
}

/// A whole threshold search.
#[derive(Debug, Clone, Serialize)]
pub struct ThresholdReport {
    pub experiment: String,
    pub file: String,
    pub run_id: String,
    pub quick: bool,
    pub trigger_paths: Vec<String>,
    pub low: f64,
    pub high: f64,
    pub low_text: String,
    pub high_text: String,
    /// Stop when the bracket is at most this share of `high - low`.
    pub resolution: f64,
    pub seeds: Vec<u64>,
    pub set: Vec<String>,
    pub estimated_s: u64,
    pub wall_s: f64,
    pub interrupted: bool,
    pub variants: Vec<VariantThreshold>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(class: &str) -> ProbeRun {
        ProbeRun {
            seed: 1,
            class: class.into(),
            verdict: class.into(),
            report: Some("probes/x".into()),
        }
    }

    #[test]
    fn probes_are_called_by_majority_of_all_seeds() {
        let p = |c: &[&str]| Probe::new(1.0, "1s".into(), c.iter().map(|c| run(c)).collect()).call;
        assert_eq!(
            p(&["metastable", "metastable", "recovered"]),
            ProbeCall::Tips
        );
        assert_eq!(p(&["stable", "recovered", "metastable"]), ProbeCall::Holds);
        assert_eq!(
            p(&["metastable", "inconclusive", "recovered"]),
            ProbeCall::Undecided
        );
        assert_eq!(
            p(&["metastable", "metastable", "recovered", "recovered"]),
            ProbeCall::Undecided
        );
    }

    #[test]
    fn writes_the_page_json_and_chart() {
        let probes = vec![
            Probe::new(
                8.0,
                "8s".into(),
                vec![run("metastable"), run("metastable"), run("recovered")],
            ),
            Probe::new(
                0.5,
                "0.5s".into(),
                vec![run("recovered"), run("stable"), run("recovered")],
            ),
            Probe::new(4.25, "4.25s".into(), vec![run("metastable"); 3]),
        ];
        let r = ThresholdReport {
            experiment: "queue-overflow".into(),
            file: "f.yaml".into(),
            run_id: "test".into(),
            quick: true,
            trigger_paths: vec!["quick.timeline.0.duration".into()],
            low: 0.5,
            high: 8.0,
            low_text: "0.5s".into(),
            high_text: "8s".into(),
            resolution: 0.1,
            seeds: vec![1, 2, 3],
            set: vec![],
            estimated_s: 100,
            wall_s: 90.0,
            interrupted: false,
            variants: vec![
                VariantThreshold {
                    variant: "before-fix".into(),
                    probes,
                    outcome: Outcome::Bracket {
                        holds_at: "0.5s".into(),
                        tips_at: "4.25s".into(),
                    },
                },
                VariantThreshold {
                    variant: "after-fix".into(),
                    probes: vec![Probe::new(8.0, "8s".into(), vec![run("recovered"); 3])],
                    outcome: Outcome::NoTippingPoint { up_to: "8s".into() },
                },
            ],
        };
        assert_eq!(
            r.variants[0].sentence(),
            "recovers at 0.5s (3/3 seeds), metastable at 4.25s (3/3 seeds)"
        );
        assert_eq!(
            r.variants[1].sentence(),
            "no tipping point up to 8s, the severe end (came back in 3/3 seeds)"
        );
        let dir = std::env::temp_dir().join(format!("threshold-test-{}", std::process::id()));
        let page = write_threshold(&dir, &r).unwrap();
        let html = std::fs::read_to_string(page).unwrap();
        assert!(html.contains("no tipping point up to 8s"));
        assert!(html.contains("data:image/png;base64,"));
        assert!(dir.join("charts/threshold.svg").exists());
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("threshold.json")).unwrap())
                .unwrap();
        assert_eq!(json["variants"][0]["outcome"]["outcome"], "bracket");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
