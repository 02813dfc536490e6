//! How the load agents come to be on this machine: child processes of this
//! harness (`harness agent FILE ...`) or containers on the variant's
//! network, each told where the coordinator is and its shard. Both die with
//! the run: children by `kill_on_drop` and `PR_SET_PDEATHSIG`, containers
//! when their handles drop.

use super::AgentError;

/// What every agent is told on its command line, children and containers
/// alike: where the coordinator is, its shard, and the run's seed and form.
pub(super) struct AgentArgs<'a> {
    url: &'a str,
    of: u32,
    seed: u64,
    quick: bool,
}

impl<'a> AgentArgs<'a> {
    pub(super) fn new(url: &'a str, of: u32, seed: u64, quick: bool) -> Self {
        AgentArgs {
            url,
            of,
            seed,
            quick,
        }
    }

    /// `--coordinator URL --shard I --of N --seed S [--quick]`.
    fn for_shard(&self, shard: u32) -> Vec<String> {
        let mut args: Vec<String> = [
            ("--coordinator", self.url.to_string()),
            ("--shard", shard.to_string()),
            ("--of", self.of.to_string()),
            ("--seed", self.seed.to_string()),
        ]
        .into_iter()
        .flat_map(|(flag, value)| [flag.to_string(), value])
        .collect();
        if self.quick {
            args.push("--quick".into());
        }
        args
    }
}

/// Starts the agents as containers of `image` on the variant's `network`,
/// the experiment file and the files it refers to copied in.
pub(super) async fn start_containers(
    args: &AgentArgs<'_>,
    image: &str,
    network: &str,
    experiment_text: &str,
    files: &[(String, Vec<u8>)],
) -> Result<Vec<testcontainers::ContainerAsync<testcontainers::GenericImage>>, AgentError> {
    let mut containers = Vec::new();
    for shard in 0..args.of {
        containers.push(
            crate::env::containers::start_agent(
                image,
                network,
                experiment_text,
                files,
                args.for_shard(shard),
                shard,
            )
            .await
            .map_err(|e| AgentError::Container(Box::new(e)))?,
        );
    }
    Ok(containers)
}

/// Starts the agents as child processes of this harness (`harness agent
/// FILE ...`), each killed with the coordinator.
pub(super) fn spawn_children(
    experiment: &std::path::Path,
    args: &AgentArgs,
) -> Result<Vec<Option<tokio::process::Child>>, AgentError> {
    let exe = std::env::current_exe().map_err(AgentError::Exe)?;
    let mut children = Vec::new();
    for shard in 0..args.of {
        let mut c = tokio::process::Command::new(&exe);
        c.arg("agent")
            .arg(experiment)
            .args(args.for_shard(shard))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true);
        // SAFETY: prctl and getppid are async-signal-safe; nothing
        // else runs between fork and exec.
        unsafe {
            c.pre_exec(|| {
                // Killed with the coordinator, even by SIGKILL.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || libc::getppid() == 1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        children.push(Some(c.spawn().map_err(AgentError::Spawn)?));
    }
    Ok(children)
}
