//! Which container images a containers run uses: the experiment's choice
//! (`containers.sut_image`, `containers.redis_image`), else the
//! environment's (`HARNESS_*_IMAGE`), else the local images that
//! `ci/images.sh` builds (nothing is ever pulled).

pub const DEFAULT_SUT_IMAGE: &str = "overload-harness/sut:local";
pub const DEFAULT_REDIS_IMAGE: &str = "overload-harness/redis:local";
pub const DEFAULT_HAPROXY_IMAGE: &str = "overload-harness/haproxy:local";
pub const DEFAULT_NGINX_IMAGE: &str = "overload-harness/nginx:local";

/// Which images to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerImages {
    pub sut: String,
    pub redis: String,
    /// A proxy gateway's images (`ci/images.sh` builds both where the
    /// binaries are installed).
    pub haproxy: String,
    pub nginx: String,
}

impl ContainerImages {
    /// The experiment's choice, else the environment's, else the local defaults.
    pub fn resolve(sut: Option<String>, redis: Option<String>) -> ContainerImages {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        ContainerImages {
            sut: sut
                .or_else(|| var("HARNESS_SUT_IMAGE"))
                .unwrap_or_else(|| DEFAULT_SUT_IMAGE.into()),
            redis: redis
                .or_else(|| var("HARNESS_REDIS_IMAGE"))
                .unwrap_or_else(|| DEFAULT_REDIS_IMAGE.into()),
            haproxy: var("HARNESS_HAPROXY_IMAGE").unwrap_or_else(|| DEFAULT_HAPROXY_IMAGE.into()),
            nginx: var("HARNESS_NGINX_IMAGE").unwrap_or_else(|| DEFAULT_NGINX_IMAGE.into()),
        }
    }

    /// The image a proxy gateway runs.
    pub(crate) fn proxy(&self, p: &sut::config::ProxyConfig) -> &str {
        match p {
            sut::config::ProxyConfig::Haproxy { .. } => &self.haproxy,
            sut::config::ProxyConfig::Nginx { .. } => &self.nginx,
        }
    }
}
