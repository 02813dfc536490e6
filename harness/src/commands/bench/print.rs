//! The bench's terminal lines: each step's measurements, its targets and
//! whether they were met, printed in one place so the steps only measure.

use super::*;

pub(super) fn rate(x: f64) -> String {
    let n = x.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(super) fn storm_line(s: &memory::Storm, w: &Windows) -> (String, Verdict) {
    let mb = s.peak_rss_kb as f64 / 1024.0;
    let enough = s.attempts >= w.storm_attempts;
    let v = if enough {
        Verdict::of(mb < PEAK_RSS_TARGET_MB)
    } else {
        Verdict::Miss
    };
    let mut line = format!(
        "   peak RSS {mb:.1} MB (baseline {:.1} MB) through {} attempts of {} documents in {:.1} s ({}/s; goose saw {})\n   target < {PEAK_RSS_TARGET_MB:.0} MB  {}",
        s.baseline_rss_kb as f64 / 1024.0,
        rate(s.attempts as f64),
        s.documents,
        s.seconds,
        rate(s.attempts as f64 / s.seconds.max(1e-9)),
        rate(s.goose_requests as f64),
        v.label()
    );
    if !enough {
        line.push_str(&format!(
            " (only {} of the {} attempts required were made)",
            s.attempts, w.storm_attempts
        ));
    }
    if w.storm_attempts < STORM_ATTEMPTS {
        line.push_str(&format!(
            " (quick: {} attempts; the target is defined for {STORM_ATTEMPTS})",
            w.storm_attempts
        ));
    }
    if s.endpoint_in_process {
        line.push_str(" (the endpoint ran in the same process and is counted in the peak)");
    }
    (line, v)
}

/// Informational (no target): agents add hosts, not speed on one host.
pub(super) fn print_agents(a: &agents::AgentCeilings) {
    let single = a.runs.first().map_or(f64::NAN, |r| r.1);
    for (n, rps, lost) in &a.runs {
        println!(
            "   {n} agent(s) {:>9} req/s combined  ({:.2}x one agent{})",
            rate(*rps),
            rps / single,
            if *lost > 0 {
                format!(", {lost} LOST")
            } else {
                String::new()
            }
        );
    }
    println!(
        "   {} CPU(s) here: the agents share them, so no speed-up is expected on one host",
        crate::base::cpu::cores()
    );
}

/// "48 % in the kernel": the share of a client's CPU spent in system calls.
/// The harness and wrk make the same two per request (BENCHMARKS.md), so
/// where both shares are high the host's kernel, not the load path's own
/// code, is what the absolute CPU target measures.
pub(super) fn in_kernel(share: f64) -> String {
    format!("{:.0} % in the kernel", share * 100.0)
}

/// One harness run and the wrk run after it, on one line.
pub(super) fn print_pair(i: usize, p: &ceiling::Pair) {
    let wrk = match &p.wrk {
        Ok(w) => {
            let cpu = w
                .cpu_s
                .map(|s| {
                    format!(
                        ", {:.1} us CPU per request ({})",
                        s * 1e6 / (w.requests_per_sec * w.seconds).max(1.0),
                        in_kernel(w.system_s.unwrap_or(0.0) / s.max(1e-9))
                    )
                })
                .unwrap_or_default();
            format!(
                "wrk {:>9} req/s{cpu}; ratio {:.2}",
                rate(w.requests_per_sec),
                p.ratio().unwrap_or(f64::NAN)
            )
        }
        Err(_) => "wrk n/a".to_string(),
    };
    println!(
        "   pair {}: harness {:>9} req/s, {:.1} us CPU per attempt ({}; {} connections opened, {} arrivals waited for the cap, endpoint answered {}); {wrk}",
        i + 1,
        rate(p.harness_rps),
        p.cpu_per_attempt_us,
        in_kernel(p.kernel_share),
        p.connections,
        rate(p.late as f64),
        rate(p.endpoint_requests as f64),
    );
}

/// Step 1's lines: every pair, the medians against their targets, the
/// reqwest diagnostic and the ratio to wrk; the step's verdict.
pub(super) fn print_ceiling(c: &ceiling::Ceiling) -> Verdict {
    let mut verdicts = Vec::new();
    for (i, p) in c.pairs.iter().enumerate() {
        print_pair(i, p);
    }
    println!(
        "   harness  {:>9} req/s  (median of {} runs, each offered {}/s with max_in_flight {})",
        rate(c.harness_rps()),
        c.pairs.len(),
        rate(ceiling::OFFERED_RATE),
        ceiling::MAX_IN_FLIGHT,
    );
    let cpu = c.cpu_per_attempt_us();
    let v = Verdict::of(cpu <= CPU_PER_ATTEMPT_TARGET_US);
    println!(
        "   CPU per attempt {cpu:.1} us  (median; load runtime threads, warm-up included)   target <= {CPU_PER_ATTEMPT_TARGET_US} us  {}",
        v.label()
    );
    verdicts.push(v);
    let limit = ceiling::MAX_IN_FLIGHT as f64 * (1.0 + CONNECTIONS_SLACK);
    let v = Verdict::of(c.connections() as f64 <= limit);
    println!(
        "   connections opened {} (most in one run)   target <= max_in_flight + {:.0}% = {limit:.0}  {}",
        c.connections(),
        CONNECTIONS_SLACK * 100.0,
        v.label()
    );
    verdicts.push(v);
    println!(
        "   reqwest  {:>9} req/s  (diagnostic: plain reqwest closed loop, {} tasks, the client the load path used before; harness/reqwest {:.2})",
        rate(c.reqwest_rps),
        ceiling::MAX_IN_FLIGHT,
        c.harness_rps() / c.reqwest_rps
    );
    match (c.ratio(), c.pairs.iter().find_map(|p| p.wrk.as_ref().err())) {
        (Some(ratio), _) => {
            let v = Verdict::of(ratio >= CEILING_TARGET);
            println!(
                "   ratio harness/wrk {ratio:.2}  (median of {} pairs, each wrk run right after its harness run, same endpoint and connections)   target >= {CEILING_TARGET}  {}",
                c.pairs.len(),
                v.label()
            );
            verdicts.push(v);
        }
        (None, why) => {
            println!(
                "   wrk: {}",
                why.map_or_else(|| "not run".to_string(), |w| w.to_string())
            );
            println!("   ratio harness/wrk: n/a  {}", Verdict::Skipped.label());
        }
    }
    worst(&verdicts)
}

/// The step's verdict from its targets': a miss wins over a pass.
pub(super) fn worst(v: &[Verdict]) -> Verdict {
    [Verdict::Error, Verdict::Miss, Verdict::Pass]
        .into_iter()
        .find(|w| v.contains(w))
        .unwrap_or(Verdict::Skipped)
}

pub(super) fn print_openloop(o: &openloop::OpenLoop) -> Verdict {
    let r = &o.run;
    let ms = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.1}"));
    println!(
        "   offered {}/s for {} planned arrivals; the load path sent them at {:.0}/s ({:.1} s); arrival-schedule lag p50 {} ms, p99 {} ms, max {} ms",
        rate(o.rate),
        rate(r.planned as f64),
        r.spawned as f64 / r.wall_s.max(1e-9),
        r.wall_s,
        ms(r.lag.p50_ms),
        ms(r.lag.p99_ms),
        ms(r.lag.max_ms)
    );
    println!(
        "   attempt latency from the planned time: p50 {:.1} ms, p99 {:.1} ms (the endpoint answers at once)",
        r.latency.p50_ms, r.latency.p99_ms
    );
    if let Some(share) = o.cost.machine_share() {
        println!(
            "   harness share of the machine {:.0}% ({:.1} CPU-s of the load path, {:.1} of the endpoint)",
            share * 100.0,
            o.cost.cpu_of(run_report::CostRole::LoadPath),
            o.cost.cpu_of(run_report::CostRole::SystemUnderTest)
        );
    }
    for w in o.cost.warnings() {
        println!("   !!! HARNESS COST: {w}");
    }
    let mut all = true;
    for (what, ok) in o.honest() {
        all &= ok;
        println!("   {} {what}", if ok { "ok  " } else { "MISS" });
    }
    println!("   {}", openloop::WRK2);
    let v = Verdict::of(all);
    println!("   open loop kept honest under overload  {}", v.label());
    v
}

pub(super) fn print_instructions(i: &instructions::Instructions) {
    let shapes = [
        (
            "storm",
            &i.runs,
            i.per_attempt,
            "storm: 1,000 journeys retrying; difference of the two runs",
        ),
        (
            "arrivals",
            &i.arrivals_runs,
            i.arrivals_per_attempt,
            "arrivals: a journey per attempt, as in step 1",
        ),
    ];
    for (child, runs, per_attempt, what) in shapes {
        for (a, n) in runs {
            println!(
                "   {child} child: {} attempts, {} instructions",
                rate(*a as f64),
                rate(*n as f64)
            );
        }
        println!(
            "   load path: {} instructions per attempt ({what})",
            rate(per_attempt)
        );
    }
    match &i.wrk_per_request {
        Ok(w) => println!(
            "   wrk:       {} instructions per request (1 thread, 64 connections; ratio load path/wrk {:.1})",
            rate(*w),
            i.per_attempt / w
        ),
        Err(e) => println!("   wrk: not measured ({e})"),
    }
}

pub(super) fn print_hotpath(h: &hotpath::HotPath) -> Verdict {
    let ratio = h.sut_rps / h.healthz_rps;
    let strict = h.sut_rps / h.bare_rps;
    let v = Verdict::of(ratio >= HOTPATH_TARGET);
    println!("   client: {}", h.client);
    println!(
        "   system under test, cache hit      {:>9} req/s  (POST /v1/extract)",
        rate(h.sut_rps)
    );
    println!(
        "   axum floor, service GET /healthz  {:>9} req/s  (same axum router and layers, trivial handler)",
        rate(h.healthz_rps)
    );
    println!(
        "   bare responder, same JSON body    {:>9} req/s  (no framework at all)",
        rate(h.bare_rps)
    );
    println!(
        "   ratio service/axum floor {ratio:.2}   target >= {HOTPATH_TARGET}  {}   (stricter: service/bare responder {strict:.2})",
        v.label()
    );
    v
}

pub(super) fn print_pages(p: &pages::Pages) {
    match &p.adapter {
        Ok(a) => println!("   wgpu adapter: {a}"),
        Err(e) => println!("   NO GPU ADAPTER ({e}): CPU reference only"),
    }
    println!(
        "   {:>6} {:>6} {:>12} {:>12} {:>9}",
        "words", "rounds", "cpu pages/s", "wgpu pages/s", "wgpu/cpu"
    );
    for r in &p.rows {
        let (gpu, ratio) = match &r.gpu_pps {
            None => ("-".to_string(), "-".to_string()),
            Some(Ok(g)) => (rate(*g), format!("{:.2}", g / r.cpu_pps)),
            Some(Err(e)) => (format!("ERROR: {e}"), "-".to_string()),
        };
        println!(
            "   {:>6} {:>6} {:>12} {:>12} {:>9}",
            r.words,
            r.rounds,
            rate(r.cpu_pps),
            gpu,
            ratio
        );
    }
}
