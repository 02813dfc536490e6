//! `harness render`: the experiment written out for an existing engine to
//! run, instead of run here. Today one target: Kubernetes (`k8s.rs` builds
//! the typed objects of `objects.rs`, `readme.rs` the steps beside them).

pub mod k8s;
mod objects;
mod readme;
pub mod seeds;

use crate::cli::K8sArgs;
use std::path::{Path, PathBuf};

/// Renders and writes every file; returns the paths written.
pub fn k8s_to_dir(args: &K8sArgs) -> Result<Vec<PathBuf>, k8s::RenderError> {
    let exp = crate::experiment::load(&args.experiment, args.quick)?;
    let opts = k8s::K8sOptions {
        namespace: args.namespace.clone(),
        agents: args.agents,
        image: args.image.clone(),
        redis_image: args.redis_image.clone(),
        quick: args.quick,
    };
    let seeds = match &args.seeds {
        Some(spec) => Some(seeds::SeedOptions {
            seeds: crate::experiment::parse_seeds(spec)
                .map_err(|e| k8s::RenderError::Environment(format!("--seeds {e}")))?,
            spec: spec.clone(),
            parallel: args.parallel,
            reader_image: args.reader_image.clone(),
        }),
        None => None,
    };
    let manifests = match &seeds {
        Some(s) => seeds::render(&exp, &opts, s)?,
        None => k8s::render(&exp, &opts)?,
    };
    std::fs::create_dir_all(&args.out).map_err(|error| k8s::RenderError::CreateDir {
        path: args.out.clone(),
        error,
    })?;
    let mut written = Vec::new();
    for m in &manifests {
        let path = args.out.join(&m.file);
        write(&path, &k8s::to_yaml(m)?)?;
        written.push(path);
    }
    let path = args.out.join("README.md");
    let text = match &seeds {
        Some(s) => seeds::readme(&exp, &opts, s),
        None => readme::readme(&exp, &opts, &manifests),
    };
    write(&path, &text)?;
    written.push(path);
    Ok(written)
}

fn write(path: &Path, text: &str) -> Result<(), k8s::RenderError> {
    std::fs::write(path, text).map_err(|error| k8s::RenderError::Write {
        path: path.to_path_buf(),
        error,
    })
}
